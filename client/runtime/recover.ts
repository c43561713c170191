/**
 * Recovery: bring back the runs a dead process left behind.
 *
 * One pass lists every execution that is neither finished nor paused (state
 * `running`), keeps those whose newest row belongs to one of the given agents
 * and whose lease is free or expired, and resumes each (at most `concurrency`
 * at once). A stale run (lease free or expired) of an agent it was not given
 * is left as it is and reported as skipped, so a worker deployed without one
 * of the application's agents says which runs nobody recovers. `resume` takes the lease first, so two recovery workers over the
 * same store never run one execution twice: the loser is told RunInProgress
 * (or LeaseLost) and reports the run as held elsewhere.
 *
 * With `watch: true` passes repeat every `intervalMs` until `signal` aborts;
 * an abort starts no new resume, and the runs already resuming finish their
 * current step boundary-to-marker as usual (a run is never cut mid-step).
 */
import { ErrorCode, hasCode } from '../../shared/errors.js';
import {
  booleanProblem,
  durationProblem,
  functionProblem,
  integerProblem,
  optionNames,
  optionsProblems,
  refuse,
} from '../../support/validate.js';
import type { Checkpointer, ExecutionSummary } from '../checkpointer.js';
import { isGraphAgentPath } from '../../support/langgraph.js';
import type { Agent } from './agent.js';
import type { RunResult } from './types.js';

/** Options of `recoverRuns`: which agents' runs to recover, from which store, and how often. */
export interface RecoverOptions {
  /** The agents whose runs to recover; a run is matched by the agent path of its newest row. */
  agents: Agent[];
  /** The store holding the runs to recover. */
  store: Checkpointer;
  /** Runs resumed at once. Default 4. */
  concurrency?: number;
  /** Stops a watch (and a pass, between runs). */
  signal?: AbortSignal;
  /** Repeat the pass every `intervalMs` until `signal` aborts. Default false. */
  watch?: boolean;
  /** Between watch passes. Default 5 000 ms. */
  intervalMs?: number;
  /** Called with each pass's report (in watch mode, the way to see progress). */
  onPass?: (report: RecoveryReport) => void;
  /** Recover runs a plane holds with no plane connected, giving up the fleet-wide takeover (resume's `withoutPlane`). Default false: such a run is `failed` with PLANE_NOT_CONNECTED. */
  withoutPlane?: boolean;
}

/**
 * Why recovery left a run alone.
 *
 * @inline
 */
export type HeldReason =
  | 'lease live'
  | 'lease lost'
  | 'finished elsewhere'
  | 'paused elsewhere'
  | 'cancelled'
  | 'deleted'
  | 'taken over elsewhere';

/** What `recoverRuns` did with one run: resumed it, left it alone (and why), or failed to. */
export type RecoveryOutcome =
  | { executionId: string; agent: string; outcome: 'recovered'; status: RunResult['status']; result: RunResult }
  | {
      executionId: string;
      agent: string;
      outcome: 'held';
      /** Why it was left alone: another runner's live lease, or it finished, paused, was cancelled or deleted meanwhile. */
      reason: HeldReason;
      holder: string | null;
      expiresAt: string | null;
    }
  | { executionId: string; agent: string; outcome: 'failed'; error: { code: string; message: string } };

/** A stale run `recoverRuns` left as it is: none of the agents it was given runs it. */
export interface SkippedRun {
  executionId: string;
  /** The agent path of its newest row's top level (`agent:refund-bot`): the agent to give `recoverRuns` to recover it. */
  agent: string;
  /** Why it was left: no agent given has that path. */
  reason: 'agent not given';
  /** When its lease expired (null: never taken, or released). */
  leaseExpiredAt: string | null;
}

