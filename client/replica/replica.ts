/**
 * A store's connection to a plane, as its users know it: `connectPlane`
 * returns one. It holds no logic of its own beyond wiring its parts together
 * and their lifecycle (start on construction, `stop()`):
 *
 *   OutboxDrain     (drain.ts)         the outbox to the plane: rounds, backoff, status, flush
 *   change feed     (change-feed.ts)   runs this store holds that moved on elsewhere
 *   decision feed   (decision-feed.ts) decisions recorded on the plane, stored here
 *   PlaneClient     (plane-client.ts)  restore, cancel, adopt, claims, takeovers, leases, ping
 *   RunFence        (run-fence.ts)     runners of a run lost elsewhere stop, and `run_lost` says so
 *
 * All of them share its key (`setApiKey` replaces it for each) and emit
 * through it, where listeners are isolated: one that throws is reported as
 * `listener_error` and never stops the drain or a feed. A feed refused for
 * the key makes the whole replica `auth_failed`, as the drain's refusal does.
 */
import { EventEmitter } from 'node:events';
import type { Checkpointer, PlaneGuard } from '../checkpointer.js';
import { noFaults } from '../faults.js';
import { apiKeyProblem, refuse } from '../../support/validate.js';
import type { RunRequestOutcome, RunRequestView } from '../../shared/protocol.js';
import type { adoptCancel, PlaneCancelOptions, PlaneCancelResult } from './cancel.js';
import { changeFeedOf, type ChangeFeedConsumer, type ChangePull } from './change-feed.js';
import { DecisionFeedConsumer, type DecisionRuns, decisionRunsProblem, type PullResult } from './decision-feed.js';
import { drainSettings, OutboxDrain } from './drain.js';
import { PlaneHttp } from './http.js';
import type {
  Acquisition,
  LeaseAsk,
  PlaneClaim,
  PlaneLease,
  PlanePing,
  PlaneRun,
  PlaneTakeover,
} from './plane-calls.js';
import { PlaneClient } from './plane-client.js';
import {
  replicaOptionProblems,
  type FlushOptions,
  type FlushResult,
  type ReplicaEvents,
  type ReplicaOptions,
  type ReplicaStatus,
} from './replica-types.js';
import type { restoreFromPlane } from './restore.js';
import { RunFence } from './run-fence.js';

export type { PlaneClaim, PlaneLease, PlanePing, PlaneRun, PlaneTakeover } from './plane-calls.js';
export type { ChangePull, RunUpdate } from './change-feed.js';
export type {
  DrainState,
  FlushOptions,
  FlushResult,
  ReplicaEvents,
  ReplicaOptions,
  ReplicaStatus,
  RoundOutcome,
} from './replica-types.js';

/** A `runs` argument that is not 'all' or 'mine' is refused (INVALID_OPTIONS), before anything is asked. */
function refuseRuns(call: string, runs: unknown): void {
  const problem = decisionRunsProblem('runs', runs);
  if (problem) refuse(call, [problem]);
}

/**
 * A store's link to a plane (`connectPlane` makes one): it drains the store's outbox to the plane, follows the plane's
 * change and decision feeds, and arbitrates claims and takeovers there. Emits `ReplicaEvents`; `stop()` ends it.
 */
export class Replica extends EventEmitter<ReplicaEvents> {
  readonly writerId: string;
  private apiKey: string;
  /** The connection the drain's batches and the plane calls share (each feed has its own). */
  private readonly http: PlaneHttp;
  private readonly drain: OutboxDrain;
  private readonly changes: ChangeFeedConsumer;
  /** The decision feeds followed or pulled so far: the project's whole, this writer's own (made on first use: each has its own connection). */
  private readonly decisionFeeds = new Map<DecisionRuns, DecisionFeedConsumer>();
  private readonly decisionFeed: (runs: DecisionRuns) => DecisionFeedConsumer;
  private readonly plane: PlaneClient;
  private readonly fence: RunFence;
  /** Removes the plane guard this replica installed on its store (connectPlane), if any. */
  private unguard: (() => void) | null = null;

