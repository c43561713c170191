/**
 * What a replica takes, reports and emits: its options, its status, the
 * outcome of a drain round and its events (replica.ts holds the drain itself).
 */
import type { Dispatcher } from 'undici';
import type { Decision } from '../../shared/rows.js';
import type { FaultHook } from '../faults.js';
import type { RunUpdate } from './change-feed.js';
import type { SkippedDecision } from './decision-feed.js';

export type DrainState = 'idle' | 'draining' | 'backoff' | 'auth_failed' | 'stopped';

export interface ReplicaOptions {
  url: string;
  apiKey: string;
  /** Reported to the plane; defaults to the store's writer id. */
  writerId?: string;
  dispatcher?: Dispatcher;
  batchRows?: number;
  batchBytes?: number;
  /** Debounce after a write. Default 50 ms. */
  debounceMs?: number;
  /** Idle poll for rows written by other processes sharing the store. Default 5 s; 0 disables. */
  pollMs?: number;
  /** Per request. Default 30 s. */
  timeoutMs?: number;
  /** The first retry's ceiling of the full-jitter backoff (`client/retry.ts`). Default 250 ms. */
  backoffBaseMs?: number;
  /** The largest ceiling. Default 30 s. */
  backoffCapMs?: number;
  faults?: FaultHook;
  /** Follow the plane's change feed while running (default true; change-feed.ts). false: only `pullChanges()` does it. */
  followChanges?: boolean;
  /** The change feed's long-poll hold, seconds (the plane caps it at 25). Default 25. */
  changeWaitSeconds?: number;
  /** The decision feed's long-poll hold, seconds (the plane caps it at 25). Default 25. */
  decisionWaitSeconds?: number;
}

export interface ReplicaStatus {
  state: DrainState;
  pendingRows: number;
  pendingBytes: number;
  oldestPendingAgeMs: number | null;
  quarantinedCount: number;
  lastQuarantineReason: string | null;
  lastAckAt: string | null;
  lastError: string | null;
  /** When `lastError` happened. */
  lastErrorAt: string | null;
  /** When a round last ended with the outbox empty; an error before it is no longer current. */
  lastSuccessAt: string | null;
  consecutiveFailures: number;
  nextAttemptAt: string | null;
  rowsSynced: number;
}

/** What one flush() did, with the status at its end. */
export interface FlushResult extends ReplicaStatus {
  /** Rows the plane accepted during this flush. */
  sent: number;
  /** Rounds that ended during this flush. */
  rounds: number;
}

/** How a drain round ended: the outbox emptied, the key was refused, or a retry is due (at least `retryAfterMs`). */
export type RoundOutcome = { kind: 'done' } | { kind: 'auth' } | { kind: 'retry'; retryAfterMs: number | null };

/**
 * What a replica emits (`replica.on(name, listener)`), each event's listener
 * arguments. Listeners are isolated: one that throws is reported as
 * `listener_error` and never stops the drain.
 */
export interface ReplicaEvents {
  /** The drain moved to another state (see the state table in replica.ts). */
  state: [state: DrainState];
  /** A round ended with the outbox empty. */
  drained: [];
  /** A round ended, however it ended (after `drained` when it emptied the outbox). */
  round: [outcome: RoundOutcome];
  /** The plane answered a batch: rows synced and rows quarantined by its per-row answers. */
  ack: [ack: { synced: number; quarantined: number }];
  /** Rows the plane refused were quarantined; `reason` is the first one's. */
  quarantined: [quarantined: { ids: string[]; reason: string }];
  /** The plane refused this writer's rows of a run another machine took over (once per run per batch). */
  run_lost: [lost: { executionId: string; reason: string }];
  /** The plane refused a claim and `onClaimRefused: 'resume_locally'` resumed anyway (connectPlane). */
  claim_refused: [refused: { executionId: string; checkpointId: string; reason: string }];
  /** The plane was unreachable for a claim; the local claim stands (connectPlane). */
  claim_offline: [offline: { executionId: string; checkpointId: string; reason: string }];
  /** This writer took a run over at the plane from writer `from` (connectPlane). */
  run_taken_over: [takeover: { executionId: string; from: string }];
  /** The plane was unreachable for a takeover; the local lease stands (connectPlane). */
  takeover_offline: [offline: { executionId: string; reason: string }];
  /** A run this store holds moved on elsewhere (claimed, cancelled, finished, deleted) and was caught up or reported (change-feed.ts). */
  run_updated: [update: RunUpdate];
  /** A decision recorded on the plane arrived through the decision feed and was stored here (issue 16). */
  decision: [decision: Decision];
  /** The decision feed passed over one decision (malformed, or refused by this store); the feed went on past it. */
  decision_skipped: [skipped: SkippedDecision];
  /** A listener of `event` threw `error`; the drain went on. */
  listener_error: [failure: { event: Exclude<keyof ReplicaEvents, 'listener_error'>; error: unknown }];
}
