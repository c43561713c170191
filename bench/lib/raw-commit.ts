/**
 * The raw single-row commit rate a durable step is compared with: one INSERT
 * of a row of the same size per transaction, at the same durability setting
 * (SQLite), or one autocommitted INSERT per row (Postgres: a transaction in one
 * round trip, the least a durable write costs). Pseudo-random row text.
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { join } from 'node:path';
import { randomText } from './text.js';
import { summary, timed, type Summary } from './stats.js';

/** Rows (steps) per wall second, and per CPU-second of this process. */
export interface Rate {
  rate: number;
  cpu: number;
}

export const rateOf = (steps: number, t: { secs: number; cpuSecs: number }): Rate => ({
  rate: steps / t.secs,
  cpu: steps / t.cpuSecs,
});

let n = 0;

/** SQLite in WAL mode, a fresh file in `dir`; with `dir` null, an in-memory database (no I/O: the CPU floor). */
export async function rawSqliteCommits(
  dir: string | null,
  rows: number,
  bytes: number,
  synchronous: 'FULL' | 'NORMAL' = 'FULL',
): Promise<Rate> {
  const bodies = Array.from({ length: 64 }, (_, i) => randomText(bytes, 7, i));
  const db = new Database(dir === null ? ':memory:' : join(dir, `raw-${process.pid}-${++n}.db`));
  if (dir !== null) {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
  }
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, e TEXT, seq INTEGER, body TEXT)');
  const ins = db.prepare('INSERT INTO t (e, seq, body) VALUES (?, ?, ?)');
  const t = await timed(() => {
    for (let i = 0; i < rows; i++) db.transaction(() => ins.run('e', i, bodies[i % 64]))();
  });
  db.close();
  return rateOf(rows, t);
}

/** Postgres at `url`, a table created and dropped for the measurement. */
export async function rawPostgresCommits(url: string, rows: number, bytes: number): Promise<Rate> {
  const bodies = Array.from({ length: 64 }, (_, i) => randomText(bytes, 7, i));
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const table = `bench_raw_${process.pid}_${++n}`;
  await sql.unsafe(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, e text, seq int, body text)`);
  try {
    const t = await timed(async () => {
      for (let i = 0; i < rows; i++)
        await sql.unsafe(`INSERT INTO ${table} (e, seq, body) VALUES ('e', $1, $2)`, [i, bodies[i % 64]]);
    });
    return rateOf(rows, t);
  } finally {
    await sql.unsafe(`DROP TABLE ${table}`);
    await sql.end();
  }
}

/**
 * The columns of a bench's JSON line for each measured side in `m`: `k` the
 * steps/s summary and `kCpu` the steps per CPU-second summary (null when the
 * side was not measured, e.g. the peer is not installed).
 */
export function rateColumns<K extends string>(
  m: Record<K, Rate[]>,
  keys: readonly K[],
): Record<K | `${K}Cpu`, Summary | null> {
  const out = {} as Record<K | `${K}Cpu`, Summary | null>;
  for (const k of keys) {
    out[k] = m[k].length ? summary(m[k].map((x) => x.rate)) : null;
    out[`${k}Cpu`] = m[k].length ? summary(m[k].map((x) => x.cpu)) : null;
  }
  return out;
}
