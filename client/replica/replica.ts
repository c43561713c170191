/**
 * The outbox drain: replicates a store's outbox to a plane.
 *
 * States
 *   idle        nothing in flight; a write (debounced), the poll timer or flush() starts a round
 *   draining    a round is sending batches, oldest first, until the outbox is empty
 *   backoff     the last round failed (5xx, 429, timeout, reset, or a request-level refusal
 *               such as 400 or 404); a timer retries on its own (429/503: at least
 *               Retry-After; otherwise exponential backoff with full jitter); flush() ends it
 *   auth_failed the plane refused the key (401/403); nothing is quarantined; setApiKey() resumes
 *   stopped     stop() was called; timers cleared, sockets closed
 *
 * Only the plane's per-row answers (inside a 200) quarantine anything: they
 * are applied in one local transaction, accepted and duplicate rows synced,
 * rejected rows quarantined with the plane's reason. The plane never refuses
 * one row with a 4xx: a 400 is about the request (protocol, envelope, a proxy
 * speaking another protocol), so it fails the batch and the rows wait. 413
 * halves the batch (a single row still too large is quarantined). A kick that
 * arrives while a round is in flight starts another round after it, so the
 * last row of a run is never left behind. Rows wait with no age or count bound.
 *
 * Every outcome carries its time: `lastErrorAt`, and `lastSuccessAt` when a
 * round ends with the outbox empty; an error older than the last success is
 * history, not the current state. Listeners are isolated: one that throws is
 * reported as `listener_error` and never stops the drain (the retry timer is
 * armed before `state` is emitted).
 */
import { EventEmitter } from 'node:events';
import type { Dispatcher } from 'undici';
import { LIMITS } from '../../shared/limits.js';
import { IngestResponse, PROTOCOL_VERSION } from '../../shared/protocol.js';
import type { Checkpointer, OutboxEntry, PlaneGuard } from '../checkpointer.js';
import { noFaults, type FaultHook } from '../faults.js';
import { PlaneHttp } from './http.js';
import { backoffDelay, retryAfter } from '../retry.js';
import { changeFeedOf, type ChangeFeedConsumer, type ChangePull, type RunUpdate } from './change-feed.js';
import { DecisionFeedConsumer, type PullResult } from './decision-feed.js';
import { restoreFromPlane } from './restore.js';
import { adoptLostRuns, adoptPlaneBranch } from './branch.js';
import { adoptCancel, cancelThroughPlane, type PlaneCancelResult } from './cancel.js';
import { BacklogCount } from './backlog-count.js';
import { sendingNote } from '../store/outbox.js';
import { apiKeyProblem, refuse } from '../../support/validate.js';
import {
  replicaOptionProblems,
  type DrainState,
  type FlushResult,
  type ReplicaEvents,
  type ReplicaOptions,
  type ReplicaStatus,
  type RoundOutcome,
} from './replica-types.js';
import {
  claimAtPlane,
  foreignBody,
  leaseAtPlane,
  ping,
  releaseClaim,
  runAtPlane,
  takeoverAtPlane,
  type Acquisition,
  type LeaseAsk,
  type PlaneCaller,
  type PlaneClaim,
  type PlaneLease,
  type PlanePing,
  type PlaneRun,
  type PlaneTakeover,
} from './plane-calls.js';
import { fenceRunners } from '../runtime/lease.js';
import { LeaseLost, RunCancelled } from '../errors.js';
import { isCancelMarker, runCancelled } from '../store/cancel.js';

export type { PlaneClaim, PlaneLease, PlanePing, PlaneRun, PlaneTakeover } from './plane-calls.js';
export type { ChangePull, RunUpdate } from './change-feed.js';
export type {
  DrainState,
  FlushResult,
  ReplicaEvents,
  ReplicaOptions,
  ReplicaStatus,
  RoundOutcome,
} from './replica-types.js';

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

