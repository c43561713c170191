/**
 * CPU per durable step, in one process: R runs of T turns of the steps
 * workload on a SQLite store at `synchronous=NORMAL` (where no fsync hides the
 * CPU), interleaved with the raw single-row NORMAL commit rate of a row of the
 * same size. Prints steps/s, steps per CPU-second and the share of raw NORMAL,
 * per repetition and as median [min–max]. Run it under `node --cpu-prof` to
 * see where a step's CPU goes (`bench/profile-summary.ts` summarises the
 * profile).
 *
 *   npx tsx bench/profile-steps.ts [R=50] [T=20] [reps=3] [file|memory]
 *
 * `memory`: the store on `:memory:` (no WAL, no I/O), for a profile of the CPU
 * alone; the raw rate is then of a `:memory:` table too.
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-steps.ts 100 20 1
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { ourAgent } from './lib/workload.js';
import { fmt, ratios, summary, timed } from './lib/stats.js';
import { rateOf, rawSqliteCommits, type Rate } from './lib/raw-commit.js';

const R = Number(process.argv[2] ?? 50);
const T = Number(process.argv[3] ?? 20);
const REPS = Number(process.argv[4] ?? 3);
const P = 200;
const MEMORY = process.argv[5] === 'memory';
const dir = mkdtempSync(join(tmpdir(), 'waymark-profile-steps-'));
let n = 0;

async function ours(runs: number, turns: number): Promise<Rate> {
  const store = new SqliteCheckpointer({ path: MEMORY ? ':memory:' : join(dir, `o${++n}.db`), synchronous: 'NORMAL' });
  await store.setup();
  const t = await timed(async () => {
    for (let r = 0; r < runs; r++) {
      const res = await ourAgent(store, turns, P, undefined, r).run('go', { executionId: `run-${r}` });
      if (res.status !== 'completed') throw new Error(res.status);
    }
  });
  await store.close();
  return rateOf(runs * turns * 2, t);
}

await ours(2, 5); // warm the code first
const o: Rate[] = [];
const raw: Rate[] = [];
for (let i = 0; i < REPS; i++) {
  o.push(await ours(R, T));
  raw.push(
    MEMORY
      ? await rawSqliteCommits(null, Math.min(4000, R * T * 2), P + 400)
      : await rawSqliteCommits(dir, Math.min(4000, R * T * 2), P + 400, 'NORMAL'),
  );
  console.log(
    `rep ${i + 1}: waymark NORMAL ${o[i].rate.toFixed(0)} steps/s, ${o[i].cpu.toFixed(0)} /CPU-s · raw NORMAL ${raw[i].rate.toFixed(0)} /s, ${raw[i].cpu.toFixed(0)} /CPU-s`,
  );
}
console.log(
  `R=${R} T=${T}, ${REPS} reps: waymark NORMAL ${fmt(summary(o.map((x) => x.rate)))} steps/s · ${fmt(summary(o.map((x) => x.cpu)))} steps/CPU-s · raw NORMAL ${fmt(summary(raw.map((x) => x.rate)))} /s · ${fmt(
    ratios(
      o.map((x) => x.rate),
      raw.map((x) => x.rate),
    ),
    0,
    '%',
  )} of raw NORMAL`,
);
rmSync(dir, { recursive: true, force: true });
