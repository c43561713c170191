/**
 * The decision worker: applies the decisions people record (on the
 * plane's inspector, a local UI, an API call) to the runs they answer. A
 * screen only records a decision; this worker, in the application's process
 * (which has the tools), applies it through the ordinary claim:
 * `agent.resume(id, {approved, metadata}, {checkpointId, decisionId})`. The
 * claim (at the plane first while a replica is connected, then in the store)
 * decides who applies it, so several workers in several processes and on
 * several machines may serve the same decisions: one applies each, the others
 * see it applied.
 *
 * Loop: list the store's pending decisions (derived state `pending`), oldest
 * first, and apply each; then sleep until the store is written (this
 * process), the replica reports a decision from the plane, a retry is due, or
 * the fallback timer fires (another process wrote the store). A store write
 * (every checkpoint of every run fires one) starts at most one scan per
 * `writeDebounceMs`: under agent traffic the worker does not scan back to
 * back; a decision from the replica, a retry or the stop signal wakes it at once. Ends when
 * `signal` aborts, after the decision in hand.
 *
 * Outcomes (`onOutcome`, one per decision this worker settles):
 * - `applied`: this worker resumed the run with the decision; `status` is the
 *   run's status after it (completed, paused again, failed).
 * - `applied_elsewhere`: another process or machine applied this decision
 *   (this store's claim names it, or the plane's winning claim names it and
 *   was applied; a plane claim only held, whatever it carries, is `failed`,
 *   tried again: its holder may release it).
 * - `superseded`: the pause was answered otherwise (a resume from code,
 *   another decision) or closed (the run cancelled): AlreadyResumed or
 *   RunCancelled. The store's derived state says the same. Also a decision
 *   the plane refused because it holds the pause's first, another one
 *   (ALREADY_DECIDED): that one takes its place in the store and is applied.
 *   And a pause the plane can never hold (PAUSE_NOT_FOUND, below).
 * - `failed`: anything else (the plane refused the claim, a tool is missing, a
 *   run in progress, a run a plane holds while no `replica` is connected:
 *   PLANE_NOT_CONNECTED…); the decision stays pending and is tried again after
 *   a backoff (`retryInMs`).
 * PAUSE_NOT_FOUND: the plane's claim does not find the pause (CLAIM_REFUSED
 * with `details.planeCode` PAUSE_NOT_FOUND, or that code). Usually its row
 * is still on its way to the plane (the outbox has not sent it yet), so the
 * decision is `failed` and tried again. It can never come when the plane
 * refused it: this store's copy of the run is lost at the plane (the plane
 * keeps another machine's branch: two resumed one pause, or a takeover) from
 * a row at or before the pause's own. The plane holds another row at that
 * seq, a row of another branch is never ingested, and so the pause is never
 * there to claim: the decision is `superseded` (code PAUSE_NOT_FOUND, the
 * reason naming the refused seq). Anything else (no refusal, or one after the
 * pause's row) keeps the decision retried.
 *
 * Run requests (retry, recover, fork; client/runtime/requests.ts) made on
 * the plane are applied by the same loop, asked of the replica's plane at
 * most every `pollMs`; their outcomes go to `onRequestOutcome`.
 *
 * A decision for a run this store does not hold is skipped, unless `restore`
 * is set: then the plane is asked where its pause stands, and the run is
 * restored (through the replica) only while that pause is open there; a pause
 * claimed or closed on the plane is reported as above without restoring the
 * run, and the decision is forgotten here (a claim only held: `failed`, the
 * decision kept). Only decisions recorded before the plane was asked are
 * forgotten (the store's decisionSeq read first).
 */
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import {
  booleanProblem,
  durationProblem,
  integerProblem,
  optionNames,
  optionsProblems,
  refuse,
} from '../../support/validate.js';
import { Decision } from '../../shared/rows.js';
import type { Checkpointer, StoredDecision } from '../checkpointer.js';
import { runLostAtPlane } from '../replica/branch.js';
import { type DecisionRuns, decisionRunsProblem } from '../replica/decision-feed.js';
import type { Replica } from '../replica/replica.js';
import { backoffDelay, type Backoff } from '../retry.js';
import type { RunRequestView } from '../../shared/protocol.js';
import type { Agent } from './agent.js';
import { RequestApplier, type RequestOutcome, type RequestSummary } from './requests.js';
import type { RunResult } from './types.js';

