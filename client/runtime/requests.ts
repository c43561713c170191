/**
 * Run requests, applied by the application: a person asked on the plane's
 * inspector (or its API) that a failed run be retried, a stale one recovered,
 * or a run forked from a row. The plane only records the request; this part
 * of the decision worker (serveDecisions), in the application's process,
 * which has the agents and their tools, applies it and reports how it went.
 *
 * - retry, recover: `agent.resume(id, undefined, { expectNewestId })`, the
 *   row the request named. The lease, the plane's takeover fencing and the
 *   named-row rule make it once: a second worker (another process, another
 *   machine) finds the run held (RUN_IN_PROGRESS, tried again) or moved on
 *   (MOVED_ON), and writes nothing.
 * - fork: the request is claimed at the plane first (one writer holds it),
 *   then `agent.fork(id, { checkpointId, executionId })` with the fork id the
 *   plane chose. Once the fork's first row is written the plane is told it
 *   `started`: the request is no longer open, so no other worker claims it
 *   (even after the claim's time ran out) and forks again. A fork id that
 *   already has rows here was applied already.
 *
 * Outcomes (`onRequestOutcome`, and reported to the plane, which shows them on
 * the run's page):
 * - `applied`: this worker applied it; `status` is the run's (or the fork's)
 *   status after it.
 * - `applied_elsewhere`: another worker applied it (the plane says who).
 * - `superseded`: the run moved on otherwise before any worker applied it
 *   (MOVED_ON: resumed from code, recovered by recoverRuns; or it was
 *   cancelled, finished, paused).
 * - `refused`: the application cannot apply it (a tool or worker the run
 *   needs is missing, a row that is not this agent's): reported with its
 *   code; not tried again.
 * - `failed`: anything else (the run is held by a live runner, the plane
 *   cannot be reached…): tried again after a backoff while it stays open.
 * A request for a run this store does not hold is not this worker's, unless
 * `restore` is set: then the run is restored from the plane first. A store
 * that holds an older copy (without the request's row) is caught up from the
 * plane first; one still behind the row never settles the request (it stays
 * open, tried again): only a store at or past the row judges it moved on.
 *
 * A plane that refuses the listing (404: older than run requests; 401: the
 * key revoked, the replica going auth_failed) is said once to `warn`; the
 * worker goes on serving decisions and asks again every `pollMs`.
 */
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { RunRequestView } from '../../shared/protocol.js';
import type { Checkpointer } from '../checkpointer.js';
import type { DecisionRuns } from '../replica/decision-feed.js';
import type { Replica } from '../replica/replica.js';
import { backoffDelay, type Backoff } from '../retry.js';
import type { Agent } from './agent.js';
import type { RunResult } from './types.js';

/**
 * What the worker did with one run request (`onRequestOutcome`), with the request as the plane has it: `applied`
 * by this worker (`status`: the run's, or the fork's, after it; `result`: the run's result), `applied_elsewhere`
 * (`appliedBy`: the writer that did), `superseded` (the run moved on otherwise: `code`, `reason`), `refused` (the
 * application cannot apply it: `code`, `reason`), or `failed` (`error`; tried again in `retryInMs`, the
 * `attempts`-th failure).
 */
export type RequestOutcome =
  | { outcome: 'applied'; request: RunRequestView; status: RunResult['status']; result: RunResult }
  | { outcome: 'applied_elsewhere'; request: RunRequestView; appliedBy: string }
  | { outcome: 'superseded'; request: RunRequestView; code: string; reason: string }
  | { outcome: 'refused'; request: RunRequestView; code: string; reason: string }
  | {
      outcome: 'failed';
      request: RunRequestView;
      error: { code: string | null; message: string };
      attempts: number;
      retryInMs: number;
    };

/** Counts of the requests a worker settled. */
export interface RequestSummary {
  applied: number;
  appliedElsewhere: number;
  superseded: number;
  refused: number;
  failed: number;
}