/** What `recoverRuns` did: each run's outcome, the stale runs it skipped, and the totals. */
export interface RecoveryReport {
  /** Per run, in the order they were considered (the last pass only, in watch mode). */
  runs: RecoveryOutcome[];
  /** Stale runs of agents it was not given, left as they are, in execution-id order (the last pass only, in watch mode). A LangGraph thread is not one: it is held only inside `saver.exclusive`. */
  skipped: SkippedRun[];
  /** Totals (over every pass, in watch mode). */
  recovered: number;
  held: number;
  failed: number;
  passes: number;
}

const RECOVER_OPTIONS = optionNames<RecoverOptions>({
  agents: true,
  store: true,
  concurrency: true,
  signal: true,
  watch: booleanProblem,
  intervalMs: (field, v) => durationProblem(field, v, 1),
  onPass: functionProblem,
  withoutPlane: booleanProblem,
});
const DEFAULT_CONCURRENCY = 4;
const DEFAULT_INTERVAL_MS = 5_000;
const PAGE = 500;

/** Find the runs of `agents` that a dead process left running, and resume each once. */
export async function recoverRuns(options: RecoverOptions): Promise<RecoveryReport> {
  const problems =
    options === undefined ? ['options: required (agents and store)'] : optionsProblems(options, RECOVER_OPTIONS);
  if (options && !Array.isArray(options.agents))
    problems.push('agents: required, an array of the agents whose runs to recover');
  if (options && (typeof options.store !== 'object' || options.store === null))
    problems.push('store: required, the store to recover from');
  const byPath = new Map<string, Agent>();
  for (const a of Array.isArray(options?.agents) ? options.agents : []) {
    if (byPath.has(a.path)) problems.push(`two agents with the path ${a.path}`);
    byPath.set(a.path, a);
  }
  const concurrency = options?.concurrency ?? DEFAULT_CONCURRENCY;
  const p = integerProblem('concurrency', concurrency, 1);
  if (p) problems.push(p);
  refuse('recoverRuns', problems);
  const interval = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  await options.store.setup();
  const total: RecoveryReport = { runs: [], skipped: [], recovered: 0, held: 0, failed: 0, passes: 0 };
  for (;;) {
    const { runs, skipped } = await pass(
      options.store,
      byPath,
      concurrency,
      options.signal,
      options.withoutPlane === true,
    );
    total.runs = runs;
    total.skipped = skipped;
    total.passes++;
    for (const r of runs) total[r.outcome]++;
    options.onPass?.({ runs, skipped, ...count(runs), passes: 1 });
    if (!options.watch || options.signal?.aborted) return total;
    await sleep(interval, options.signal);
    if (options.signal?.aborted) return total;
  }
}

function count(runs: RecoveryOutcome[]) {
  return {
    recovered: runs.filter((r) => r.outcome === 'recovered').length,
    held: runs.filter((r) => r.outcome === 'held').length,
    failed: runs.filter((r) => r.outcome === 'failed').length,
  };
}

async function pass(
  store: Checkpointer,
  agents: Map<string, Agent>,
  concurrency: number,
  signal: AbortSignal | undefined,
  withoutPlane: boolean,
): Promise<{ runs: RecoveryOutcome[]; skipped: SkippedRun[] }> {
  // runs this store lost at the plane that nobody holds now come back here as the plane's copy, to be listed below
  if (!withoutPlane) await store.planeGuard.current?.adoptLostRuns?.((path) => agents.has(path)).catch(() => []);
  const found: ExecutionSummary[] = [];
  for (let after: string | undefined; ; ) {
    const page = await store.listExecutions({ state: 'running', afterExecutionId: after, limit: PAGE });
    found.push(...page);
    if (page.length < PAGE) break;
    after = page[page.length - 1].executionId;
  }
  const out: (RecoveryOutcome | SkippedRun | null)[] = new Array(found.length).fill(null);
  let next = 0;
  const worker = async () => {
    while (next < found.length && !signal?.aborted) {
      const i = next++;
      out[i] = await one(store, agents, found[i], withoutPlane);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, found.length) }, worker));
  return {
    runs: out.filter((r): r is RecoveryOutcome => r !== null && 'outcome' in r),
    skipped: out.filter((r): r is SkippedRun => r !== null && !('outcome' in r)),
  };
}