/** What the decision worker did with one decision (`onOutcome`). */
export type DecisionOutcome =
  | { outcome: 'applied'; decision: StoredDecision; status: RunResult['status']; result: RunResult }
  | { outcome: 'applied_elsewhere'; decision: StoredDecision; appliedBy: string }
  | { outcome: 'superseded'; decision: StoredDecision; code: string; reason: string; claimedBy: string | null }
  | {
      outcome: 'failed';
      decision: StoredDecision;
      error: { code: string | null; message: string };
      attempts: number;
      retryInMs: number;
    };

/** Options of `serveDecisions`: which agents apply decisions, from which store, and how it waits and retries. */
export interface ServeDecisionsOptions {
  /** The agent that runs every decided run (or `agentFor`). */
  agent?: Agent;
  /** The agent for one decision's run; null/undefined: not this worker's (skipped). */
  agentFor?: (decision: StoredDecision) => Agent | null | undefined | Promise<Agent | null | undefined>;
  /** The store whose recorded decisions the worker applies. */
  store: Checkpointer;
  /** A connected replica: its plane's decisions wake the worker (it follows the decision feed while serving). */
  replica?: Replica;
  /** Stops the worker (after the decision in hand). */
  signal: AbortSignal;
  /** Restore from the plane (through `replica`) a decided run this store does not hold, then apply it. */
  restore?: boolean;
  /**
   * Whose decisions and run requests the plane serves this worker. `'all'` (the default): the project's every
   * one. `'mine'`: only those of runs this replica's writer delivered rows of, restored or owns
   * (GET /v1/writer-decisions, GET /v1/requests?writerId=), so a fleet's laptops are not each served every
   * laptop's; right when every run this store holds was written or restored under the replica's writer id. A
   * store copied under a new writer id (or connected under another one) holds runs the plane knows under the old
   * id: it keeps `'all'`. Not with `restore` (which takes on runs it never touched).
   */
  runs?: DecisionRuns;
  /** Called with the outcome of each decision the worker handled (applied, applied elsewhere, superseded, failed). Default none. */
  onOutcome?: (outcome: DecisionOutcome) => void;
  /** The fallback wake-up, for decisions another process recorded in a shared store. Default 2000 ms. */
  pollMs?: number;
  /** Backoff of a failed decision. Default 500 ms doubling to 60 s. */
  retry?: Backoff;
  /** Page size of the pending listing. Default 100. */
  pageSize?: number;
  /** A store write wakes the worker at most once per this many ms (from the previous scan's start). Default 250. */
  writeDebounceMs?: number;
  /** Where the worker reports what it cannot act on (a decision it failed to forget). pino's `warn` fits. Default: nowhere. */
  logger?: DecisionLogger;
  /** Apply decisions of runs a plane holds with no plane connected, giving up the fleet-wide claim (resume's `withoutPlane`). Default false: such a decision fails with PLANE_NOT_CONNECTED. */
  withoutPlane?: boolean;
  /**
   * Apply the run requests people make on the plane (retry a failed run, recover a stale one, fork from a row;
   * client/runtime/requests.ts), asked of `replica`'s plane every `pollMs`. Default true when a replica is given.
   */
  requests?: boolean;
  /** The agent for one run request's run, when the worker was given `agentFor` (without it such a worker applies no request). */
  agentForRequest?: (request: RunRequestView) => Agent | null | undefined | Promise<Agent | null | undefined>;
  /** Called with the outcome of each run request the worker handled (applied, applied elsewhere, superseded, refused, failed). */
  onRequestOutcome?: (outcome: RequestOutcome) => void;
}

