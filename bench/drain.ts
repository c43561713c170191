/**
 * Drain: a backlog of N rows (pseudo-random message text) in a SQLite store
 * drains to a plane over loopback, next to the raw multi-row insert of the
 * same rows, in one run; repetitions interleaved (each drains a fresh copy of
 * the same backlog), the share of raw taken within a repetition, and rows per
 * CPU-second of this process (client and in-process plane) beside rows/s; the
 * plane's ingest alone is the plane's code only.
 *
 *   npx tsx bench/drain.ts [rows=20000] [postgres|pglite|both] [reps=5]
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import pino from 'pino';
import { connectPlane } from '../client/index.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { createKey } from '../plane/auth.js';
import { openPlaneDatabase } from '../plane/db/open.js';
import { startPlane } from '../plane/server.js';
import { ingestBatch } from '../plane/ingest.js';
import { loadConfig } from '../plane/config.js';
import type { OutboxEvent } from '../shared/rows.js';
import { rawPglite, rawPostgres } from './lib/raw-insert.js';
import { fmt, ratios, summary, timed, type Summary } from './lib/stats.js';
import { putBacklog } from './lib/backlog.js';

const N = Number(process.argv[2] ?? 20000);
const which = process.argv[3] ?? 'both';
const REPS = Number(process.argv[4] ?? (process.env.WAYMARK_BENCH_SMOKE === '1' ? 1 : 5));
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-drain-'));

/** The backlog, written once into `path` and closed; each repetition drains a copy. */
async function backlog(path: string): Promise<void> {
  const store = new SqliteCheckpointer({ path, synchronous: 'NORMAL' });
  await putBacklog(store, N, 3);
  await store.close();
}

