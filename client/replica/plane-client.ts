/**
 * A replica's calls to its plane that are neither replication nor a feed:
 * restore a run, cancel one, take the plane's branch of a lost run, and the
 * ownership calls (claim a pause, take a run over, renew or give up a hold,
 * give back a claim, ask where a run stands, ping). Each is made as this
 * replica's writer with its key as it is at the call (setApiKey may replace
 * it), over the replica's connection and its request timeout. The requests
 * themselves live in plane-calls.ts, restore.ts, cancel.ts and branch.ts;
 * this binds them to one connection.
 */
import type { Dispatcher } from 'undici';
import type { Checkpointer } from '../checkpointer.js';
import { adoptLostRuns, adoptPlaneBranch } from './branch.js';
import { adoptCancel, cancelThroughPlane, type PlaneCancelOptions, type PlaneCancelResult } from './cancel.js';
import type { DecisionRuns } from './decision-feed.js';
import type { PlaneHttp } from './http.js';
import {
  claimAtPlane,
  leaseAtPlane,
  ping,
  releaseClaim,
  runAtPlane,
  openRequestsAtPlane,
  requestAtPlane,
  claimRequestAtPlane,
  settleRequestAtPlane,
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
import type { FlushOptions, FlushResult } from './replica-types.js';
import type { RunRequestOutcome, RunRequestView } from '../../shared/protocol.js';
import { restoreFromPlane } from './restore.js';

/** Where and as whom a PlaneClient calls. */
export interface PlaneClientOptions {
  url: string;
  dispatcher: Dispatcher | undefined;
  /** The connection the ownership calls share with the drain's batches. */
  http: PlaneHttp;
  /** The key as it is now. */
  apiKey: () => string;
  writerId: string;
  /** Per request. */
  timeoutMs: number;
  /** The drain's flush: a branch is adopted only once this store's rows reached the plane. */
  flush: (o: FlushOptions) => Promise<FlushResult>;
  /** A run-request call the plane refused the key for (401: unknown or revoked), with the key it was for: said as the feeds say it. */
  keyRefused?: (message: string, apiKey: string | null) => void;
}

export class PlaneClient {
  constructor(
    private readonly store: Checkpointer,
    private readonly o: PlaneClientOptions,
  ) {}

  /** Who the ownership calls are made as (the key as it is now). */
  private get caller(): PlaneCaller {
    return {
      apiKey: this.o.apiKey(),
      writerId: this.o.writerId,
      instance: this.store.instanceId,
      timeoutMs: this.o.timeoutMs,
    };
  }

  /** The url, key, dispatcher and timeout restore.ts and cancel.ts take. */
  private get reach(): { url: string; apiKey: string; dispatcher: Dispatcher | undefined; timeoutMs: number } {
    return { url: this.o.url, apiKey: this.o.apiKey(), dispatcher: this.o.dispatcher, timeoutMs: this.o.timeoutMs };
  }

  /** restoreFromPlane with this connection's url, key and writer (the run's changes then reach this writer's feed). */
  restore(executionId: string): ReturnType<typeof restoreFromPlane> {
    return restoreFromPlane(this.store, executionId, { ...this.reach, writerId: this.o.writerId });
  }

  /** cancelThroughPlane with this connection's url and key. */
  cancel(executionId: string, options: PlaneCancelOptions = {}): Promise<PlaneCancelResult> {
    return cancelThroughPlane(this.store, executionId, { ...this.reach, reason: options.reason });
  }

  /** adoptPlaneBranch, restoring through this connection after the drain's flush. */
  adoptPlaneBranch(executionId: string): Promise<boolean> {
    const restore = (beforeImport: () => Promise<void>) =>
      restoreFromPlane(this.store, executionId, { ...this.reach, writerId: this.o.writerId, beforeImport });
    return adoptPlaneBranch(
      this.store,
      executionId,
      { flush: (o) => this.o.flush(o), restore },
      { timeoutMs: this.o.timeoutMs },
    );
  }

  /** adoptLostRuns through this connection's takeover, lease and adopt calls. */
  adoptLostRuns(serves?: (agentPath: string) => boolean): Promise<string[]> {
    return adoptLostRuns(this.store, serves, {
      takeoverAtPlane: (id, seq, a) => this.takeoverAtPlane(id, seq, a),
      leaseAtPlane: (id, a) => this.leaseAtPlane(id, a),
      adoptPlaneBranch: (id) => this.adoptPlaneBranch(id),
    });
  }

  /** adoptCancel with this connection's url and key, no reason of its own. */
  adoptCancel(executionId: string): ReturnType<typeof adoptCancel> {
    return adoptCancel(this.store, executionId, { ...this.reach, reason: null });
  }

  /** runAtPlane (plane-calls.ts): where a run stands there; null when the plane does not hold it. */
  runAtPlane(executionId: string): Promise<PlaneRun | null> {
    return runAtPlane(this.o.http, this.caller, executionId);
  }

  /** claimAtPlane (plane-calls.ts): claim a pause there first. Never throws. */
  claimAtPlane(
    executionId: string,
    checkpointId: string,
    decisionId?: string,
    acquisition: Acquisition = {},
  ): Promise<PlaneClaim> {
    return claimAtPlane(this.o.http, this.caller, executionId, checkpointId, decisionId, acquisition);
  }

  /** takeoverAtPlane (plane-calls.ts): take over a run that is not paused. Never throws. */
  takeoverAtPlane(
    executionId: string,
    seq: number,
    acquisition: Acquisition & { idempotencyKeys?: string[]; lastId?: string } = {},
  ): Promise<PlaneTakeover> {
    return takeoverAtPlane(this.o.http, this.caller, executionId, seq, acquisition);
  }

  /** leaseAtPlane (plane-calls.ts): renew or give up a hold; never waits longer than the request timeout. Never throws. */
  leaseAtPlane(executionId: string, lease: LeaseAsk, timeoutMs = this.o.timeoutMs): Promise<PlaneLease> {
    return leaseAtPlane(
      this.o.http,
      { ...this.caller, timeoutMs: Math.min(timeoutMs, this.o.timeoutMs) },
      executionId,
      lease,
    );
  }

  /** ping (plane-calls.ts): whether the plane answers, and what the key is there. Never throws. */
  ping(): Promise<PlanePing> {
    return ping(this.o.http, this.caller);
  }

  /** releaseClaim (plane-calls.ts): give back a claim never applied here. */
  releaseClaim(executionId: string, checkpointId: string): Promise<boolean> {
    return releaseClaim(this.o.http, this.caller, executionId, checkpointId);
  }

  /**
   * A run-request call as this writer with the key as it is now. A 401 (the key unknown or revoked) is said as a
   * feed's is (keyRefused: the replica goes auth_failed, with the plane's words naming the key), then thrown.
   */
  private async reportingKeyRefusal<T>(call: (as: PlaneCaller) => Promise<T>): Promise<T> {
    const as = this.caller;
    try {
      return await call(as);
    } catch (e) {
      if ((e as { details?: { status?: unknown } } | null)?.details?.status === 401)
        this.o.keyRefused?.((e as Error).message, as.apiKey);
      throw e;
    }
  }

  /** openRequestsAtPlane (plane-calls.ts): one page of the run requests waiting for the application (all, or this writer's runs'). */
  openRequests(
    after: string | null,
    limit?: number,
    runs: DecisionRuns = 'all',
  ): Promise<{ items: RunRequestView[]; nextCursor: string | null }> {
    return this.reportingKeyRefusal((as) => openRequestsAtPlane(this.o.http, as, after, limit, runs));
  }

  /** requestAtPlane (plane-calls.ts): one run request as the plane has it now. */
  requestAtPlane(requestId: string): Promise<RunRequestView | null> {
    return this.reportingKeyRefusal((as) => requestAtPlane(this.o.http, as, requestId));
  }

  /** claimRequestAtPlane (plane-calls.ts): take a fork request before forking. */
  claimRequest(requestId: string): ReturnType<typeof claimRequestAtPlane> {
    return this.reportingKeyRefusal((as) => claimRequestAtPlane(this.o.http, as, requestId));
  }

  /** settleRequestAtPlane (plane-calls.ts): report how applying a request went. */
  settleRequest(requestId: string, outcome: Omit<RunRequestOutcome, 'writerId'>): Promise<RunRequestView> {
    return this.reportingKeyRefusal((as) => settleRequestAtPlane(this.o.http, as, requestId, outcome));
  }
}
