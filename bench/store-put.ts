/**
 * put() rows/s on each backend next to the raw limit measured in the same
 * repetition: single-row insert transactions of the same row size with the
 * same settings. Pseudo-random message text; repetitions interleaved, ratios
 * taken within a repetition; rows per CPU-second of this process beside rows/s,
 * and the disk's raw fsync rate beside the SQLite ratios.
 *
 *   npx tsx bench/store-put.ts [rows=2000] [reps=5]
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { PostgresCheckpointer } from '../client/postgres/index.js';
import type { Checkpointer } from '../client/index.js';
import { fmt, ratios, summary, timed } from './lib/stats.js';
import { fsyncRate } from './lib/fsync.js';
import { rateOf, type Rate } from './lib/raw-commit.js';
import { randomText } from './lib/text.js';

const N = Number(process.argv[2] ?? 2000);
const REPS = Number(process.argv[3] ?? (process.env.WAYMARK_BENCH_SMOKE === '1' ? 1 : 5));
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-put-'));
const msg = (i: number) => ({ role: 'assistant', content: randomText(200, 11, i), i });
let n = 0;

async function ours(store: Checkpointer): Promise<Rate> {
  let messages: unknown[] = [];
  const t = await timed(async () => {
    for (let i = 0; i < N; i++) {
      // runs of 400 rows, each row appending one 200-byte message (as the runtime does)
      messages = i % 400 === 0 ? [msg(i)] : [...messages, msg(i)];
      await store.put({
        executionId: `e${Math.floor(i / 400)}`,
        nodeId: `turn:${i}`,
        turn: i,
        step: 'llm_call',
        status: 'completed',
        agentPath: 'agent:b',
        state: { messages: messages as never, turn: i },
      });
    }
  });
  return rateOf(N, t);
}

/** A delta row's body as the store writes it, one per message. */
const bodies = () => Array.from({ length: 64 }, (_, i) => JSON.stringify({ v: 1, kind: 'delta', append: [msg(i)] }));

async function rawSqlite(sync: string): Promise<Rate> {
  const db = new Database(join(dir, `raw-${sync}-${++n}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync}`);
  db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, e TEXT, seq INTEGER, body TEXT)');
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?)');
  const body = bodies();
  const t = await timed(() => {
    for (let i = 0; i < N; i++) db.transaction(() => ins.run(`id${i}`, 'e', i, body[i % 64]))();
  });
  db.close();
  return rateOf(N, t);
}

async function rawPg(): Promise<Rate> {
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  await sql`DROP TABLE IF EXISTS bench_raw_put`;
  await sql`CREATE TABLE bench_raw_put (id text PRIMARY KEY, e text, seq int, body text)`;
  const body = bodies();
  const t = await timed(async () => {
    for (let i = 0; i < N; i++)
      await sql.begin((tx) => tx`INSERT INTO bench_raw_put VALUES (${`id${i}`}, 'e', ${i}, ${body[i % 64]})`);
  });
  await sql`DROP TABLE bench_raw_put`;
  await sql.end();
  return rateOf(N, t);
}

async function oursPg(): Promise<Rate> {
  const schema = `bench_put_${process.pid}_${++n}`;
  const pg = new PostgresCheckpointer({ url: PG, schema, max: 2 });
  await pg.setup();
  const r = await ours(pg);
  await pg.close();
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  await sql.unsafe(`DROP SCHEMA "${schema}" CASCADE`);
  await sql.end();
  return r;
}

const out: Record<string, Rate[]> = {};
const fsyncs: number[] = [];
const push = (k: string, r: Rate) => (out[k] ??= []).push(r);
for (let rep = 0; rep < REPS; rep++) {
  fsyncs.push(fsyncRate(dir, 300));
  for (const sync of ['FULL', 'NORMAL'] as const) {
    push(`raw sqlite ${sync}`, await rawSqlite(sync));
    const s = new SqliteCheckpointer({ path: join(dir, `ours-${sync}-${++n}.db`), synchronous: sync });
    push(`waymark sqlite ${sync}`, await ours(s));
    await s.close();
  }
  push('raw postgres', await rawPg());
  push('waymark postgres', await oursPg());
}
rmSync(dir, { recursive: true, force: true });
const fsync = summary(fsyncs);
const rates = Object.fromEntries(Object.entries(out).map(([k, v]) => [k, summary(v.map((x) => x.rate))]));
const cpu = Object.fromEntries(Object.entries(out).map(([k, v]) => [k, summary(v.map((x) => x.cpu))]));
const ofRaw = (ours: string, raw: string) =>
  ratios(
    out[ours].map((x) => x.rate),
    out[raw].map((x) => x.rate),
  );
const shares = {
  sqliteFull: ofRaw('waymark sqlite FULL', 'raw sqlite FULL'),
  sqliteNormal: ofRaw('waymark sqlite NORMAL', 'raw sqlite NORMAL'),
  postgres: ofRaw('waymark postgres', 'raw postgres'),
};
console.log(
  `put() ${N} rows × ${REPS} reps interleaved, pseudo-random text: median [min–max]; "/CPU-s" is rows per CPU-second of this process`,
);
for (const k of Object.keys(out))
  console.log(`${k.padEnd(24)} ${fmt(rates[k]).padStart(22)} rows/s · ${fmt(cpu[k])} /CPU-s`);
console.log(
  `share of raw: sqlite FULL ${fmt(shares.sqliteFull, 2)}, NORMAL ${fmt(shares.sqliteNormal, 2)} (raw fsync rate ${fmt(fsync)} /s), postgres ${fmt(shares.postgres, 2)}`,
);
console.log(
  JSON.stringify({
    bench: 'store-put',
    rows: N,
    reps: REPS,
    rates,
    cpu,
    ofRaw: shares,
    fsync,
    date: new Date().toISOString(),
  }),
);