/** What the applier needs of the worker: the store, the replica, how to pick an agent, where outcomes go. */
export interface RequestApplierOptions {
  /** The store the requests' runs are applied in (the worker's). */
  store: Checkpointer;
  /** The connected replica: its plane is asked for requests, claims and reports; it restores and catches up runs. */
  replica: Replica;
  /** The agent for one request's run; null/undefined: not this worker's (left for another). */
  agentFor: (request: RunRequestView) => Agent | null | undefined | Promise<Agent | null | undefined>;
  /** Restore from the plane a run this store does not hold, then apply its request. */
  restore: boolean;
  /** Whose open requests the plane lists: the project's, or those of this writer's runs (ServeDecisionsOptions.runs). */
  runs: DecisionRuns;
  /** Resume runs a plane holds with no plane connected (resume's `withoutPlane`). */
  withoutPlane: boolean;
  /** Backoff of a request that failed (tried again while it stays open). */
  retry: Backoff;
  /** Stops the applier (after the request in hand). */
  signal: AbortSignal;
  /** Called with the outcome of each request the applier handled. */
  onOutcome: (o: RequestOutcome) => void;
  /** How often the plane is asked for open requests (ms). */
  pollMs: number;
  /** Open requests read per pass (one page). */
  pageSize: number;
  /** Where the applier reports what it cannot act on (a listing or a report that failed). Default: nowhere. */
  warn?: (fields: Record<string, unknown>, message: string) => void;
}

/** The run moved on otherwise: not this request's doing (or another applier's: the plane says). */
const MOVED: ReadonlySet<string> = new Set([
  ErrorCode.MOVED_ON,
  ErrorCode.ALREADY_FINISHED,
  ErrorCode.RUN_CANCELLED,
  ErrorCode.RESUME_REQUIRED,
  ErrorCode.ALREADY_RESUMED,
]);

/** The application cannot apply it, and trying again will not change that. */
const REFUSED: ReadonlySet<string> = new Set([
  ErrorCode.TOOL_NOT_FOUND,
  ErrorCode.CHECKPOINT_ERROR,
  ErrorCode.INVALID_OPTIONS,
  ErrorCode.NOT_ON_PLANE,
]);

export class RequestApplier {
  readonly summary: RequestSummary = { applied: 0, appliedElsewhere: 0, superseded: 0, refused: 0, failed: 0 };
  private lastAsk = 0;
  /** Where the next pass reads: after this cursor (null: from the first open request), past requests up to `seq`. */
  private cursor: { after: string | null; seq: number } = { after: null, seq: 0 };
  /** The plane's refusal of the listing last said (status and code): said once, until a listing succeeds. */
  private lastRefusalSaid: string | null = null;
  /** Requests this worker met and has not settled: their retry time (a failure), or 0 (not this worker's yet). */
  private readonly retries = new Map<string, { attempts: number; at: number; request: RunRequestView }>();

  constructor(private readonly o: RequestApplierOptions) {}

  /** The soonest retry due, for the worker's sleep (null: none). */
  nextDue(): number | null {
    let at: number | null = null;
    for (const r of this.retries.values()) if (r.attempts > 0) at = at === null ? r.at : Math.min(at, r.at);
    return at === null ? null : Math.max(at, this.lastAsk + this.o.pollMs);
  }

  /** Requests remembered (waiting for a retry). */
  get remembered(): number {
    return this.retries.size;
  }

  /**
   * One pass: one page of the plane's open requests after this worker's cursor, oldest first, each applied (at most
   * once per `pollMs` asked). The cursor moves on a page per pass and starts again from the first open request after
   * the last page: a pass reads one page however many requests wait (those no worker holds stay open).
   */
  async round(): Promise<void> {
    if (Date.now() - this.lastAsk < this.o.pollMs) return;
    this.lastAsk = Date.now();
    let open: RunRequestView[];
    const fromSeq = this.cursor.seq;
    let toSeq = Number.POSITIVE_INFINITY;
    try {
      const page = await this.o.replica.openRequests(this.cursor.after, this.o.pageSize, this.o.runs);
      open = page.items;
      if (page.nextCursor && open.length) toSeq = open[open.length - 1].seq;
      this.cursor = page.nextCursor && open.length ? { after: page.nextCursor, seq: toSeq } : { after: null, seq: 0 };
    } catch (e) {
      this.listingFailed(e);
      return;
    }
    this.lastRefusalSaid = null;
    const seen = new Set(open.map((r) => r.requestId));
    for (const r of open) {
      if (this.o.signal.aborted) return;
      const due = this.retries.get(r.requestId);
      if (due && due.at > Date.now()) continue;
      await this.apply(r, due?.attempts ?? 0);
    }
    // a request this worker failed on that is no longer open: settled by another, its final outcome here
    for (const [id, r] of this.retries) {
      // only this page's range says a request is no longer open
      const inPage = r.request.seq > fromSeq && r.request.seq <= toSeq;
      if (!inPage || seen.has(id) || this.o.signal.aborted) continue;
      this.retries.delete(id);
      if (r.attempts === 0) continue;
      const now = await this.o.replica.requestAtPlane(id).catch(() => null);
      if (now) this.settledElsewhere(now);
    }
  }

