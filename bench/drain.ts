/**
 * Drain: a backlog of N rows in a SQLite store drains to a plane over
 * loopback, next to the raw multi-row insert of the same rows, in one run.
 *
 *   npx tsx bench/drain.ts [rows=20000] [postgres|pglite|both]
 */
import { mkdtempSync, rmSync } from 'node:fs';
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

const N = Number(process.argv[2] ?? 20000);
const which = process.argv[3] ?? 'both';
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-drain-'));

async function backlog(path: string): Promise<SqliteCheckpointer> {
  const store = new SqliteCheckpointer({ path, synchronous: 'NORMAL' });
  let messages: unknown[] = [];
  for (let i = 0; i < N; i++) {
    messages = i % 100 === 0 ? [{ role: 'user', content: 'u'.repeat(200) }] : [...messages, { role: 'assistant', content: 'a'.repeat(200) }];
    await store.put({ executionId: `run-${Math.floor(i / 100)}`, nodeId: `turn:${i % 100}`, turn: i % 100, step: 'llm_call', status: 'completed', agentPath: 'agent:b', state: { messages: messages as never } });
  }
  return store;
}

async function events(store: SqliteCheckpointer): Promise<OutboxEvent[]> {
  return (await store.fetchUnsynced({ limit: N, maxBytes: 1e12 })).map((e) => e.event!);
}

async function drain(store: SqliteCheckpointer, databaseUrl?: string): Promise<{ rowsPerSec: number; bytesPerSec: number }> {
  const database = await openPlaneDatabase(databaseUrl ? { databaseUrl } : { dataDir: 'memory://' });
  const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: dir }), { database, logger: pino({ level: 'silent' }) });
  const { key } = await createKey(database.db, { createProject: true, project: 'bench', scopes: ['ingest'] });
  const { pendingBytes } = await store.outboxStats();
  const t0 = performance.now();
  const replica = connectPlane(store, { url: plane.url, apiKey: key, pollMs: 0 });
  const s = await replica.flush({ timeoutMs: 600_000 });
  const secs = (performance.now() - t0) / 1000;
  if (s.pendingRows !== 0 || s.rowsSynced !== N) throw new Error(`drain incomplete: ${JSON.stringify(s)}`);
  await replica.stop();
  await plane.close();
  await database.close();
  return { rowsPerSec: N / secs, bytesPerSec: pendingBytes / secs };
}

/** The plane's ingest transaction on its own: validation, hashing, the inserts, in 500-row batches. */
async function ingestAlone(rows: OutboxEvent[], databaseUrl: string): Promise<number> {
  const database = await openPlaneDatabase({ databaseUrl });
  const { projectId } = await createKey(database.db, { createProject: true, project: 'bench', scopes: ['ingest'] });
  const wire = rows.map((e) => JSON.parse(JSON.stringify(e)) as unknown);
  const t0 = performance.now();
  for (let i = 0; i < wire.length; i += 500) {
    const r = await ingestBatch(database.db, projectId, 'bench', undefined, wire.slice(i, i + 500));
    if (r.accepted !== Math.min(500, wire.length - i)) throw new Error(`ingestBatch accepted ${r.accepted}`);
  }
  const rate = wire.length / ((performance.now() - t0) / 1000);
  await database.close();
  return rate;
}

const out: Record<string, number> = {};
if (which !== 'pglite') {
  const store = await backlog(join(dir, 'pg.db'));
  const rows = await events(store);
  out['raw postgres insert'] = await rawPostgres(PG, rows, 500);
  const admin = postgres(PG, { max: 1, onnotice: () => {} });
  const name = `waymark_bench_drain_${process.pid}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  const d = await drain(store, url.toString());
  out['drain to plane (postgres)'] = d.rowsPerSec;
  out['drain bytes/s (postgres)'] = d.bytesPerSec;
  await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
  // where the time goes: the plane's own ingest of the same batches, no HTTP, no client (a fresh database)
  await admin.unsafe(`CREATE DATABASE ${name}`);
  out['plane ingestBatch alone (postgres)'] = await ingestAlone(rows, url.toString());
  await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`);
  await admin.end();
  await store.close();
}
if (which !== 'postgres') {
  const store = await backlog(join(dir, 'pglite.db'));
  out['raw pglite insert'] = await rawPglite(await events(store), 500);
  const d = await drain(store);
  out['drain to plane (pglite)'] = d.rowsPerSec;
  out['drain bytes/s (pglite)'] = d.bytesPerSec;
  await store.close();
}
rmSync(dir, { recursive: true, force: true });
for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(28)} ${Math.round(v).toString().padStart(9)}${k.includes('bytes') ? ' B/s' : ' rows/s'}`);
if (out['raw postgres insert']) {
  console.log(`postgres: drain is ${(out['drain to plane (postgres)'] / out['raw postgres insert']).toFixed(2)} of the raw insert rate`);
  console.log(`postgres: the plane's ingest alone (no HTTP, no client) is ${(out['plane ingestBatch alone (postgres)'] / out['raw postgres insert']).toFixed(2)} of it`);
}
if (out['raw pglite insert']) console.log(`pglite: drain is ${(out['drain to plane (pglite)'] / out['raw pglite insert']).toFixed(2)} of the raw insert rate`);
console.log(JSON.stringify({ bench: 'drain', rows: N, ...out, date: new Date().toISOString() }));
