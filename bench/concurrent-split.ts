/**
 * Where a concurrent step's time goes, by switching parts off: the workload of
 * bench/concurrent.ts (N runs × T turns at once on one SQLite store, compiled,
 * warm) with the store at its default (synchronous=FULL, outbox on) and three
 * variants, interleaved in every repetition, each against the default of the
 * same repetition:
 *
 * - NORMAL: no fsync at commit (the share of a step spent waiting for the disk);
 * - no outbox: the store's `outbox: false` (what queueing each checkpoint for a
 *   plane costs: its place in the drain's order and the unsent-rows index, in
 *   the batch's statements and its commit's pages);
 * - NORMAL, no outbox: both.
 *
 * (Until schema 7 a fifth argument `indexes` measured the outbox table with
 * fewer indexes, bench/PROFILES.md 2026-12-05 (night); a checkpoint's event
 * is now its own row's, client/sqlite/outbox.ts.)
 *
 * Steps/s and steps per CPU-second of this process (each also as a ratio to
 * the default's, within a repetition), commits (group-commit batches) per
 * repetition, the share of the repetition's wall time and of its CPU time
 * spent inside the batches' commits (the statements, the COMMIT and its fsync:
 * what a writer thread could take off the agents' thread), and the disk's raw
 * fsync rate. A profiling aid for issue 19, not one of the targets' benches.
 *
 *   node .bench-build/bench/concurrent-split.js [runs=32] [turns=20] [reps=5]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer, type SqliteSynchronous } from '../client/sqlite/index.js';
import { ourAgent } from './lib/workload.js';
import { fmt, ratios, summary, timed } from './lib/stats.js';
import { fsyncRate } from './lib/fsync.js';
import { rateOf, type Rate } from './lib/raw-commit.js';

/** WAYMARK_BENCH_SMOKE=1: tiny sizes, for the smoke test in npm test (correctness, not timing). */
const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const N = SMOKE ? 4 : Number(process.argv[2] ?? 32);
const T = SMOKE ? 3 : Number(process.argv[3] ?? 20);
const REPS = SMOKE ? 1 : Number(process.argv[4] ?? 5);
/** Untimed repetitions of every variant first: V8 optimises the hot path only after thousands of steps (bench/concurrent.ts). */
const WARM = SMOKE ? 1 : Number(process.env.WAYMARK_BENCH_WARM ?? 5);
const P = 200;
const STEPS = N * T * 2;
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-split-'));
let n = 0;

interface Variant {
  name: string;
  synchronous: SqliteSynchronous;
  outbox: boolean;
}
const VARIANTS: Variant[] = [
  { name: 'default (FULL, outbox)', synchronous: 'FULL', outbox: true },
  { name: 'NORMAL, outbox', synchronous: 'NORMAL', outbox: true },
  { name: 'FULL, no outbox', synchronous: 'FULL', outbox: false },
  { name: 'NORMAL, no outbox', synchronous: 'NORMAL', outbox: false },
];

type Measured = Rate & { commits: number; commitWall: number; commitCpu: number };

/**
 * Time inside each batch's commit, wall and CPU. The bench reaches into the
 * store's private transaction functions on purpose (a profiling aid): timing
 * them in the store itself would put two getrusage calls on every put.
 */
function timeCommits(store: SqliteCheckpointer): { wallMs: number; cpuMs: number } {
  const spent = { wallMs: 0, cpuMs: 0 };
  const inner = store as unknown as { tx: { commitBatch: { immediate(jobs: unknown[]): unknown } } };
  const commit = inner.tx.commitBatch;
  inner.tx = {
    ...inner.tx,
    commitBatch: {
      immediate: (jobs) => {
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        try {
          return commit.immediate(jobs);
        } finally {
          const c = process.cpuUsage(c0);
          spent.cpuMs += (c.user + c.system) / 1000;
          spent.wallMs += performance.now() - t0;
        }
      },
    },
  };
  return spent;
}

async function once(v: Variant): Promise<Measured> {
  const store = new SqliteCheckpointer({ path: join(dir, `s${++n}.db`), synchronous: v.synchronous, outbox: v.outbox });
  try {
    const spent = timeCommits(store);
    const t = await timed(() =>
      Promise.all(
        Array.from({ length: N }, (_, r) => ourAgent(store, T, P, undefined, r).run('go', { executionId: `run-${r}` })),
      ),
    );
    const bad = t.value.filter((r) => r.status !== 'completed');
    if (bad.length) throw new Error(`${bad.length} of ${N} runs ended ${bad[0].status}`);
    return {
      ...rateOf(STEPS, t),
      commits: store.groupCommitStats.batches,
      commitWall: spent.wallMs / 1000 / t.secs,
      commitCpu: spent.cpuMs / 1000 / t.cpuSecs,
    };
  } finally {
    await store.close();
  }
}

console.log(
  `${N} concurrent runs × ${T} turns on one SQLite store (${STEPS} steps, P=${P}), ${WARM} untimed reps of each variant, then ${REPS} interleaved: median [min–max]; ratios against the default within a repetition`,
);
try {
  for (let i = 0; i < WARM; i++) for (const v of VARIANTS) await once(v);
  const m = VARIANTS.map(() => [] as Measured[]);
  const fsyncs: number[] = [];
  for (let i = 0; i < REPS; i++) {
    fsyncs.push(fsyncRate(dir, SMOKE ? 20 : 300));
    // a different variant goes first in each repetition, so none always follows the fsync probe
    for (let k = 0; k < VARIANTS.length; k++) {
      const j = (k + i) % VARIANTS.length;
      m[j].push(await once(VARIANTS[j]));
    }
  }
  const base = m[0].map((x) => x.rate);
  const baseCpu = m[0].map((x) => x.cpu);
  console.log(`raw fsync rate ${fmt(summary(fsyncs))} /s`);
  for (const [j, v] of VARIANTS.entries()) {
    const rate = m[j].map((x) => x.rate);
    const line = {
      bench: 'concurrent-split',
      variant: v.name,
      runs: N,
      T,
      steps: summary(rate),
      cpu: summary(m[j].map((x) => x.cpu)),
      commits: summary(m[j].map((x) => x.commits)),
      commitWallShare: summary(m[j].map((x) => x.commitWall)),
      commitCpuShare: summary(m[j].map((x) => x.commitCpu)),
      vsDefault: ratios(rate, base),
      cpuVsDefault: ratios(
        m[j].map((x) => x.cpu),
        baseCpu,
      ),
      fsync: summary(fsyncs),
      date: new Date().toISOString(),
    };
    console.log(
      `  ${v.name.padEnd(24)}${fmt(line.steps)} steps/s · ${fmt(line.cpu)} /CPU-s · ${fmt(line.commits)} commits · in commits: ${fmt(line.commitWallShare, 0, '%')} of wall, ${fmt(line.commitCpuShare, 0, '%')} of CPU${j ? ` → ${fmt(line.vsDefault, 2, '×')} the default's steps/s, ${fmt(line.cpuVsDefault, 2, '×')} its steps/CPU-s` : ''}`,
    );
    console.log(JSON.stringify(line));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
