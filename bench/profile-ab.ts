/**
 * Before/after CPU per durable step in one process: two compiled builds of
 * waymark (each a directory with `client/sqlite/index.js` and
 * `bench/lib/workload.js`, e.g. `npx tsc -p tsconfig.json --noEmit false
 * --outDir <dir>` of two commits, with `node_modules` linked in) run the steps
 * workload on SQLite `synchronous=NORMAL` (`full`: a file at `synchronous=FULL`,
 * every step fsynced, so both sides meet the same disk) in alternating rounds, so a busy
 * neighbour on a shared machine slows both sides of a round alike. Reports
 * steps/s, steps per CPU-second (user + system) and per user-CPU-second, and
 * the after/before CPU ratio taken within each round: median [min–max].
 *
 *   npx tsx bench/profile-ab.ts <before-dir> <after-dir> [R=20] [T=20] [rounds=10] [file|memory|full]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fmt, summary } from './lib/stats.js';

const [before, after] = process.argv.slice(2, 4);
if (!before || !after)
  throw new Error('usage: profile-ab.ts <before-dir> <after-dir> [R] [T] [rounds] [file|memory|full]');
const R = Number(process.argv[4] ?? 20);
const T = Number(process.argv[5] ?? 20);
const ROUNDS = Number(process.argv[6] ?? 10);
const MEMORY = process.argv[7] === 'memory';
const SYNC = process.argv[7] === 'full' ? 'FULL' : 'NORMAL';

interface Side {
  Store: new (o: { path: string; synchronous: 'NORMAL' | 'FULL' }) => { close(): Promise<void> };
  agent: (
    store: unknown,
    T: number,
    P: number,
    onTurn: undefined,
    seed: number,
  ) => { run(input: string, o: { executionId: string }): Promise<{ status: string }> };
}
const load = async (dir: string): Promise<Side> => {
  const url = (p: string) => pathToFileURL(join(resolve(dir), p)).href;
  const { SqliteCheckpointer } = await import(url('client/sqlite/index.js'));
  const { ourAgent } = await import(url('bench/lib/workload.js'));
  return { Store: SqliteCheckpointer, agent: ourAgent };
};
const sides = { before: await load(before), after: await load(after) };
const dir = mkdtempSync(join(tmpdir(), 'waymark-profile-ab-'));
let n = 0;

interface Round {
  rate: number;
  cpu: number;
  user: number;
}
async function once(side: Side, runs: number, turns: number): Promise<Round> {
  const store = new side.Store({ path: MEMORY ? ':memory:' : join(dir, `${++n}.db`), synchronous: SYNC });
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let r = 0; r < runs; r++) {
    const res = await side.agent(store, turns, 200, undefined, r).run('go', { executionId: `run-${r}` });
    if (res.status !== 'completed') throw new Error(res.status);
  }
  const c = process.cpuUsage(c0);
  const secs = (performance.now() - t0) / 1000;
  await store.close();
  const steps = runs * turns * 2;
  return { rate: steps / secs, cpu: steps / ((c.user + c.system) / 1e6), user: steps / (c.user / 1e6) };
}

// warm both sides' code first
for (let i = 0; i < 2; i++) for (const s of [sides.before, sides.after]) await once(s, 5, 10);
const out: Record<'before' | 'after', Round[]> = { before: [], after: [] };
const ratio: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const order = i % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const);
  const got: Partial<Record<'before' | 'after', Round>> = {};
  for (const k of order) got[k] = await once(sides[k], R, T);
  out.before.push(got.before!);
  out.after.push(got.after!);
  ratio.push(got.after!.cpu / got.before!.cpu);
}
const col = (k: 'before' | 'after') =>
  `${fmt(summary(out[k].map((x) => x.rate)))} steps/s · ${fmt(summary(out[k].map((x) => x.cpu)))} /CPU-s · ${fmt(summary(out[k].map((x) => x.user)))} /user-CPU-s`;
console.log(`${MEMORY ? ':memory:' : `file, ${SYNC}`} R=${R} T=${T}, ${ROUNDS} rounds alternating`);
console.log(`  before ${col('before')}`);
console.log(`  after  ${col('after')}`);
console.log(`  after/before steps per CPU-second, within a round: ${fmt(summary(ratio), 2, '×')}`);
rmSync(dir, { recursive: true, force: true });