  /**
   * Say why the plane did not list the open requests. A failure to reach it (a network error, a timeout, a 5xx) is
   * said each pass, as any failure that may pass. A refusal (a 4xx: the plane answered, and answers the same until
   * it is upgraded, the key replaced or given the scope) is said once, until a listing succeeds or the plane says
   * something else: a 404, this plane does not record run requests (one older than them); a 401, the key is refused
   * (the plane's words name the revoked key; the replica goes auth_failed, as when a feed is refused). The worker
   * goes on serving decisions, and asks again every `pollMs`.
   */
  private listingFailed(e: unknown): void {
    const code = (e as { code?: string })?.code ?? null;
    const details = (e as { details?: { status?: unknown; planeCode?: unknown } } | null)?.details;
    const status = typeof details?.status === 'number' ? details.status : null;
    if (status === null || status < 400 || status >= 500) {
      this.o.warn?.({ err: e, code }, 'could not list run requests');
      return;
    }
    const planeCode = typeof details?.planeCode === 'string' ? details.planeCode : null;
    const refusal = `${status} ${planeCode}`;
    if (this.lastRefusalSaid === refusal) return;
    this.lastRefusalSaid = refusal;
    const said = (e as Error)?.message ?? String(e);
    this.o.warn?.(
      { err: e, code, status, planeCode },
      status === 404
        ? `this plane does not record run requests (GET /v1/requests answered 404${planeCode ? ` ${planeCode}` : ''}: a plane older than run requests, or a proxy that does not pass that path); decisions are still applied, retry, recover and fork requests are not until the plane is upgraded (said once; asked again every ${this.o.pollMs} ms)`
        : status === 401
          ? `the plane refused this worker's key, so no run request is applied until the key is replaced (replica.setApiKey): ${said}`
          : `the plane refused to list run requests (said once until it lists them): ${said}`,
    );
  }

  private report(o: RequestOutcome): void {
    try {
      this.o.onOutcome(o);
    } catch {
      // a listener cannot stop the worker
    }
  }

  /**
   * The run's agent, and the run in this store up to the request's row: restored from the plane when the store
   * does not hold the run (only when `restore`), caught up from it when it holds an older copy. Null: not this
   * worker's. A store still without the row after that throws STORE_BEHIND (tried again, never settled).
   */
  private async ready(r: RunRequestView): Promise<Agent | null> {
    if (!(await this.o.store.latest(r.executionId))) {
      if (!this.o.restore) return null;
      await this.o.replica.restore(r.executionId);
    } else if (await this.behind(r)) await this.o.replica.restore(r.executionId);
    if (await this.behind(r))
      throw new WaymarkError(
        ErrorCode.STORE_BEHIND,
        `this store's copy of '${r.executionId}' lacks row #${r.checkpointSeq} (${r.checkpointId}) the request names, even after catching up with the plane; the request is left open`,
        { details: { executionId: r.executionId, checkpointId: r.checkpointId, checkpointSeq: r.checkpointSeq } },
      );
    return (await this.o.agentFor(r)) ?? null;
  }

  /**
   * Whether this store is behind the request's row (it does not hold it): only a store at or past the row may
   * judge that the run moved on or that the row cannot be forked from. A store that cannot be read counts as behind.
   */
  private async behind(r: RunRequestView): Promise<boolean> {
    const row = await this.o.store.getById(r.checkpointId).catch(() => null);
    return !row || row.executionId !== r.executionId;
  }