  constructor(
    readonly store: Checkpointer,
    options: ReplicaOptions,
  ) {
    super();
    // before anything starts: a refused replica holds no timer, no socket, no subscription to the store
    refuse('Replica', replicaOptionProblems(options), 'nothing was started');
    this.apiKey = options.apiKey;
    this.writerId = options.writerId ?? store.writerId;
    const apiKey = () => this.apiKey;
    const keyRefused = (message: string, key: string | null) => this.drain.keyRefused(message, key);
    this.http = new PlaneHttp(options.url, { dispatcher: options.dispatcher });
    this.decisionFeed = (runs) =>
      new DecisionFeedConsumer(
        store,
        apiKey,
        { decision: (d) => this.emit('decision', d), skipped: (x) => this.emit('decision_skipped', x) },
        {
          keyRefused,
          url: options.url,
          writerId: runs === 'mine' ? this.writerId : undefined,
          dispatcher: options.dispatcher,
          waitSeconds: options.decisionWaitSeconds,
          backoffBaseMs: options.backoffBaseMs,
          backoffCapMs: options.backoffCapMs,
          // decisions the whole feed stored before: the change feed must say when their pauses close
          followedWhole: () => this.changes.askDecided(),
          fellBack: (reason) => {
            // the whole feed brings decisions of runs this store never touched: its change feed must say when they close
            void this.changes.askDecided().catch(() => {});
            this.emit('feed_fallback', { feed: 'decisions', reason });
          },
        },
      );
    const settings = drainSettings(options);
    this.plane = new PlaneClient(store, {
      url: options.url,
      dispatcher: options.dispatcher,
      http: this.http,
      apiKey,
      writerId: this.writerId,
      timeoutMs: settings.timeoutMs,
      flush: (o) => this.flush(o),
      keyRefused,
    });
    this.fence = new RunFence(store, this.writerId, this, (id) => this.adoptCancel(id));
    this.drain = new OutboxDrain(store, settings, {
      writerId: this.writerId,
      http: this.http,
      apiKey,
      faults: options.faults ?? noFaults,
      events: this,
      lost: (executionId, cancelled, reason) => this.fence.lost(executionId, cancelled, reason),
    });
    this.changes = changeFeedOf(store, this.writerId, apiKey, (u) => this.fence.updated(u), {
      ...options,
      timeoutMs: settings.timeoutMs,
      backoffBaseMs: settings.backoffBaseMs,
      keyRefused,
      fellBack: (reason) => this.emit('feed_fallback', { feed: 'changes', reason }),
    });
    if (options.followChanges !== false) this.changes.follow();
    this.drain.start();
  }

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

  /** Ask for a round soon (debounced). Safe to call any time. */
  kick(delayMs?: number): void {
    this.drain.kick(delayMs);
  }

  /** Replace the key; a drain stopped in auth_failed starts again. A key that cannot be one (empty, whitespace in it) is INVALID_OPTIONS, the old key kept. */
  setApiKey(apiKey: string): void {
    const problem = apiKeyProblem(apiKey);
    refuse('setApiKey', problem ? [problem] : [], 'the key was not changed');
    this.apiKey = apiKey;
    this.drain.keyReplaced();
  }

  /** The drain's state now: what waits in the outbox, what was quarantined, the last ack and error, the next attempt. */
  status(): Promise<ReplicaStatus> {
    return this.drain.status();
  }

  /**
   * Drain now and wait until nothing is pending, or the timeout passes. Tries
   * at once whatever the state (a backoff ends; a round in flight is awaited),
   * except `auth_failed` and `stopped`, which return at once. After a failed
   * attempt it follows the backoff schedule until the deadline. Resolves with
   * what it did (`sent`, `rounds`) and the status either way (check `pendingRows`).
   */
  flush(options: FlushOptions = {}): Promise<FlushResult> {
    return this.drain.flush(options);
  }

  /**
   * Install `guard` as the store's plane guard for as long as this replica
   * runs (connectPlane does): `stop()` removes it. Replaces a guard this
   * replica installed before; a stopped replica installs nothing.
   */
  guardStore(guard: PlaneGuard): void {
    if (this.drain.state === 'stopped') return;
    this.unguard?.();
    this.unguard = this.store.planeGuard.install(guard);
  }

