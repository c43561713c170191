/**
 * The recovery soak: N runs started in worker processes that are
 * SIGKILLed at random fault points, then rounds of two recovery workers
 * started at once, one of them often SIGKILLed too, until no run is left
 * running. Invariants, per round: a recovery worker never calls the model
 * twice for one turn of one run, and redoes an effect only where the kill cut
 * off its record (never one recorded before the round); at the end: every run
 * has exactly one completed run_end, seq 0..n-1 without gaps, each node once,
 * every effect recorded once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { untilLeaseFree } from '../../examples/agents/refund.js';
import { forkTs, nextMessage, runTs } from '../helpers/child.js';
import { rng } from './campaign.js';

const CHILD = fileURLToPath(new URL('../runtime/lease-child.ts', import.meta.url));
const POINTS = [
  'runtime.beforeTool',
  'runtime.beforeModel',
  'runtime.afterTool',
  'store.put.afterCommit',
  'store.idempotency.afterCommit',
  'runtime.afterRunEnd',
];
const STEPS = 3;

export interface RecoverySoakOptions {
  runs: number;
  /** Processes that start runs (each starts runs/starters of them) before the rounds. */
  starters: number;
  /** Stop after this many rounds even if runs are left (a violation). */
  maxRounds: number;
  seed: number;
  dir: string;
}

export interface RecoverySoakResult {
  runs: number;
  rounds: number;
  kills: number;
  recovered: number;
  heldElsewhere: number;
  violations: string[];
}

function tally(file: string): Map<string, number> {
  const m = new Map<string, number>();
  if (!existsSync(file)) return m;
  for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const [id, n] = line.split(' ');
    m.set(`${id} ${n}`, (m.get(`${id} ${n}`) ?? 0) + 1);
  }
  return m;
}

async function finish(child: ChildProcess): Promise<{ signal: string | null; json: any }> {
  let stdout = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.resume();
  const [, signal] = (await once(child, 'exit')) as [number | null, string | null];
  const line = stdout.trim().split('\n').pop();
  return { signal, json: line ? JSON.parse(line) : null };
}

export async function runRecoverySoak(o: RecoverySoakOptions): Promise<RecoverySoakResult> {
  const random = rng(o.seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
  const db = join(o.dir, `recovery-${o.seed}.db`);
  const spec = `sqlite:${db}`;
  const calls = join(o.dir, `recovery-${o.seed}-calls.txt`);
  const effects = join(o.dir, `recovery-${o.seed}-effects.txt`);
  const store = new SqliteCheckpointer({ path: db });
  await store.setup();
  const args = (mode: string, ...rest: string[]) => [mode, spec, calls, effects, '1000', ...rest];
  const result: RecoverySoakResult = { runs: 0, rounds: 0, kills: 0, recovered: 0, heldElsewhere: 0, violations: [] };
  const per = Math.max(1, Math.ceil(o.runs / o.starters));
  const starters = await Promise.all(
    Array.from({ length: o.starters }, (_, i) =>
      runTs(
        CHILD,
        args(
          'run-many',
          `s${o.seed}w${i}`,
          String(per),
          String(STEPS),
          pick(POINTS),
          String(1 + Math.floor(random() * per * 2)),
        ),
      ),
    ),
  );
  result.kills += starters.filter((s) => s.signal === 'SIGKILL').length;
  try {
    for (;;) {
      const running = (await store.listExecutions({ state: 'running' })).map((e) => e.executionId);
      if (!running.length) break;
      if (result.rounds >= o.maxRounds) {
        result.violations.push(
          `${running.length} runs still running after ${o.maxRounds} rounds: ${running.slice(0, 5).join(', ')}`,
        );
        break;
      }
      result.rounds++;
      for (const id of running) await untilLeaseFree(store, id);
      const callsBefore = tally(calls);
      const effectsBefore = tally(effects);
      const recorded = new Set<string>();
      for (const id of running) for (const e of await store.listIdempotent(id)) recorded.add(e.key);
      // the last round's workers are not killed, so the soak ends
      const killOne = result.rounds < o.maxRounds - 1 && random() < 0.7;
      const workers = [0, 1].map((i) =>
        forkTs(
          CHILD,
          args('recover', ...(killOne && i === 0 ? [pick(POINTS), String(1 + Math.floor(random() * 6))] : [])),
          { WAIT_GO: '1', MODEL_DELAY_MS: '20' },
        ),
      );
      const outs = workers.map(finish);
      await Promise.all(workers.map((w) => nextMessage(w)));
      for (const w of workers) w.send({ go: true });
      for (const out of await Promise.all(outs)) {
        if (out.signal === 'SIGKILL') result.kills++;
        const runs = (out.json?.report?.runs ?? []) as { outcome: string; executionId: string; error?: unknown }[];
        result.recovered += runs.filter((r) => r.outcome === 'recovered').length;
        result.heldElsewhere += runs.filter((r) => r.outcome === 'held').length;
        for (const r of runs.filter((x) => x.outcome === 'failed'))
          result.violations.push(`round ${result.rounds}: ${r.executionId} failed: ${JSON.stringify(r.error)}`);
      }
      const callsAfter = tally(calls);
      const effectsAfter = tally(effects);
      for (const id of running) {
        for (let t = 0; t <= STEPS; t++) {
          const k = `${id} ${t}`;
          const more = (callsAfter.get(k) ?? 0) - (callsBefore.get(k) ?? 0);
          if (more > 1) result.violations.push(`round ${result.rounds}: model called ${more} times for ${k}`);
        }
        for (let s = 0; s < STEPS; s++) {
          const k = `${id} ${s}`;
          const more = (effectsAfter.get(k) ?? 0) - (effectsBefore.get(k) ?? 0);
          if (more > 1 || (more > 0 && recorded.has(`effect:${id}:${s}`))) {
            result.violations.push(
              `round ${result.rounds}: effect ${k} done ${more} more times (recorded before: ${recorded.has(`effect:${id}:${s}`)})`,
            );
          }
        }
      }
    }
    const all = (await store.listExecutions()).map((e) => e.executionId);
    result.runs = all.length;
    for (const id of all) {
      const rows = await store.list(id);
      if (rows.some((r, i) => r.seq !== i)) result.violations.push(`${id}: seq has gaps`);
      const ends = rows.filter((r) => r.step === 'run_end');
      if (ends.length !== 1 || ends[0].status !== 'completed')
        result.violations.push(`${id}: ${ends.length} run_end rows (${ends.map((e) => e.status).join(', ')})`);
      const nodes = rows.map((r) => r.nodeId);
      if (new Set(nodes).size !== nodes.length)
        result.violations.push(`${id}: a node written twice: ${nodes.join(', ')}`);
      const keys = (await store.listIdempotent(id)).map((e) => e.key).sort();
      const want = Array.from({ length: STEPS }, (_, s) => `effect:${id}:${s}`).sort();
      if (keys.join() !== want.join()) result.violations.push(`${id}: effects recorded ${keys.join(', ')}`);
      if ((await store.getLease(id))?.live) result.violations.push(`${id}: still leased after its end`);
    }
  } finally {
    await store.close();
  }
  return result;
}