async function one(
  store: Checkpointer,
  agents: Map<string, Agent>,
  e: ExecutionSummary,
  withoutPlane: boolean,
  adopted = false,
): Promise<RecoveryOutcome | SkippedRun | null> {
  const id = e.executionId;
  let agentPath = '';
  try {
    const latest = await store.latest(id);
    if (!latest) return null;
    agentPath = latest.agentPath.split('/')[0];
    const agent = agents.get(agentPath);
    if (!agent) {
      // another runner's live lease: not stale; a LangGraph thread has no end marker and is no agent's to recover
      if (e.lease?.live || isGraphAgentPath(latest.agentPath)) return null;
      return {
        executionId: id,
        agent: agentPath,
        reason: 'agent not given',
        leaseExpiredAt: e.lease?.expiresAt ?? null,
      };
    }
    if (e.lease?.live) {
      return {
        executionId: id,
        agent: agentPath,
        outcome: 'held',
        reason: 'lease live',
        holder: e.lease.holder,
        expiresAt: e.lease.expiresAt,
      };
    }
    const result = await agent.resume(id, undefined, { withoutPlane });
    return { executionId: id, agent: agentPath, outcome: 'recovered', status: result.status, result };
  } catch (err) {
    const details = ((err as { details?: Record<string, unknown> }).details ?? {}) as {
      holder?: string;
      expiresAt?: string;
    };
    const held = (reason: HeldReason): RecoveryOutcome => ({
      executionId: id,
      agent: agentPath,
      outcome: 'held',
      reason,
      holder: details.holder ?? null,
      expiresAt: details.expiresAt ?? null,
    });
    if (hasCode(err, ErrorCode.RUN_IN_PROGRESS)) return held('lease live');
    if (hasCode(err, ErrorCode.LEASE_LOST)) return held('lease lost');
    if (hasCode(err, ErrorCode.ALREADY_FINISHED) || hasCode(err, ErrorCode.ALREADY_RESUMED))
      return held('finished elsewhere');
    if (hasCode(err, ErrorCode.RESUME_REQUIRED)) return held('paused elsewhere');
    // cancelled between the listing and the resume (or while it ran): left alone, not a failure
    if (hasCode(err, ErrorCode.RUN_CANCELLED)) return held('cancelled');
    // this run deleted between the listing and the resume (EXECUTION_NOT_FOUND), or while it ran (its next write:
    // EXECUTION_GONE); the same code about another execution (a tool's own error) is a failure
    const about = (details as { executionId?: string }).executionId;
    if ((hasCode(err, ErrorCode.EXECUTION_NOT_FOUND) || hasCode(err, ErrorCode.EXECUTION_GONE)) && about === id)
      return held('deleted');
    // another machine took it over at the plane while this one was away; if nobody holds it now, this copy takes the
    // plane's branch in place of the one the plane refused, and recovers it from there
    if (hasCode(err, ErrorCode.RUN_TAKEN_OVER)) {
      const adopt = store.planeGuard.current?.adoptPlaneBranch;
      if (adopted || (details as { free?: boolean }).free !== true || !adopt) return held('taken over elsewhere');
      const took = await adopt(id).catch((e: Error) => e);
      if (took === true) return one(store, agents, e, withoutPlane, true);
      if (took instanceof Error) {
        const code = (took as { code?: string }).code ?? ErrorCode.RECOVERY_FAILED;
        return {
          executionId: id,
          agent: agentPath,
          outcome: 'failed',
          error: {
            code,
            message: `taking the plane's branch of the run in place of this copy's failed: ${took.message}`,
          },
        };
      }
      return held('taken over elsewhere');
    }
    const error = {
      code: (err as { code?: string }).code ?? ErrorCode.RECOVERY_FAILED,
      message: (err as Error)?.message ?? String(err),
    };
    return { executionId: id, agent: agentPath, outcome: 'failed', error };
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