export class Replica extends EventEmitter<ReplicaEvents> {
  readonly writerId: string;
  private apiKey: string;
  private readonly http: PlaneHttp;
  private readonly o: Required<
    Omit<
      ReplicaOptions,
      | 'dispatcher'
      | 'writerId'
      | 'faults'
      | 'apiKey'
      | 'url'
      | 'decisionWaitSeconds'
      | 'followChanges'
      | 'changeWaitSeconds'
    >
  >;
  private readonly fault: FaultHook;
  private state: DrainState = 'idle';
  private kicked = false;
  private round: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private nextAttemptAt: number | null = null;
  private failures = 0;
  private lastError: string | null = null;
  private lastErrorAt: string | null = null;
  private lastSuccessAt: string | null = null;
  private lastAckAt: string | null = null;
  private rowsSynced = 0;
  /** An ingest was sent and no answer came (a timeout, a reset): a plane may hold what it carried. */
  private unanswered = false;
  /** The note of the batch in flight as last written to the store (`sendingNote` text); null: not written by this replica yet. */
  private inFlight: string | null = null;
  private maxRows: number;
  private readonly unsubscribe: () => void;
  /** Removes the plane guard this replica installed on its store (connectPlane), if any. */
  private unguard: (() => void) | null = null;
  private readonly changes: ChangeFeedConsumer;
  private readonly url: string;
  private readonly dispatcher: Dispatcher | undefined;
  private readonly decisions: DecisionFeedConsumer;
  private readonly backlogCount: BacklogCount;

  constructor(
    readonly store: Checkpointer,
    options: ReplicaOptions,
  ) {
    super();
    // before anything starts: a refused replica holds no timer, no socket, no subscription to the store
    refuse('Replica', replicaOptionProblems(options), 'nothing was started');
    this.apiKey = options.apiKey;
    this.writerId = options.writerId ?? store.writerId;
    this.http = new PlaneHttp(options.url, { dispatcher: options.dispatcher });
    this.url = options.url;
    this.dispatcher = options.dispatcher;
    this.decisions = new DecisionFeedConsumer(
      store,
      () => this.apiKey,
      { decision: (d) => this.emit('decision', d), skipped: (x) => this.emit('decision_skipped', x) },
      {
        keyRefused: (m, key) => this.keyRefused(m, key),
        url: options.url,
        dispatcher: options.dispatcher,
        waitSeconds: options.decisionWaitSeconds,
        backoffBaseMs: options.backoffBaseMs,
        backoffCapMs: options.backoffCapMs,
      },
    );
    this.o = {
      batchRows: Math.min(options.batchRows ?? 500, LIMITS.batchRows),
      batchBytes: Math.min(options.batchBytes ?? 4 * 1024 * 1024, LIMITS.batchBytes),
      debounceMs: options.debounceMs ?? 50,
      pollMs: options.pollMs ?? 5000,
      timeoutMs: options.timeoutMs ?? 30_000,
      backoffBaseMs: options.backoffBaseMs ?? 250,
      backoffCapMs: options.backoffCapMs ?? 30_000,
    };
    this.maxRows = this.o.batchRows;
    this.backlogCount = new BacklogCount(store);
    this.fault = options.faults ?? noFaults;
    this.unsubscribe = store.onWrite(() => this.kick());
    if (this.o.pollMs > 0) {
      this.pollTimer = setInterval(() => {
        if (this.state === 'idle') this.kick(0);
      }, this.o.pollMs);
      this.pollTimer.unref();
    }
    this.changes = changeFeedOf(
      store,
      this.writerId,
      () => this.apiKey,
      (u) => this.runUpdated(u),
      {
        ...options,
        timeoutMs: this.o.timeoutMs,
        backoffBaseMs: this.o.backoffBaseMs,
        keyRefused: (m, key) => this.keyRefused(m, key),
      },
    );
    if (options.followChanges !== false) this.changes.follow();
    this.kick(0);
  }