  private async apply(r: RunRequestView, attempts: number): Promise<void> {
    try {
      const agent = await this.ready(r);
      if (!agent) {
        this.retries.set(r.requestId, { attempts: 0, at: 0, request: r });
        return;
      }
      let result: RunResult;
      if (r.action === 'fork') {
        const claim = await this.o.replica.claimRequest(r.requestId);
        if (claim.outcome === 'settled') return this.settledElsewhere(claim.request);
        // another writer forks it: settled when it reports (this worker looks again while it stays open)
        if (claim.outcome === 'lost') {
          this.retries.set(r.requestId, { attempts: attempts + 1, at: Date.now() + this.o.pollMs, request: r });
          return;
        }
        const forkId = r.forkExecutionId!;
        // the fork has rows here already: made before (a report that never reached the plane)
        if (await this.o.store.latest(forkId)) return this.settle(r, await this.forkMade(forkId), null);
        // once its first row is written the plane is told it started: the request is no longer open, nobody forks it again
        let started: Promise<unknown> | null = null;
        try {
          result = await agent.fork(r.executionId, {
            checkpointId: r.checkpointId,
            executionId: forkId,
            onEvent: (e) => {
              if (started || e.executionId !== forkId) return;
              started = this.o.replica.settleRequest(r.requestId, { outcome: 'started' }).catch((err: unknown) => {
                this.o.warn?.(
                  { err, requestId: r.requestId },
                  'could not tell the plane a fork started (its claim still holds)',
                );
              });
            },
          });
        } finally {
          await started;
        }
      } else {
        result = await agent.resume(r.executionId, undefined, {
          expectNewestId: r.checkpointId,
          withoutPlane: this.o.withoutPlane,
        });
      }
      await this.settle(r, { outcome: 'applied', runStatus: result.status }, result);
    } catch (e) {
      const code = (e as { code?: string })?.code ?? null;
      const message = (e as Error)?.message ?? String(e);
      // a fork made (its rows here, by this worker now or before): applied, with the fork's status as its rows say it
      if (r.action === 'fork' && (await this.o.store.latest(r.forkExecutionId!).catch(() => null)))
        return this.settle(r, await this.forkMade(r.forkExecutionId!), null);
      // a store behind the request's row judges nothing: the request stays open for a store that is not
      const settles = code !== null && (MOVED.has(code) || REFUSED.has(code)) && !(await this.behind(r));
      if (settles && MOVED.has(code)) return this.settle(r, { outcome: 'superseded', code, message }, null);
      if (settles) return this.settle(r, { outcome: 'refused', code, message }, null);
      const retryInMs = Math.round(backoffDelay(attempts + 1, this.o.retry));
      this.retries.set(r.requestId, { attempts: attempts + 1, at: Date.now() + retryInMs, request: r });
      this.summary.failed++;
      this.report({ outcome: 'failed', request: r, error: { code, message }, attempts: attempts + 1, retryInMs });
    }
  }

  /** The report of a fork this store holds: applied, with its status from its newest row. */
  private async forkMade(forkId: string): Promise<{ outcome: 'applied'; runStatus: string }> {
    const newest = (await this.o.store.latest(forkId))!;
    const runStatus =
      newest.step === 'run_end' ? newest.status : newest.status === 'interrupted' ? 'paused' : 'running';
    return { outcome: 'applied', runStatus };
  }

  /**
   * Report to the plane and settle here: the plane's answer says whether this
   * worker's report took (applied by it: `applied`) or another applier's
   * stands (`applied_elsewhere`). A report the plane did not take is tried
   * again (the request stays open there).
   */
  private async settle(
    r: RunRequestView,
    o: { outcome: 'applied' | 'superseded' | 'refused'; code?: string; message?: string; runStatus?: string },
    result: RunResult | null,
  ): Promise<void> {
    let now: RunRequestView;
    try {
      now = await this.o.replica.settleRequest(r.requestId, o);
    } catch (e) {
      const prev = this.retries.get(r.requestId)?.attempts ?? 0;
      const retryInMs = Math.round(backoffDelay(prev + 1, this.o.retry));
      this.retries.set(r.requestId, { attempts: prev + 1, at: Date.now() + retryInMs, request: r });
      this.summary.failed++;
      this.report({
        outcome: 'failed',
        request: r,
        error: { code: (e as { code?: string })?.code ?? null, message: (e as Error)?.message ?? String(e) },
        attempts: prev + 1,
        retryInMs,
      });
      return;
    }
    this.retries.delete(r.requestId);
    const mine = now.settledBy === this.o.store.writerId;
    if (o.outcome === 'applied' && result && mine) {
      this.summary.applied++;
      this.report({ outcome: 'applied', request: now, status: result.status, result });
    } else this.settledElsewhere(now, mine ? o : undefined);
  }

  /** A request settled at the plane, by another worker or (`own`) by this one's report without a run of its own. */
  private settledElsewhere(now: RunRequestView, own?: { outcome: string; code?: string; message?: string }): void {
    this.retries.delete(now.requestId);
    if (now.state === 'applied' || now.state === 'started') {
      this.summary.appliedElsewhere++;
      this.report({ outcome: 'applied_elsewhere', request: now, appliedBy: now.settledBy ?? 'another writer' });
    } else if (now.state === 'refused') {
      this.summary.refused++;
      this.report({
        outcome: 'refused',
        request: now,
        code: now.code ?? own?.code ?? ErrorCode.REQUEST_REFUSED,
        reason: now.message ?? own?.message ?? '',
      });
    } else {
      this.summary.superseded++;
      this.report({
        outcome: 'superseded',
        request: now,
        code: now.code ?? own?.code ?? ErrorCode.MOVED_ON,
        reason: now.message ?? own?.message ?? 'the run moved on',
      });
    }
  }
}
