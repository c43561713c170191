/**
 * Many runs at once in one process, as a server or a batch evaluation runs
 * them: N concurrent runs of T turns (the workload of bench/steps.ts), every
 * commit durable (SQLite `synchronous=FULL`; Postgres with its default
 * `synchronous_commit=on`).
 *
 * - waymark: one store, the N runs started at once with `Promise.all`;
 * - LangGraph JS: N graphs invoked concurrently on one saver (its SQLite saver
 *   set to FULL, so both sides pay for the same durability);
 * - raw: the single-row commit rate of the same disk or server, measured in
 *   the same repetition (one row per transaction, one after another).
 *
 * Repetitions interleave the three; ratios are taken within a repetition.
 * Steps/s over wall time, steps per CPU-second of this process, and on SQLite
 * the disk's raw fsync rate of each repetition.
 *
 *   npx tsx bench/concurrent.ts [sqlite|postgres|both] [runs=32] [turns=20] [reps=5]
 */
import postgres from 'postgres';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { PostgresCheckpointer } from '../client/postgres/index.js';
import { ourAgent } from './lib/workload.js';
import { fmt, ratios, summary, timed } from './lib/stats.js';
import { fsyncRate } from './lib/fsync.js';
import { rateColumns, rateOf, rawPostgresCommits, rawSqliteCommits, type Rate } from './lib/raw-commit.js';
import { peerGraph, peerInstalled, peerPostgresSaver, peerRun, peerSqliteSaver, peerVersion } from './lib/langgraph.js';

