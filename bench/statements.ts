/**
 * What a durable step sends to its database, traced (not asserted): the
 * statements a step runs on SQLite, and the statements (round trips) and
 * commits a step sends to Postgres, for one run alone and for 32 runs at once
 * on one store (the workload of bench/steps.ts: T turns, two steps a turn).
 * Counted after each run's first turn, so a run's start (its lease, its first
 * row on the locked path) and the store's open are left out; the run-end
 * marker is in.
 *
 * - SQLite: every `run`/`get`/`all`/`iterate` of a prepared statement, by
 *   wrapping better-sqlite3's `prepare` in this process; BEGIN and COMMIT of
 *   a transaction are not statements here (better-sqlite3 runs them itself),
 *   so commits are the group commit's own count.
 * - Postgres: every query postgres.js sends (its `debug` hook), a statement
 *   each, BEGIN and COMMIT included; commits are the statements sent outside
 *   a transaction plus the COMMITs.
 *
 *   npx tsx bench/statements.ts [turns=20] [runs=32]
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { PostgresCheckpointer } from '../client/postgres/index.js';
import { ourAgent } from './lib/workload.js';

const T = Number(process.argv[2] ?? 20);
const RUNS = Number(process.argv[3] ?? 32);
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-statements-'));

/** Statements run through any better-sqlite3 statement prepared in this process from now on. */
const sqliteRuns = { n: 0 };
const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: Database.Database, source: string) {
  const st = prepare.call(this, source) as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const f = st[m].bind(st);
    st[m] = (...a: unknown[]) => {
      sqliteRuns.n++;
      return f(...a);
    };
  }
  return st as unknown as Database.Statement;
} as typeof prepare;

interface Count {
  statements: number;
  commits: number;
}

/**
 * `runs` runs of T turns at once on `store`; the count is taken between the
 * end of every run's first turn (a scripted pause point) and the end.
 */
async function traced(store: SqliteCheckpointer | PostgresCheckpointer, runs: number, count: () => Count) {
  let firstTurns = 0;
  let start: Count | null = null;
  const all = Array.from({ length: runs }, (_, r) => {
    let turns = 0;
    return ourAgent(
      store,
      T,
      200,
      () => {
        if (++turns === 1 && ++firstTurns === runs) start = count();
      },
      r,
    ).run('go', { executionId: `run-${r}` });
  });
  const done = await Promise.all(all);
  if (done.some((d) => d.status !== 'completed')) throw new Error('a run did not complete');
  const end = count();
  const steps = runs * (T - 1) * 2;
  const s = start ?? { statements: 0, commits: 0 };
  return { statements: (end.statements - s.statements) / steps, commits: (end.commits - s.commits) / steps };
}

async function sqlite(runs: number) {
  const store = new SqliteCheckpointer({ path: join(dir, `s${runs}.db`), synchronous: 'NORMAL' });
  try {
    return await traced(store, runs, () => ({
      statements: sqliteRuns.n,
      commits: store.groupCommitStats.batches,
    }));
  } finally {
    await store.close();
  }
}

async function pg(runs: number) {
  const sent = { statements: 0, commits: 0, inTx: new Set<number>() };
  const schema = `bench_statements_${process.pid}_${runs}`;
  const sql = postgres(PG, {
    max: 10,
    onnotice: () => {},
    fetch_types: false,
    debug: (connection: number, query: string) => {
      sent.statements++;
      const q = query.trim().toLowerCase();
      if (q === 'begin' || q.startsWith('begin ')) sent.inTx.add(connection);
      else if (q === 'commit' || q === 'rollback') {
        sent.inTx.delete(connection);
        if (q === 'commit') sent.commits++;
      } else if (!sent.inTx.has(connection)) sent.commits++;
    },
  });
  const store = new PostgresCheckpointer({ sql: sql as never, schema });
  await store.setup();
  try {
    return await traced(store, runs, () => ({ statements: sent.statements, commits: sent.commits }));
  } finally {
    await store.close();
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.end();
  }
}

const row = (label: string, c: { statements: number; commits: number }) =>
  `  ${label.padEnd(28)} ${c.statements.toFixed(2).padStart(6)} statements · ${c.commits.toFixed(3).padStart(6)} commits per step`;
console.log(`statements per durable step, traced (T=${T}, after each run's first turn, the run-end marker included)`);
const out: Record<string, Count> = {};
out['sqlite, one run'] = await sqlite(1);
out[`sqlite, ${RUNS} runs at once`] = await sqlite(RUNS);
let pgSkipped: string | null = null;
try {
  out['postgres, one run'] = await pg(1);
  out[`postgres, ${RUNS} runs at once`] = await pg(RUNS);
} catch (e) {
  pgSkipped = (e as Error).message;
}
for (const [k, v] of Object.entries(out)) console.log(row(k, v));
if (pgSkipped) console.log(`  postgres: not measured (${pgSkipped})`);
console.log(JSON.stringify({ bench: 'statements', T, runs: RUNS, perStep: out, date: new Date().toISOString() }));
rmSync(dir, { recursive: true, force: true });