/** The one call the worker logs through (pino's signature). */
export interface DecisionLogger {
  /** Log one warning: structured fields, then the message. */
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What a worker did until it stopped. */
export interface ServeSummary {
  applied: number;
  appliedElsewhere: number;
  superseded: number;
  failed: number;
  /** Scans of the pending decisions (rounds) the worker ran. */
  scans: number;
  /** Decisions the worker still remembered when it stopped (settled, or waiting for a retry): only ones still pending in the store. */
  remembered: number;
  /** The run requests it settled (zeros when it applies none). */
  requests: RequestSummary;
}

const SUPERSEDED: ReadonlySet<string> = new Set([ErrorCode.ALREADY_RESUMED, ErrorCode.RUN_CANCELLED]);

const SERVE_OPTIONS = optionNames<ServeDecisionsOptions>({
  agent: true,
  agentFor: true,
  store: true,
  replica: true,
  signal: true,
  restore: booleanProblem,
  runs: decisionRunsProblem,
  onOutcome: true,
  pollMs: (field, v) => durationProblem(field, v, 1),
  retry: true,
  pageSize: (field, v) => integerProblem(field, v, 1),
  writeDebounceMs: (field, v) => durationProblem(field, v, 0),
  logger: true,
  withoutPlane: booleanProblem,
  requests: booleanProblem,
  agentForRequest: true,
  onRequestOutcome: true,
});

function checkOptions(o: ServeDecisionsOptions): void {
  const problems = o === undefined ? ['options: required'] : optionsProblems(o, SERVE_OPTIONS);
  if (typeof o === 'object' && o !== null) {
    if (!o.agent === !o.agentFor) problems.push('give exactly one of agent and agentFor');
    if (!o.store) problems.push('store: required');
    if (!o.signal) problems.push('signal: required, an AbortSignal that stops the worker');
    if (o.restore && !o.replica) problems.push('restore needs a replica (the plane to restore from)');
    if (o.restore === true && o.runs === 'mine')
      problems.push("runs: 'mine' cannot serve restore, which takes on runs this writer never touched; use 'all'");
    if (o.runs === 'mine' && !o.replica)
      problems.push("runs: 'mine' needs a replica (the plane whose feeds it narrows)");
  }
  refuse('serveDecisions', problems);
}

/** Serve decisions until `signal` aborts; resolves with what was done. */
export async function serveDecisions(o: ServeDecisionsOptions): Promise<ServeSummary> {
  checkOptions(o);
  const worker = new DecisionWorker(o);
  return worker.serve();
}

class DecisionWorker {
  private readonly summary: Omit<ServeSummary, 'requests'> = {
    applied: 0,
    appliedElsewhere: 0,
    superseded: 0,
    failed: 0,
    scans: 0,
    remembered: 0,
  };
  /** When the last scan started, and the timer of a store write's deferred wake-up. */
  private lastScanAt = 0;
  private writeTimer: NodeJS.Timeout | null = null;
  /** Decisions settled by this worker whose store state may still read pending (a claim lost at the plane). */
  private readonly settled = new Set<string>();
  private readonly retries = new Map<
    string,
    { attempts: number; at: number; decision: StoredDecision; details?: Record<string, unknown> }
  >();
  private wake: (() => void) | null = null;
  private woken = false;
  private readonly retry: Backoff;
  /** The run requests' part (null: no replica, or `requests: false`). */
  private readonly requests: RequestApplier | null;

  constructor(private readonly o: ServeDecisionsOptions) {
    this.retry = o.retry ?? { baseMs: 500, capMs: 60_000 };
    const agentFor = o.agent ? () => o.agent : o.agentForRequest;
    this.requests =
      o.replica && o.requests !== false && agentFor
        ? new RequestApplier({
            store: o.store,
            replica: o.replica,
            agentFor,
            restore: o.restore === true,
            runs: o.runs ?? 'all',
            withoutPlane: o.withoutPlane === true,
            retry: this.retry,
            signal: o.signal,
            onOutcome: (x) => o.onRequestOutcome?.(x),
            pollMs: o.pollMs ?? 2000,
            pageSize: o.pageSize ?? 100,
            warn: o.logger ? (f, m) => o.logger!.warn(f, m) : undefined,
          })
        : null;
  }

  private kick = (): void => {
    this.woken = true;
    this.wake?.();
  };

  /** A store write: wakes the worker, but not sooner than `writeDebounceMs` after the last scan started. */
  private writeKick = (): void => {
    if (this.writeTimer) return;
    const wait = this.lastScanAt + (this.o.writeDebounceMs ?? 250) - Date.now();
    if (wait <= 0) {
      this.kick();
      return;
    }
    this.writeTimer = setTimeout(() => {
      this.writeTimer = null;
      this.kick();
    }, wait);
  };

  async serve(): Promise<ServeSummary> {
    const { store, replica, signal } = this.o;
    await store.setup();
    const off = store.onWrite(this.writeKick);
    replica?.on('decision', this.kick);
    const unfollow = replica?.followDecisions(this.o.runs ?? 'all');
    signal.addEventListener('abort', this.kick);
    try {
      while (!signal.aborted) {
        this.woken = false;
        this.lastScanAt = Date.now();
        this.summary.scans++;
        await this.round();
        if (!signal.aborted) await this.requests?.round();
        if (signal.aborted) break;
        if (!this.woken) await this.sleep();
      }
    } finally {
      off();
      if (this.writeTimer) clearTimeout(this.writeTimer);
      replica?.off('decision', this.kick);
      unfollow?.();
      signal.removeEventListener('abort', this.kick);
    }
    return {
      ...this.summary,
      remembered: this.settled.size + this.retries.size + (this.requests?.remembered ?? 0),
      requests: {
        ...(this.requests?.summary ?? { applied: 0, appliedElsewhere: 0, superseded: 0, refused: 0, failed: 0 }),
      },
    };
  }