  /**
   * Another machine's rows of a run this store holds were imported (or its
   * copy went another way): a runner of it in this process lost the run and
   * stops before its next step or effect, told why (cancelled, or taken).
   */
  private runUpdated(u: RunUpdate): void {
    if ((u.outcome === 'caught_up' && u.inserted > 0) || u.outcome === 'diverged') {
      this.fenceRun(
        u.executionId,
        u.status === 'cancelled',
        `another machine's rows of the run reached this store (${u.by ?? 'another writer'}, plane seq ${u.planeSeq})`,
      );
      // cancelled there while this copy went further: this copy says cancelled too, with a marker of its own
      if (u.outcome === 'diverged' && u.status === 'cancelled')
        void this.adoptCancel(u.executionId).catch(() => undefined);
    }
    this.emit('run_updated', u);
  }

  /** Fence this process's runners of a run (RunCancelled for a cancelled one, else LeaseLost), and say so once per run. */
  private fenceRun(executionId: string, cancelled: boolean, reason: string): void {
    if (cancelled) {
      // the plane's marker was imported with the rows: the runner is told its reason
      const generic = new RunCancelled(executionId, { reason: 'cancelled at the plane', checkpointId: null });
      void this.store.latest(executionId).then(
        (last) => fenceRunners(this.store, executionId, last && isCancelMarker(last) ? runCancelled(last) : generic),
        () => fenceRunners(this.store, executionId, generic),
      );
    } else
      fenceRunners(
        this.store,
        executionId,
        new LeaseLost(executionId, { epoch: 0, holder: this.writerId, current: null }, reason),
      );
    if (this.toldLost.has(executionId)) return;
    this.toldLost.add(executionId);
    this.emit('run_lost', { executionId, reason });
  }
  /** The runs this replica has said `run_lost` of. */
  private readonly toldLost = new Set<string>();

  private setState(s: DrainState): void {
    if (this.state === s) return;
    this.state = s;
    this.emit('state', s);
    if (s !== 'stopped') void this.note();
  }

  /**
   * Keep the drain's last outcome in the store, for `waymark sync status` in
   * another process. What this process has not seen yet (its first success,
   * ack or error) is the earlier processes' as noted, never erased: a drain
   * started later says when the store last emptied its outbox, whoever did.
   */
  private async note(): Promise<void> {
    try {
      const earlier = await (this.earlierNote ??= this.store.getMeta('drain').then(noteOf, (): DrainNote => ({})));
      await this.store.setMeta(
        'drain',
        JSON.stringify({
          state: this.state,
          lastError: this.lastError ?? earlier.lastError ?? null,
          lastErrorAt: this.lastErrorAt ?? earlier.lastErrorAt ?? null,
          lastSuccessAt: this.lastSuccessAt ?? earlier.lastSuccessAt ?? null,
          lastAckAt: this.lastAckAt ?? earlier.lastAckAt ?? null,
          at: new Date().toISOString(),
        }),
      );
    } catch {
      // the note is informational; the store may be closing
    }
  }
  /** The note an earlier process left, read once (the first note of this process). */
  private earlierNote: Promise<DrainNote> | null = null;