let copies = 0;
function copyOf(path: string): SqliteCheckpointer {
  const to = join(dir, `copy-${++copies}.db`);
  copyFileSync(path, to);
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${to}-wal`);
  return new SqliteCheckpointer({ path: to, synchronous: 'NORMAL' });
}

async function events(store: SqliteCheckpointer): Promise<OutboxEvent[]> {
  return (await store.fetchUnsynced({ limit: N, maxBytes: 1e12 })).map((e) => e.event!);
}

async function drain(
  store: SqliteCheckpointer,
  databaseUrl?: string,
): Promise<{ rowsPerSec: number; rowsPerCpuSec: number; bytesPerSec: number }> {
  const database = await openPlaneDatabase(databaseUrl ? { databaseUrl } : { dataDir: 'memory://' });
  const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://' }), {
    database,
    logger: pino({ level: 'silent' }),
  });
  const { key } = await createKey(database.db, { createProject: true, project: 'bench', scopes: ['ingest'] });
  const { pendingBytes } = await store.outboxStats();
  const replica = connectPlane(store, { url: plane.url, apiKey: key, pollMs: 0 });
  const t = await timed(() => replica.flush({ timeoutMs: 600_000 }));
  const s = t.value;
  if (s.pendingRows !== 0 || s.rowsSynced !== N) throw new Error(`drain incomplete: ${JSON.stringify(s)}`);
  await replica.stop();
  await plane.close();
  await database.close();
  return { rowsPerSec: N / t.secs, rowsPerCpuSec: N / t.cpuSecs, bytesPerSec: pendingBytes / t.secs };
}

/** The plane's ingest transaction on its own: validation, hashing, the inserts, in 500-row batches. */
async function ingestAlone(
  rows: OutboxEvent[],
  databaseUrl: string,
): Promise<{ rowsPerSec: number; rowsPerCpuSec: number }> {
  const database = await openPlaneDatabase({ databaseUrl });
  const { projectId } = await createKey(database.db, { createProject: true, project: 'bench', scopes: ['ingest'] });
  const wire = rows.map((e) => JSON.parse(JSON.stringify(e)) as unknown);
  const t = await timed(async () => {
    for (let i = 0; i < wire.length; i += 500) {
      const r = await ingestBatch(database.db, projectId, 'bench', undefined, wire.slice(i, i + 500));
      if (r.accepted !== Math.min(500, wire.length - i)) throw new Error(`ingestBatch accepted ${r.accepted}`);
    }
  });
  await database.close();
  return { rowsPerSec: wire.length / t.secs, rowsPerCpuSec: wire.length / t.cpuSecs };
}

const out: Record<string, number[]> = {};
const push = (k: string, v: number) => (out[k] ??= []).push(v);
const targets = (which === 'both' ? ['postgres', 'pglite'] : [which]).filter((t) => t === 'postgres' || t === 'pglite');
const paths: Record<string, string> = {};
const rows: Record<string, OutboxEvent[]> = {};
for (const target of targets) {
  paths[target] = join(dir, `${target}.db`);
  await backlog(paths[target]);
  const store = copyOf(paths[target]);
  rows[target] = await events(store);
  await store.close();
}
const admin = targets.includes('postgres') ? postgres(PG, { max: 1, onnotice: () => {} }) : null;
const name = `waymark_bench_drain_${process.pid}`;
const url = new URL(PG);
url.pathname = `/${name}`;
for (let rep = 0; rep < REPS; rep++) {
  if (admin) {
    push('raw postgres insert', await rawPostgres(PG, rows.postgres, 500));
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const store = copyOf(paths.postgres);
    const d = await drain(store, url.toString());
    await store.close();
    push('drain to plane (postgres)', d.rowsPerSec);
    push('drain rows/CPU-s (postgres)', d.rowsPerCpuSec);
    push('drain bytes/s (postgres)', d.bytesPerSec);
    await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
    // where the time goes: the plane's own ingest of the same batches, no HTTP, no client (a fresh database)
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const alone = await ingestAlone(rows.postgres, url.toString());
    push('plane ingestBatch alone (postgres)', alone.rowsPerSec);
    push('ingestBatch rows/CPU-s (postgres)', alone.rowsPerCpuSec);
    await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
  }
  if (targets.includes('pglite')) {
    push('raw pglite insert', await rawPglite(rows.pglite, 500));
    const store = copyOf(paths.pglite);
    const d = await drain(store);
    await store.close();
    push('drain to plane (pglite)', d.rowsPerSec);
    push('drain rows/CPU-s (pglite)', d.rowsPerCpuSec);
    push('drain bytes/s (pglite)', d.bytesPerSec);
  }
}
await admin?.end();
rmSync(dir, { recursive: true, force: true });
const med: Record<string, Summary> = Object.fromEntries(Object.entries(out).map(([k, v]) => [k, summary(v)]));
// shares of the raw insert rate, within each repetition
const share: Record<string, Summary | null> = {
  'drain/raw (postgres)': ratios(out['drain to plane (postgres)'], out['raw postgres insert']),
  'ingestBatch alone/raw (postgres)': ratios(out['plane ingestBatch alone (postgres)'], out['raw postgres insert']),
  'drain/raw (pglite)': ratios(out['drain to plane (pglite)'], out['raw pglite insert']),
};
console.log(
  `drain of ${N} rows, pseudo-random text, ${REPS} reps interleaved: median [min–max]; "rows/CPU-s" is per CPU-second of this process (client + in-process plane; the plane's code alone for ingestBatch)`,
);
for (const [k, v] of Object.entries(med))
  console.log(
    `${k.padEnd(36)} ${fmt(v).padStart(24)}${k.includes('bytes') ? ' B/s' : k.includes('CPU') ? '' : ' rows/s'}`,
  );
if (share['drain/raw (postgres)']) {
  console.log(`postgres: drain is ${fmt(share['drain/raw (postgres)'], 2)} of the raw insert rate`);
  console.log(
    `postgres: the plane's ingest alone (no HTTP, no client) is ${fmt(share['ingestBatch alone/raw (postgres)'], 2)} of it`,
  );
}
if (share['drain/raw (pglite)'])
  console.log(`pglite: drain is ${fmt(share['drain/raw (pglite)'], 2)} of the raw insert rate`);
console.log(
  JSON.stringify({
    bench: 'drain',
    rows: N,
    reps: REPS,
    ...Object.fromEntries(Object.entries(med).map(([k, v]) => [k, v.median])),
    ranges: med,
    share,
    date: new Date().toISOString(),
  }),
);