const backends = (process.argv[2] ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [process.argv[2]];
/** WAYMARK_BENCH_SMOKE=1: tiny sizes, for the smoke test in npm test (correctness, not timing). */
const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const N = SMOKE ? 4 : Number(process.argv[3] ?? 32);
const T = SMOKE ? 3 : Number(process.argv[4] ?? 20);
const REPS = SMOKE ? 1 : Number(process.argv[5] ?? 5);
/**
 * Untimed repetitions of each side before the timed ones. V8 optimises a hot
 * path only after thousands of calls: waymark's steps/s rose 2× over its first
 * four repetitions of 1,280 steps (5,000–7,000 → 11,000–12,700 steps/s, then
 * flat): with one warm-up repetition, the timed ones measured half-optimised
 * code. A server or a batch evaluation runs at the steady state; both sides
 * get the same warm-up.
 */
const WARM = SMOKE ? 1 : Number(process.env.WAYMARK_BENCH_WARM ?? 5);
const P = 200;
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-concurrent-'));
const STEPS = N * T * 2;
let n = 0;

async function dropSchema(schema: string): Promise<void> {
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await sql.end();
}

/** One store (the pool at its default size on Postgres), N runs started at once. */
async function ours(backend: string): Promise<Rate> {
  const schema = `bench_cc_o${process.pid}_${++n}`;
  const store =
    backend === 'sqlite'
      ? new SqliteCheckpointer({ path: join(dir, `o${n}.db`), synchronous: 'FULL' })
      : new PostgresCheckpointer({ url: PG, schema });
  await store.setup();
  try {
    const t = await timed(() =>
      Promise.all(
        Array.from({ length: N }, (_, r) => ourAgent(store, T, P, undefined, r).run('go', { executionId: `run-${r}` })),
      ),
    );
    const bad = t.value.filter((r) => r.status !== 'completed');
    if (bad.length) throw new Error(`${bad.length} of ${N} runs ended ${bad[0].status}`);
    return rateOf(STEPS, t);
  } finally {
    await store.close();
    if (backend === 'postgres') await dropSchema(schema);
  }
}

/** One saver (SQLite at FULL; Postgres at its pool's default size), N graphs invoked at once. */
async function peer(backend: string): Promise<Rate> {
  const schema = `bench_cc_p${process.pid}_${++n}`;
  const saver =
    backend === 'sqlite' ? peerSqliteSaver(join(dir, `p${n}.db`), 'FULL') : await peerPostgresSaver(PG, schema);
  try {
    const t = await timed(() =>
      Promise.all(
        Array.from({ length: N }, (_, r) => peerRun(peerGraph(saver, T, P, undefined, false, r), `run-${r}`, T)),
      ),
    );
    return rateOf(STEPS, t);
  } finally {
    if (backend === 'sqlite') saver.db.close();
    else {
      await saver.end();
      await dropSchema(schema);
    }
  }
}

function raw(backend: string): Promise<Rate> {
  const rows = Math.min(2000, STEPS);
  return backend === 'sqlite' ? rawSqliteCommits(dir, rows, P + 400, 'FULL') : rawPostgresCommits(PG, rows, P + 400);
}

console.log(
  `${N} concurrent runs × ${T} turns in one process (${STEPS} steps, P=${P} bytes, pseudo-random text), every commit durable; ${WARM} untimed warm-up reps of each side, then ${REPS} reps interleaved: median [min–max], ratios within a repetition; "/CPU-s" is steps per CPU-second of this process`,
);
try {
  for (const backend of backends) {
    const sqlite = backend === 'sqlite';
    const m: Record<'ours' | 'peer' | 'raw', Rate[]> = { ours: [], peer: [], raw: [] };
    const fsyncs: number[] = [];
    // untimed warm-up of both sides, so neither is measured while its code is still cold
    for (let i = 0; i < WARM; i++) {
      await ours(backend);
      if (peerInstalled()) await peer(backend);
    }
    for (let i = 0; i < REPS; i++) {
      if (sqlite) fsyncs.push(fsyncRate(dir, SMOKE ? 20 : 300));
      m.raw.push(await raw(backend));
      m.ours.push(await ours(backend));
      if (peerInstalled()) m.peer.push(await peer(backend));
    }
    const line = {
      bench: 'concurrent',
      backend,
      runs: N,
      T,
      P,
      reps: REPS,
      ...rateColumns(m, ['ours', 'peer', 'raw']),
      ofRaw: ratios(
        m.ours.map((x) => x.rate),
        m.raw.map((x) => x.rate),
      ),
      vsPeer: ratios(
        m.ours.map((x) => x.rate),
        m.peer.map((x) => x.rate),
      ),
      ...(sqlite ? { fsync: summary(fsyncs) } : {}),
    };
    const durable = sqlite ? 'synchronous=FULL' : 'synchronous_commit=on';
    console.log(`${backend} (${durable})${sqlite ? `, raw fsync rate ${fmt(line.fsync)} /s` : ''}`);
    const label = (s: string) => `  ${s.padEnd(44)}`;
    console.log(
      `${label(`waymark, one store, ${N} runs at once`)}${fmt(line.ours)} steps/s · ${fmt(line.oursCpu)} /CPU-s`,
    );
    console.log(
      `${label(`LangGraph JS, one saver, ${N} graphs at once`)}${peerInstalled() ? `${fmt(line.peer)} steps/s · ${fmt(line.peerCpu)} /CPU-s` : 'not measured (bench/peers/langgraph is not installed)'}`,
    );
    console.log(
      `${label('raw single-row commits, one at a time')}${fmt(line.raw)} rows/s · ${fmt(line.rawCpu)} /CPU-s`,
    );
    console.log(
      `  → ${fmt(line.ofRaw, 2, '×')} the raw single-row commit rate, ${fmt(line.vsPeer, 1, '×')} LangGraph${sqlite ? ` (raw fsync rate ${fmt(line.fsync)} /s)` : ''}`,
    );
    console.log(
      JSON.stringify({
        ...line,
        cores: cpus().length,
        node: process.version,
        peerPackage: peerInstalled() ? `@langchain/langgraph ${peerVersion()}` : null,
        date: new Date().toISOString(),
      }),
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
