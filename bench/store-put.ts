/**
 * put() rows/s on each backend next to the raw limit measured in the same run:
 * single-row insert transactions of the same row size with the same settings.
 *
 *   npx tsx bench/store-put.ts [rows=2000]
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { PostgresCheckpointer } from '../client/postgres/index.js';
import type { Checkpointer } from '../client/index.js';

const N = Number(process.argv[2] ?? 2000);
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-put-'));
const msg = (i: number) => ({ role: 'assistant', content: 'x'.repeat(200), i });

async function ours(store: Checkpointer): Promise<number> {
  let messages: unknown[] = [];
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    // runs of 400 rows, each row appending one 200-byte message (as the runtime does)
    messages = i % 400 === 0 ? [msg(i)] : [...messages, msg(i)];
    await store.put({ executionId: `e${Math.floor(i / 400)}`, nodeId: `turn:${i}`, turn: i, step: 'llm_call', status: 'completed', agentPath: 'agent:b', state: { messages: messages as never, turn: i } });
  }
  return N / ((performance.now() - t0) / 1000);
}

function rawSqlite(sync: string): number {
  const db = new Database(join(dir, `raw-${sync}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync}`);
  db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, e TEXT, seq INTEGER, body TEXT)');
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?)');
  const body = JSON.stringify({ v: 1, kind: 'delta', append: [msg(0)] });
  const t0 = performance.now();
  for (let i = 0; i < N; i++) db.transaction(() => ins.run(`id${i}`, 'e', i, body))();
  const r = N / ((performance.now() - t0) / 1000);
  db.close();
  return r;
}

async function rawPg(): Promise<number> {
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  await sql`DROP TABLE IF EXISTS bench_raw_put`;
  await sql`CREATE TABLE bench_raw_put (id text PRIMARY KEY, e text, seq int, body text)`;
  const body = JSON.stringify({ v: 1, kind: 'delta', append: [msg(0)] });
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await sql.begin((tx) => tx`INSERT INTO bench_raw_put VALUES (${`id${i}`}, 'e', ${i}, ${body})`);
  const r = N / ((performance.now() - t0) / 1000);
  await sql`DROP TABLE bench_raw_put`;
  await sql.end();
  return r;
}

const out: Record<string, number> = {};
for (const sync of ['FULL', 'NORMAL'] as const) {
  out[`raw sqlite ${sync}`] = rawSqlite(sync);
  const s = new SqliteCheckpointer({ path: join(dir, `ours-${sync}.db`), synchronous: sync });
  out[`waymark sqlite ${sync}`] = await ours(s);
  await s.close();
}
out['raw postgres'] = await rawPg();
const pg = new PostgresCheckpointer({ url: PG, schema: `bench_put_${process.pid}`, max: 2 });
await pg.setup();
out['waymark postgres'] = await ours(pg);
const sql = postgres(PG, { max: 1, onnotice: () => {} });
await sql.unsafe(`DROP SCHEMA "bench_put_${process.pid}" CASCADE`);
await sql.end();
await pg.close();
rmSync(dir, { recursive: true, force: true });
for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(24)} ${Math.round(v).toString().padStart(7)} rows/s`);
console.log(`ratios: sqlite FULL ${(out['waymark sqlite FULL'] / out['raw sqlite FULL']).toFixed(2)}, NORMAL ${(out['waymark sqlite NORMAL'] / out['raw sqlite NORMAL']).toFixed(2)}, postgres ${(out['waymark postgres'] / out['raw postgres']).toFixed(2)} of raw`);
console.log(JSON.stringify({ bench: 'store-put', rows: N, ...out, date: new Date().toISOString() }));