  /**
   * Listeners are isolated: each runs in turn and one that throws is reported
   * as `listener_error` ({ event, error }) instead of unwinding into the drain.
   *
   * Two overloads because `EventEmitter<T>['emit']` changed shape in
   * @types/node 25 (it also takes any other name, with any arguments): the
   * first matches @types/node 20-24, the second 25 and later, so the published
   * declaration type-checks against either (test/types/consumer-node-types.test.ts).
   * Both keep a ReplicaEvents name's arguments checked.
   */
  override emit<K extends keyof ReplicaEvents>(event: K, ...args: ReplicaEvents[K]): boolean;
  override emit<E extends string | symbol>(
    event: E,
    ...args: E extends keyof ReplicaEvents ? ReplicaEvents[E] : unknown[]
  ): boolean;
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    const listeners = this.rawListeners(event) as ((...a: unknown[]) => unknown)[];
    for (const listener of listeners) {
      try {
        listener.apply(this, args);
      } catch (error) {
        if (event !== 'listener_error')
          this.emit('listener_error', { event: event as Exclude<keyof ReplicaEvents, 'listener_error'>, error });
      }
    }
    return listeners.length > 0;
  }

  /**
   * A feed's round refused for the key (401: unknown or revoked; a 403, a key
   * without the feed's scope, may still drain and is not this): the
   * replica is `auth_failed`, as when the drain is refused, so its state, its
   * 'state' event and `waymark sync status` say so at once; a worker that only
   * follows decisions heard nothing before (nothing was left to drain).
   * `setApiKey` starts it again.
   */
  private keyRefused(message: string, apiKey: string | null): void {
    // a round sent with the key setApiKey replaced since: not this key's refusal
    if (this.state === 'stopped' || (apiKey !== null && apiKey !== this.apiKey)) return;
    this.fail(message);
    if (this.state === 'auth_failed') return;
    this.setState('auth_failed');
  }

  private fail(message: string): void {
    this.lastError = message;
    this.lastErrorAt = new Date().toISOString();
  }

  /** Ask for a round soon (debounced). Safe to call any time. */
  kick(delayMs = this.o.debounceMs): void {
    if (this.state === 'stopped' || this.state === 'auth_failed') return;
    this.kicked = true;
    if (this.round || this.state === 'backoff') return;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.startRound();
    }, delayMs);
    this.timer.unref();
  }

  private startRound(): void {
    if (this.round || this.state === 'stopped' || this.state === 'auth_failed') return;
    this.kicked = false;
    this.nextAttemptAt = null;
    this.setState('draining');
    this.round = this.drain()
      .then((outcome) => {
        this.round = null;
        if (this.state === 'stopped') return;
        if (outcome.kind === 'done') {
          this.failures = 0;
          this.lastSuccessAt = new Date().toISOString();
          this.setState('idle');
          this.emit('drained');
          if (this.kicked) this.kick(0);
        } else if (outcome.kind === 'auth') {
          this.setState('auth_failed');
        } else {
          this.failures++;
          this.scheduleRetry(
            backoffDelay(
              this.failures,
              { baseMs: this.o.backoffBaseMs, capMs: this.o.backoffCapMs },
              outcome.retryAfterMs ?? 0,
            ),
          );
        }
        this.emit('round', outcome);
      })
      .catch((e: unknown) => {
        // a local store failure: report it and retry on the backoff schedule
        this.round = null;
        this.fail(`local store: ${(e as Error).message}`);
        this.failures++;
        this.scheduleRetry(backoffDelay(this.failures, { baseMs: this.o.backoffBaseMs, capMs: this.o.backoffCapMs }));
      });
  }

  /** Enter backoff and start the next round on its own after `wait` ms (armed before anyone is told). */
  private scheduleRetry(wait: number): void {
    this.nextAttemptAt = Date.now() + wait;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.startRound();
    }, wait);
    this.timer.unref();
    this.setState('backoff');
  }

  /** Start a round now unless one is in flight: ends a backoff or a debounce. */
  private startNow(): void {
    if (this.round || this.state === 'stopped' || this.state === 'auth_failed') return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.startRound();
  }

  private async drain(): Promise<RoundOutcome> {
    for (;;) {
      if (this.state === 'stopped') return { kind: 'done' };
      const batch = await this.store.fetchUnsynced({ limit: this.maxRows, maxBytes: this.o.batchBytes });
      this.fault('drain.afterFetch');
      if (!batch.length) return { kind: 'done' };
      const broken = batch.filter((e) => !e.event);
      if (broken.length) {
        await this.store.applyResults({
          quarantined: Object.fromEntries(broken.map((e) => [e.id, `local: ${e.problem}`])),
        });
      }
      const sendable = batch.filter((e) => e.event);
      if (!sendable.length) continue;
      try {
        await this.send(sendable);
        this.maxRows = Math.min(this.o.batchRows, this.maxRows * 2);
      } catch (e) {
        if (!(e instanceof HttpFailure)) {
          this.fail(`network: ${(e as Error).message}`);
          return { kind: 'retry', retryAfterMs: null };
        }
        this.fail(`${e.status}: ${e.message}`);
        if (e.status === 401 || e.status === 403) return { kind: 'auth' };
        if (e.status === 413) {
          if (sendable.length > 1) {
            this.maxRows = Math.max(1, Math.floor(sendable.length / 2));
            continue;
          }
          await this.store.applyResults({ quarantined: { [sendable[0].id]: `plane: 413 ${e.message}` } });
          continue;
        }
        return { kind: 'retry', retryAfterMs: e.retryAfterMs };
      }
    }
  }

  /** The store's note of the runs in flight (`noteSending`), written only when it changes. */
  private async noteInFlight(runs: string[]): Promise<void> {
    const text = sendingNote(runs);
    if (text === this.inFlight) return;
    await this.store.noteSending(runs);
    this.inFlight = text;
  }

  private async send(entries: OutboxEntry[]): Promise<void> {
    const bytes = entries.reduce((n, e) => n + e.bytes, 0);
    const body = {
      protocol: PROTOCOL_VERSION,
      writerId: this.writerId,
      backlog: await this.backlogCount.take(entries.length, bytes),
      rows: entries.map((e) => e.event),
    };
    const runs = [...new Set(entries.map((e) => e.executionId))];
    // from here the plane may commit the batch though its answer never arrives: its runs count as held by the plane
    await this.noteInFlight(runs);
    const res = await this.http
      .request('POST', '/v1/ingest', { apiKey: this.apiKey, json: body, timeoutMs: this.o.timeoutMs })
      .catch(async (e: unknown) => {
        // no connection was ever made (refused, no such host), and no earlier attempt went unanswered (a plane may
        // have committed that one and died since): no plane holds anything of these runs for this drain
        if (neverConnected(e) && !this.unanswered) await this.noteInFlight([]);
        else this.unanswered = true;
        throw e;
      });
    this.unanswered = false;
    this.fault('drain.afterResponse');
    if (res.status !== 200) {
      // a refusal of the request (not a timeout): the plane committed none of it, so none of its runs is held there for it
      if (res.status >= 400 && res.status < 500 && res.status !== 408) await this.noteInFlight([]);
      const msg =
        (res.body as { error?: { message?: string } } | null)?.error?.message ?? foreignBody(res.status, res.body);
      throw new HttpFailure(res.status, msg, retryAfter(res.headers['retry-after']));
    }
    const parsed = IngestResponse.safeParse(res.body);
    if (!parsed.success || parsed.data.results.length !== entries.length) {
      throw new HttpFailure(502, 'the plane answered 200 with a malformed body');
    }
    const synced: string[] = [];
    const quarantined: Record<string, string> = {};
    const acked = new Set<string>();
    parsed.data.results.forEach((r, i) => {
      if (r.status === 'rejected') quarantined[entries[i].id] = `plane: ${r.code}: ${r.reason}`;
      else {
        synced.push(entries[i].id);
        acked.add(entries[i].executionId);
      }
    });
    await this.store.applyResults({ synced, quarantined });
    // a run whose every row of the batch the plane refused is not held there for this batch
    if (acked.size < runs.length) await this.noteInFlight(runs.filter((r) => acked.has(r)));
    this.backlogCount.answered(entries.length, bytes);
    this.fault('drain.afterApply');
    this.rowsSynced += synced.length;
    this.lastAckAt = new Date().toISOString();
    this.emit('ack', { synced: synced.length, quarantined: Object.keys(quarantined).length });
    if (Object.keys(quarantined).length)
      this.emit('quarantined', { ids: Object.keys(quarantined), reason: Object.values(quarantined)[0] });
    // another machine took a run of this writer over while it was away: say so once per run
    const lost = new Map<string, { reason: string; cancelled: boolean }>();
    parsed.data.results.forEach((r, i) => {
      if (r.status === 'rejected' && r.code === 'taken_over')
        lost.set(entries[i].executionId, { reason: r.reason, cancelled: r.cancelled === true });
    });
    // a runner of it in this process stops before its next step or effect: the plane holds another branch now
    for (const [executionId, l] of lost) this.fenceRun(executionId, l.cancelled, l.reason);
  }

  /** Replace the key; a drain stopped in auth_failed starts again. A key that cannot be one (empty, whitespace in it) is INVALID_OPTIONS, the old key kept. */
  setApiKey(apiKey: string): void {
    const problem = apiKeyProblem(apiKey);
    refuse('setApiKey', problem ? [problem] : [], 'the key was not changed');
    this.apiKey = apiKey;
    if (this.state === 'auth_failed') {
      this.setState('idle');
      this.kick(0);
    }
  }

  async status(): Promise<ReplicaStatus> {
    const s = await this.store.outboxStats();
    return {
      state: this.state,
      pendingRows: s.pendingCount,
      pendingBytes: s.pendingBytes,
      oldestPendingAgeMs: s.oldestPendingAgeMs,
      quarantinedCount: s.quarantinedCount,
      lastQuarantineReason: s.lastQuarantineReason,
      lastAckAt: this.lastAckAt,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      lastSuccessAt: this.lastSuccessAt,
      consecutiveFailures: this.failures,
      nextAttemptAt: this.nextAttemptAt ? new Date(this.nextAttemptAt).toISOString() : null,
      rowsSynced: this.rowsSynced,
    };
  }

  /**
   * Drain now and wait until nothing is pending, or the timeout passes. Tries
   * at once whatever the state (a backoff ends; a round in flight is awaited),
   * except `auth_failed` and `stopped`, which return at once. After a failed
   * attempt it follows the backoff schedule until the deadline. Resolves with
   * what it did (`sent`, `rounds`) and the status either way (check `pendingRows`).
   */
  async flush(options: { timeoutMs?: number } = {}): Promise<FlushResult> {
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    const syncedBefore = this.rowsSynced;
    let rounds = 0;
    const counted = () => rounds++;
    this.on('round', counted);
    try {
      this.startNow();
      for (;;) {
        if (this.state === 'stopped' || this.state === 'auth_failed') break;
        const s = await this.store.outboxStats();
        if (s.pendingCount === 0 && !this.round) break;
        if (Date.now() >= deadline) break;
        if (this.state === 'idle') this.startNow();
        await new Promise<void>((resolve) => {
          // not unref'd: the caller is awaiting this, so it must keep the process alive
          const t = setTimeout(done, Math.max(1, Math.min(100, deadline - Date.now())));
          const self = this;
          function done() {
            clearTimeout(t);
            self.off('round', done);
            resolve();
          }
          this.once('round', done);
        });
      }
    } finally {
      this.off('round', counted);
    }
    return { ...(await this.status()), sent: this.rowsSynced - syncedBefore, rounds };
  }

  /**
   * Install `guard` as the store's plane guard for as long as this replica
   * runs (connectPlane does): `stop()` removes it. Replaces a guard this
   * replica installed before; a stopped replica installs nothing.
   */
  guardStore(guard: PlaneGuard): void {
    if (this.state === 'stopped') return;
    this.unguard?.();
    this.unguard = this.store.planeGuard.install(guard);
  }

  /** Stop: removes its plane guard from the store; no more rounds; waits for the one in flight; closes sockets. Idempotent. */
  async stop(): Promise<void> {
    this.unguard?.();
    this.unguard = null;
    if (this.state === 'stopped') return;
    this.setState('stopped');
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.timer = null;
    this.pollTimer = null;
    await this.round?.catch(() => {});
    await this.changes.stop();
    await this.decisions.stop();
    await this.http.close();
    this.removeAllListeners();
  }

  /** What this replica still holds open (all false after stop()). */
  get handles(): {
    retryTimer: boolean;
    pollTimer: boolean;
    roundInFlight: boolean;
    socketsOpen: boolean;
    followingChanges: boolean;
  } {
    return {
      retryTimer: this.timer !== null,
      pollTimer: this.pollTimer !== null,
      roundInFlight: this.round !== null,
      socketsOpen: !this.http.closed,
      followingChanges: this.changes.following,
    };
  }

  /** Who this drain's plane calls are made as (the key as it is now). */
  private get caller(): PlaneCaller {
    return {
      apiKey: this.apiKey,
      writerId: this.writerId,
      instance: this.store.instanceId,
      timeoutMs: this.o.timeoutMs,
    };
  }

  /**
   * One round of the change feed, without holding: catches up (or reports)
   * the runs this store holds that changed on the plane after the saved
   * cursor; each outcome is also emitted as `run_updated`.
   */
  pullChanges(): Promise<ChangePull> {
    return this.changes.pull(0);
  }

  /** The change feed's last error (null after a round that succeeded). */
  get changeFeedError(): string | null {
    return this.changes.lastError;
  }

  /**
   * Follow the plane's decision feed (a long poll) until the returned function
   * is called: each decision recorded on the plane is stored here and emitted
   * as `decision`. Several followers share one feed (serveDecisions follows while it serves).
   */
  followDecisions(): () => void {
    if (this.state === 'stopped') return () => {};
    return this.decisions.follow();
  }

  /** One round of the decision feed, without holding: stores what the plane has after the saved cursor. */
  pullDecisions(): Promise<PullResult> {
    return this.decisions.pull(0);
  }

  /** Restore a run from this replica's plane (restoreFromPlane with its url and key): rows, the open pause and its decision. */
  restore(executionId: string): ReturnType<typeof restoreFromPlane> {
    return restoreFromPlane(this.store, executionId, {
      url: this.url,
      apiKey: this.apiKey,
      dispatcher: this.dispatcher,
      timeoutMs: this.o.timeoutMs,
    });
  }

  /**
   * Cancel a run at this replica's plane (DESIGN §5b: a change of its owner),
   * whichever machine runs it: that machine stops at its next step. Then this
   * store's copy says cancelled too (the plane's marker restored, or one of its
   * own where it went further). Needs a key with the `cancel` scope.
   */
  cancel(executionId: string, options: { reason?: string } = {}): Promise<PlaneCancelResult> {
    return cancelThroughPlane(this.store, executionId, {
      url: this.url,
      apiKey: this.apiKey,
      dispatcher: this.dispatcher,
      timeoutMs: this.o.timeoutMs,
      reason: options.reason,
    });
  }

  /**
   * Take the plane's branch of a run in place of this store's (see
   * adoptPlaneBranch): for a copy that ran on after losing the run, once
   * nobody holds it (RunTakenOver's `free`). `recoverRuns` does this itself.
   */
  adoptPlaneBranch(executionId: string): Promise<boolean> {
    const restore = (beforeImport: () => Promise<void>) =>
      restoreFromPlane(this.store, executionId, {
        url: this.url,
        apiKey: this.apiKey,
        dispatcher: this.dispatcher,
        timeoutMs: this.o.timeoutMs,
        beforeImport,
      });
    return adoptPlaneBranch(
      this.store,
      executionId,
      { flush: (o) => this.flush(o), restore },
      { timeoutMs: this.o.timeoutMs },
    );
  }

  /** Take the plane's branch of every run this store lost there that nobody holds now (see adoptLostRuns); `recoverRuns` does this each pass. */
  adoptLostRuns(serves?: (agentPath: string) => boolean): Promise<string[]> {
    return adoptLostRuns(this.store, serves, {
      takeoverAtPlane: (id, seq, a) => this.takeoverAtPlane(id, seq, a),
      leaseAtPlane: (id, a) => this.leaseAtPlane(id, a),
      adoptPlaneBranch: (id) => this.adoptPlaneBranch(id),
    });
  }

  /** The plane said a run this store holds was cancelled there: make this copy say so too (see adoptCancel). */
  adoptCancel(executionId: string): ReturnType<typeof adoptCancel> {
    return adoptCancel(this.store, executionId, {
      url: this.url,
      apiKey: this.apiKey,
      dispatcher: this.dispatcher,
      timeoutMs: this.o.timeoutMs,
      reason: null,
    });
  }

  /** Where a run stands on this replica's plane (its status, its pause, claim and decision there); null when the plane does not hold it. */
  runAtPlane(executionId: string): Promise<PlaneRun | null> {
    return runAtPlane(this.http, this.caller, executionId);
  }

  /**
   * Claim a pause at the plane (see connectPlane's claim guard). Only a
   * network error, a timeout or 502/503/504 (a proxy with no plane behind it)
   * is `offline`; any other answer but 200 and 409 is `refused`: the plane is
   * up and said no (a revoked key, a missing scope, the pause not there).
   */
  claimAtPlane(
    executionId: string,
    checkpointId: string,
    decisionId?: string,
    acquisition: Acquisition = {},
  ): Promise<PlaneClaim> {
    return claimAtPlane(this.http, this.caller, executionId, checkpointId, decisionId, acquisition);
  }

  /**
   * Ask the plane to let this writer take over a run that is not paused
   * (POST /v1/executions/:id/takeover), its copy here ending at `seq`. Never throws.
   */
  takeoverAtPlane(
    executionId: string,
    seq: number,
    acquisition: Acquisition & { idempotencyKeys?: string[]; lastId?: string } = {},
  ): Promise<PlaneTakeover> {
    return takeoverAtPlane(this.http, this.caller, executionId, seq, acquisition);
  }

  /**
   * Renew a run's hold at the plane for the local lease `holder` (the owner's
   * heartbeat), or give it up (`release`). Never throws.
   */
  leaseAtPlane(executionId: string, lease: LeaseAsk, timeoutMs = this.o.timeoutMs): Promise<PlaneLease> {
    return leaseAtPlane(
      this.http,
      { ...this.caller, timeoutMs: Math.min(timeoutMs, this.o.timeoutMs) },
      executionId,
      lease,
    );
  }

  /**
   * Check the connection with one cheap authenticated call (GET /v1/whoami):
   * whether the plane answers, and what the key is there. Never throws.
   */
  ping(): Promise<PlanePing> {
    return ping(this.http, this.caller);
  }

  /**
   * Give back a plane claim this writer holds but never applied locally (it
   * crashed or gave up between the plane claim and the local one), so another
   * writer may claim the pause. True when a claim was released.
   */
  releaseClaim(executionId: string, checkpointId: string): Promise<boolean> {
    return releaseClaim(this.http, this.caller, executionId, checkpointId);
  }
}

/** Errors that say the request never reached any server: its batch is held by no plane. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function neverConnected(e: unknown): boolean {
  for (let c: unknown = e, depth = 0; c && depth < 5; c = (c as { cause?: unknown }).cause, depth++) {
    if (NOT_CONNECTED.has((c as { code?: string }).code ?? '')) return true;
  }
  return false;
}

/** What a drain noted of its outcomes (`waymark sync status` reads it). */
type DrainNote = Partial<Record<'lastError' | 'lastErrorAt' | 'lastSuccessAt' | 'lastAckAt', string | null>>;

/** The stored note, or nothing when there is none or it is not a note. */
function noteOf(text: string | null): DrainNote {
  try {
    const v = text ? (JSON.parse(text) as unknown) : null;
    return v && typeof v === 'object' ? (v as DrainNote) : {};
  } catch {
    return {};
  }
}