  /** Stop: removes its plane guard from the store; no more rounds; waits for the one in flight; closes sockets. Idempotent. */
  async stop(): Promise<void> {
    this.unguard?.();
    this.unguard = null;
    if (this.drain.state === 'stopped') return;
    await this.drain.stop();
    await this.changes.stop();
    for (const feed of this.decisionFeeds.values()) await feed.stop();
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
      ...this.drain.handles,
      socketsOpen: !this.http.closed,
      followingChanges: this.changes.following,
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

  /** The decision feed of `runs`, made on its first use. */
  private decisions(runs: DecisionRuns): DecisionFeedConsumer {
    let feed = this.decisionFeeds.get(runs);
    if (!feed) {
      feed = this.decisionFeed(runs);
      this.decisionFeeds.set(runs, feed);
      // made after stop(): stopped as the others were, its connection closed
      if (this.drain.state === 'stopped') void feed.stop();
    }
    return feed;
  }

  /**
   * Follow the plane's decision feed (a long poll) until the returned function
   * is called: each decision recorded on the plane is stored here and emitted
   * as `decision`. `runs` (serveDecisions' option): `'all'`, the project's
   * every decision; `'mine'`, only those of runs this writer delivered rows
   * of, restored or owns (a fleet's laptops, each alone on its runs, are
   * served their own decisions, not each other's). Several followers share
   * each feed (serveDecisions follows while it serves).
   */
  followDecisions(runs: DecisionRuns = 'all'): () => void {
    refuseRuns('Replica.followDecisions', runs);
    if (this.drain.state === 'stopped') return () => {};
    // said before the feed's first round (kept in the store even if this write fails: the flag is set in memory first)
    if (runs === 'all') void this.changes.askDecided().catch(() => {});
    return this.decisions(runs).follow();
  }

  /** One round of a decision feed (`runs` as followDecisions'), without holding: stores what the plane has after the saved cursor. */
  async pullDecisions(runs: DecisionRuns = 'all'): Promise<PullResult> {
    refuseRuns('Replica.pullDecisions', runs);
    if (runs === 'all') await this.changes.askDecided();
    return this.decisions(runs).pull(0);
  }

  /** Restore a run from this replica's plane (restoreFromPlane with its url and key): rows, the open pause and its decision. */
  restore(executionId: string): ReturnType<typeof restoreFromPlane> {
    return this.plane.restore(executionId);
  }

  /**
   * Cancel a run at this replica's plane (DESIGN §5b: a change of its owner),
   * whichever machine runs it: that machine stops at its next step. Then this
   * store's copy says cancelled too (the plane's marker restored, or one of its
   * own where it went further). Needs a key with the `cancel` scope.
   */
  cancel(executionId: string, options: PlaneCancelOptions = {}): Promise<PlaneCancelResult> {
    return this.plane.cancel(executionId, options);
  }

  /**
   * Take the plane's branch of a run in place of this store's (see
   * adoptPlaneBranch): for a copy that ran on after losing the run, once
   * nobody holds it (RunTakenOver's `free`). `recoverRuns` does this itself.
   */
  adoptPlaneBranch(executionId: string): Promise<boolean> {
    return this.plane.adoptPlaneBranch(executionId);
  }

  /** Take the plane's branch of every run this store lost there that nobody holds now (see adoptLostRuns); `recoverRuns` does this each pass. */
  adoptLostRuns(serves?: (agentPath: string) => boolean): Promise<string[]> {
    return this.plane.adoptLostRuns(serves);
  }

  /** The plane said a run this store holds was cancelled there: make this copy say so too (see adoptCancel). */
  adoptCancel(executionId: string): ReturnType<typeof adoptCancel> {
    return this.plane.adoptCancel(executionId);
  }

  /**
   * One page of the run requests (retry, recover, fork) waiting for the
   * application on this replica's plane, oldest first, after the cursor
   * (null: from the start; `nextCursor` null: the end); the decision worker
   * applies them. `runs` as followDecisions': `'mine'` lists only those of
   * runs this writer delivered rows of, restored or owns. Throws PLANE_ERROR when the plane
   * cannot be asked or refuses; a refused key (401) also makes the replica
   * `auth_failed`, as a feed's round does (so do the other run-request calls).
   */
  openRequests(
    after: string | null = null,
    limit?: number,
    runs: DecisionRuns = 'all',
  ): Promise<{ items: RunRequestView[]; nextCursor: string | null }> {
    refuseRuns('Replica.openRequests', runs);
    return this.plane.openRequests(after, limit, runs);
  }

  /** One run request as this replica's plane has it now (null: not there). Throws PLANE_ERROR when the plane cannot be asked. */
  requestAtPlane(requestId: string): Promise<RunRequestView | null> {
    return this.plane.requestAtPlane(requestId);
  }

  /** Take a fork request at the plane before forking: `won` by this writer, `lost` to another, or `settled` already. */
  claimRequest(requestId: string): Promise<{ outcome: 'won' | 'lost' | 'settled'; request: RunRequestView }> {
    return this.plane.claimRequest(requestId);
  }

  /** Report to the plane how applying a run request went; answers the request as it stands there (an earlier applier kept). */
  settleRequest(requestId: string, outcome: Omit<RunRequestOutcome, 'writerId'>): Promise<RunRequestView> {
    return this.plane.settleRequest(requestId, outcome);
  }

  /** Where a run stands on this replica's plane (its status, its pause, claim and decision there); null when the plane does not hold it. */
  runAtPlane(executionId: string): Promise<PlaneRun | null> {
    return this.plane.runAtPlane(executionId);
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
    return this.plane.claimAtPlane(executionId, checkpointId, decisionId, acquisition);
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
    return this.plane.takeoverAtPlane(executionId, seq, acquisition);
  }

  /**
   * Renew a run's hold at the plane for the local lease `holder` (the owner's
   * heartbeat), or give it up (`release`). Never throws.
   */
  leaseAtPlane(executionId: string, lease: LeaseAsk, timeoutMs?: number): Promise<PlaneLease> {
    return this.plane.leaseAtPlane(executionId, lease, timeoutMs);
  }

  /**
   * Check the connection with one cheap authenticated call (GET /v1/whoami):
   * whether the plane answers, and what the key is there. Never throws.
   */
  ping(): Promise<PlanePing> {
    return this.plane.ping();
  }

  /**
   * Give back a plane claim this writer holds but never applied locally (it
   * crashed or gave up between the plane claim and the local one), so another
   * writer may claim the pause. True when a claim was released.
   */
  releaseClaim(executionId: string, checkpointId: string): Promise<boolean> {
    return this.plane.releaseClaim(executionId, checkpointId);
  }
}