  /** Until kicked, the fallback timer, or the soonest retry. */
  private sleep(): Promise<void> {
    const now = Date.now();
    let ms = this.o.pollMs ?? 2000;
    for (const r of this.retries.values()) ms = Math.min(ms, Math.max(0, r.at - now));
    const due = this.requests?.nextDue();
    if (due != null) ms = Math.min(ms, Math.max(0, due - now));
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wake = null;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wake = done;
    });
  }

  /**
   * One pass over the pending decisions, oldest first. A full pass then
   * forgets the settled and retried decisions it did not meet: no longer
   * pending in the store, they are never listed again.
   */
  private async round(): Promise<void> {
    let cursor: string | undefined;
    const seen = new Set<string>();
    do {
      const page = await this.o.store.listDecisions({ state: 'pending', limit: this.o.pageSize ?? 100, cursor });
      for (const d of page.items) {
        seen.add(d.decisionId);
        if (this.o.signal.aborted) return;
        if (this.settled.has(d.decisionId)) continue;
        const r = this.retries.get(d.decisionId);
        if (r && r.at > Date.now()) continue;
        await this.apply(d);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    for (const id of this.settled) if (!seen.has(id)) this.settled.delete(id);
    for (const [id, r] of this.retries) {
      if (seen.has(id) || this.o.signal.aborted) continue;
      // a failed decision that left pending meanwhile (applied elsewhere, answered otherwise, caught up from the plane): its final outcome
      this.retries.delete(id);
      // lost at the plane to a held claim naming this decision, now closed: that claim was applied (details as the plane said them)
      const details = r.details?.claimDecisionId === id ? { ...r.details, claimApplied: true } : {};
      await this.closed(r.decision, {
        code: ErrorCode.ALREADY_RESUMED,
        message: `the pause at checkpoint ${r.decision.checkpointId} is no longer open in this store`,
        details,
      });
    }
  }

  private report(outcome: DecisionOutcome): void {
    try {
      this.o.onOutcome?.(outcome);
    } catch {
      // a listener cannot stop the worker
    }
  }

  private async apply(d: StoredDecision): Promise<void> {
    const { store } = this.o;
    try {
      if (!d.held) {
        if (!this.o.restore) return;
        await this.pauseOpenAtPlane(d);
        await this.o.replica!.restore(d.executionId);
        const now = await store.getDecision(d.executionId, d.checkpointId);
        if (!now) return;
        if (now.state !== 'pending' || !now.held)
          return this.closed(now, {
            code: ErrorCode.ALREADY_RESUMED,
            message: `the plane's copy of '${d.executionId}' is no longer paused at ${d.checkpointId}`,
          });
        d = now;
      }
      const agent = this.o.agent ?? (await this.o.agentFor!(d));
      if (!agent) return;
      const result = await agent.resume(
        d.executionId,
        { approved: d.approved, metadata: d.metadata },
        { checkpointId: d.checkpointId, decisionId: d.decisionId, withoutPlane: this.o.withoutPlane === true },
      );
      this.retries.delete(d.decisionId);
      this.summary.applied++;
      this.report({
        outcome: 'applied',
        decision: (await store.getDecision(d.executionId, d.checkpointId)) ?? d,
        status: result.status,
        result,
      });
    } catch (e) {
      const code = (e as { code?: string })?.code ?? null;
      if (code === ErrorCode.ALREADY_DECIDED && (await this.yieldToPlane(d, e as WaymarkError))) return;
      // the plane's claim does not find the pause: its refusal (CLAIM_REFUSED) carries the plane's code
      const planeCode = (e as WaymarkError)?.details?.planeCode;
      const notAtPlane =
        code === ErrorCode.PAUSE_NOT_FOUND ||
        (code === ErrorCode.CLAIM_REFUSED && planeCode === ErrorCode.PAUSE_NOT_FOUND);
      if (notAtPlane && d.held) {
        const never = await this.neverAtPlane(d).catch(() => null);
        if (never) return this.closed(d, { code: ErrorCode.PAUSE_NOT_FOUND, message: never });
      }
      // a run gone from the plane before it was restored here: its pause closed for good
      const gone = code === ErrorCode.NOT_ON_PLANE && !d.held;
      if (code && (SUPERSEDED.has(code) || gone) && !(await this.heldElsewhere(d, e as WaymarkError)))
        return this.closed(d, e as WaymarkError);
      const prev = this.retries.get(d.decisionId)?.attempts ?? 0;
      const retryInMs = Math.round(backoffDelay(prev + 1, this.retry));
      this.retries.set(d.decisionId, {
        attempts: prev + 1,
        at: Date.now() + retryInMs,
        decision: d,
        details: (e as WaymarkError)?.details,
      });
      this.summary.failed++;
      this.report({
        outcome: 'failed',
        decision: d,
        error: { code, message: (e as Error)?.message ?? String(e) },
        attempts: prev + 1,
        retryInMs,
      });
    }
  }

  /**
   * The plane refused the claim: the pause was decided first there, by another
   * decision (recorded while this store had not heard of it). That decision
   * takes this one's place in the store (recordDecision's rule), this one is
   * reported superseded, and the next round applies the plane's. False when
   * the refusal did not carry the plane's decision, or the store kept this one
   * (then it is retried as any failure).
   */
  private async yieldToPlane(d: StoredDecision, e: WaymarkError): Promise<boolean> {
    // the plane's view of a decision carries its state too; the store's refusal, the decision as stored
    const first = Decision.strip().safeParse((e.details as { decision?: unknown } | undefined)?.decision);
    if (!first.success || first.data.decisionId === d.decisionId) return false;
    const r = await this.o.store.recordDecision({ ...first.data, source: 'plane' });
    // taken in this one's place now, or already (the decision feed brought it first)
    const yielded = r.recorded
      ? r.replaced?.decisionId === d.decisionId
      : r.existing.decisionId === first.data.decisionId;
    if (!yielded) return false;
    // this decision is gone from the store (a `closed()` would read the plane's in its place)
    this.retries.delete(d.decisionId);
    this.settled.add(d.decisionId);
    this.summary.superseded++;
    this.report({
      outcome: 'superseded',
      decision: { ...d, state: 'superseded' },
      code: ErrorCode.ALREADY_DECIDED,
      reason: e.message,
      claimedBy: null,
    });
    this.kick();
    return true;
  }

  /**
   * Before restoring a run this store does not hold, the plane's word on the
   * decision's pause: open there, the run is restored and the decision
   * applied. Otherwise nothing is restored (the run is not this worker's to
   * resume) and the answer is thrown as a lost claim's would be, so it is
   * reported alike: claimed there with this decision and applied
   * (applied_elsewhere), claimed but only held, with or without this decision
   * (failed, tried again: the holder may release it), claimed otherwise and
   * applied, closed, or the run gone from the plane (superseded). A settled
   * decision's row is then forgotten here (closed()).
   */
  private async pauseOpenAtPlane(d: StoredDecision): Promise<void> {
    // read before the plane: a decision recorded while its answer is on the way (a pause opened since) is not forgotten on it
    const decisionsBefore = await this.o.store.decisionSeq();
    const run = await this.o.replica!.runAtPlane(d.executionId);
    const where = `the pause at checkpoint ${d.checkpointId} of '${d.executionId}'`;
    if (!run)
      throw new WaymarkError(
        ErrorCode.NOT_ON_PLANE,
        `${where} is gone: the run is not on the plane; nothing was restored`,
        { details: { planePauseId: null, decisionsBefore } },
      );
    const pause = run.pause?.pending.checkpointId === d.checkpointId ? run.pause : null;
    if (pause?.state === 'open') return;
    // the plane's pause of the run now, when it is another one: a decision kept here for it is still needed
    const planePauseId = run.pause && !pause ? run.pause.pending.checkpointId : null;
    if (!pause) {
      const cancelled = run.execution.status === 'cancelled';
      throw new WaymarkError(
        cancelled ? ErrorCode.RUN_CANCELLED : ErrorCode.ALREADY_RESUMED,
        `${where} is no longer open on the plane (the run is ${run.execution.status}); nothing was restored`,
        {
          details: { planePauseId, decisionsBefore },
        },
      );
    }
    // the plane's view of this decision: 'claimed' (held) or 'applied' when the pause's claim carries it, else 'superseded'
    const withMine =
      pause.decision?.decisionId === d.decisionId &&
      (pause.decision.state === 'claimed' || pause.decision.state === 'applied');
    const claimedBy = pause.claim?.writerId ?? pause.claimedBy ?? 'another writer';
    throw new WaymarkError(
      ErrorCode.ALREADY_RESUMED,
      `${where} was claimed on the plane by writer '${claimedBy}'; nothing was restored`,
      {
        details: {
          claimedBy,
          claimDecisionId: withMine ? d.decisionId : null,
          claimApplied: withMine ? pause.decision?.state === 'applied' : pause.claim?.state === 'applied',
          planePauseId,
          decisionsBefore,
        },
      },
    );
  }

  /**
   * Why the plane will never hold this decision's pause (the PAUSE_NOT_FOUND rule of the header), or null while
   * its row may still reach the plane: this store's copy of the run is lost at the plane from a row at or before
   * the pause's.
   */
  private async neverAtPlane(d: StoredDecision): Promise<string | null> {
    const pause = await this.o.store.getById(d.checkpointId);
    if (!pause || pause.executionId !== d.executionId) return null;
    const lost = await runLostAtPlane(this.o.store, d.executionId);
    if (!lost || lost.fromSeq > pause.seq) return null;
    return `the pause at checkpoint ${d.checkpointId} (seq ${pause.seq}) of '${d.executionId}' can never reach the plane: the plane refused this store's rows of the run from seq ${lost.fromSeq} (${lost.reason}) and keeps another branch, without this pause`;
  }

  /**
   * Lost at the plane to a claim that is only held, not applied (its holder
   * crashed between the plane claim and its local one), whatever decision it
   * carries (none: a resume from code): not settled; tried again after a
   * backoff (the plane releases or lets a stale held claim be taken over, and
   * the pause is open again). A plane that does not say whether the claim was
   * applied: held only when the claim names this decision.
   */
  private async heldElsewhere(d: StoredDecision, e: { details?: Record<string, unknown> }): Promise<boolean> {
    const details = e.details ?? {};
    if (typeof details.claimedBy !== 'string' || details.claimApplied === true) return false;
    if (details.claimApplied !== false && details.claimDecisionId !== d.decisionId) return false;
    const now = await this.o.store.getDecision(d.executionId, d.checkpointId).catch(() => null);
    return now?.state !== 'applied';
  }

  /** The pause was answered or closed: by this decision elsewhere (applied_elsewhere), or otherwise (superseded). */
  private async closed(
    d: StoredDecision,
    e: { code?: string; message: string; details?: Record<string, unknown> },
  ): Promise<void> {
    this.retries.delete(d.decisionId);
    this.settled.add(d.decisionId);
    const stored = await this.o.store.getDecision(d.executionId, d.checkpointId).catch(() => null);
    // the pause's decision here may be another one now (the plane's took this one's place): this one is reported
    const now = !stored ? d : stored.decisionId === d.decisionId ? stored : { ...d, state: 'superseded' as const };
    const details = e.details ?? {};
    const planeWinner = typeof details.claimedBy === 'string' ? details.claimedBy : null;
    if (now.state === 'applied') {
      this.summary.appliedElsewhere++;
      this.report({ outcome: 'applied_elsewhere', decision: now, appliedBy: now.appliedBy ?? 'another process' });
    } else if (planeWinner && details.claimDecisionId === d.decisionId) {
      this.summary.appliedElsewhere++;
      this.report({ outcome: 'applied_elsewhere', decision: now, appliedBy: planeWinner });
    } else {
      this.summary.superseded++;
      this.report({
        outcome: 'superseded',
        decision: now,
        code: e.code ?? ErrorCode.ALREADY_RESUMED,
        reason: e.message,
        claimedBy: planeWinner ?? now.appliedBy,
      });
    }
    await this.forget(now, details);
  }

  /** After its outcome: a decision for a run this store does not hold, settled on the plane's word, is no work of this store's any more. */
  private async forget(now: StoredDecision, details: Record<string, unknown>): Promise<void> {
    if (now.held || !('planePauseId' in details) || typeof details.decisionsBefore !== 'number') return;
    const keep = (details.planePauseId as string | null) ?? null;
    try {
      await this.o.store.forgetUnheldDecisions(now.executionId, keep, details.decisionsBefore);
    } catch (e) {
      // the rows stay; the change feed or the next settled decision forgets them
      this.o.logger?.warn(
        {
          executionId: now.executionId,
          decisionId: now.decisionId,
          err: e,
          code: (e as { code?: string })?.code ?? null,
        },
        `could not forget the settled decisions of '${now.executionId}' kept here: ${(e as Error)?.message ?? String(e)}`,
      );
    }
  }
}
