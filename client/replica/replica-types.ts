/**
 * What a replica takes, reports and emits: its options and their check, its
 * status, the outcome of a drain round and its events (drain.ts holds the
 * drain itself, replica.ts the replica that composes it).
 */
import type { Dispatcher } from 'undici';
import { issueProblems } from '../../shared/errors.js';
import { WriterId, type Decision } from '../../shared/rows.js';
import {
  apiKeyProblem,
  booleanProblem,
  functionProblem,
  integerProblem,
  shown,
  urlProblem,
} from '../../support/validate.js';
import type { FaultHook } from '../faults.js';
import type { RunUpdate } from './change-feed.js';
import type { SkippedDecision } from './decision-feed.js';

/** What a replica's drain is doing: idle, sending, waiting to retry, refused by the plane's key check, or stopped. */
export type DrainState = 'idle' | 'draining' | 'backoff' | 'auth_failed' | 'stopped';

/**
 * A replica's options. Checked when the replica is made (`replicaOptionProblems`):
 * a value outside what a field says is refused with INVALID_OPTIONS before
 * anything starts. Durations are integer milliseconds unless named seconds.
 */
export interface ReplicaOptions {
  /** The plane's http(s) URL, a path prefix allowed; no credentials, query or fragment (a request would drop them). */
  url: string;
  /** The plane's API key: one token, no whitespace or control characters. */
  apiKey: string;
  /** Reported to the plane; defaults to the store's writer id. */
  writerId?: string;
  /** The undici dispatcher for every request to the plane (a proxy, TLS settings, a pool); default undici's global one. */
  dispatcher?: Dispatcher;
  /** Rows per batch, at least 1. Default 500; capped at LIMITS.batchRows. */
  batchRows?: number;
  /** Bytes per batch, at least 1. Default 4 MiB; capped at LIMITS.batchBytes. */
  batchBytes?: number;
  /** Debounce after a write. Default 50 ms; 0: none. */
  debounceMs?: number;
  /** Idle poll for rows written by other processes sharing the store. Default 5 s; 0 disables. */
  pollMs?: number;
  /** Per request, at least 1 ms. Default 30 s. */
  timeoutMs?: number;
  /** The first retry's ceiling of the full-jitter backoff (`client/retry.ts`), at least 1 ms. Default 250 ms. */
  backoffBaseMs?: number;
  /** The largest ceiling, at least 1 ms and not under `backoffBaseMs`. Default 30 s. */
  backoffCapMs?: number;
  /** Named fault points for crash tests (see `waymark/testing`). Default none. */
  faults?: FaultHook;
  /** Follow the plane's change feed while running (default true; change-feed.ts). false: only `pullChanges()` does it. */
  followChanges?: boolean;
  /** The change feed's long-poll hold, 1 to 25 seconds (the plane refuses a longer one). Default 25. */
  changeWaitSeconds?: number;
  /** The decision feed's long-poll hold, 1 to 25 seconds (the plane refuses a longer one). Default 25. */
  decisionWaitSeconds?: number;
}

/** The longest duration an option may give: past this Node's setTimeout fires at once (TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2_147_483_647;
/** The longest feed hold the plane accepts (its MAX_FEED_WAIT_S; a longer `wait` is answered 400). */
const MAX_WAIT_SECONDS = 25;

/** Integer options: [field, least, most, unit]. */
const INTEGERS: readonly [keyof ReplicaOptions, number, number, string][] = [
  ['batchRows', 1, Number.MAX_SAFE_INTEGER, 'rows'],
  ['batchBytes', 1, Number.MAX_SAFE_INTEGER, 'bytes'],
  ['debounceMs', 0, MAX_TIMER_MS, 'ms'],
  ['pollMs', 0, MAX_TIMER_MS, 'ms'],
  ['timeoutMs', 1, MAX_TIMER_MS, 'ms'],
  ['backoffBaseMs', 1, MAX_TIMER_MS, 'ms'],
  ['backoffCapMs', 1, MAX_TIMER_MS, 'ms'],
  // 0 would make a followed feed ask the plane again the moment it answers
  ['changeWaitSeconds', 1, MAX_WAIT_SECONDS, 'seconds'],
  ['decisionWaitSeconds', 1, MAX_WAIT_SECONDS, 'seconds'],
];

/**
 * What is wrong with a replica's options, every problem of every field, each
 * `field: what it must be (got …)`; empty when the replica can work with
 * them. Never repeats a secret: a key or a URL is described, not quoted.
 * Unknown fields are not problems (callers spread wider objects in: one
 * config object for connectPlane and restoreFromPlane; no misspelled name
 * there asks for something unsafe);
 * connectPlane adds the problems of its own fields.
 */
export function replicaOptionProblems(o: ReplicaOptions): string[] {
  if (typeof o !== 'object' || o === null) return [`options: must be an object with url and apiKey (got ${shown(o)})`];
  const problems: string[] = [];
  const url = urlProblem(o.url);
  if (url) problems.push(url);
  const key = apiKeyProblem(o.apiKey);
  if (key) problems.push(key);
  if (o.writerId !== undefined) {
    const r = WriterId.safeParse(o.writerId);
    if (!r.success) problems.push(...issueProblems(r.error, 'writerId'));
  }
  if (o.dispatcher !== undefined && typeof (o.dispatcher as { request?: unknown } | null)?.request !== 'function') {
    problems.push(`dispatcher: must be an undici Dispatcher (got ${shown(o.dispatcher)})`);
  }
  for (const [field, least, most, unit] of INTEGERS) {
    const p = integerProblem(field, o[field], least, most, unit);
    if (p) problems.push(p);
  }
  const { backoffBaseMs: base, backoffCapMs: cap } = o;
  if (Number.isSafeInteger(base) && Number.isSafeInteger(cap) && (cap as number) < (base as number)) {
    problems.push(`backoffCapMs: must not be under backoffBaseMs (got ${cap} < ${base})`);
  }
  for (const p of [functionProblem('faults', o.faults), booleanProblem('followChanges', o.followChanges)])
    if (p) problems.push(p);
  return problems;
}

/** A replica's drain as `status()` reports it: its state, the outbox's backlog and quarantine, the last ack and error. */
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
/** Options of `Replica.flush`. */
export interface FlushOptions {
  /** How long to wait for nothing pending, in ms. Default 10 000. */
  timeoutMs?: number;
}

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
  /** The drain moved to another state (see the state table in drain.ts). */
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
  /** The plane has no writer feed (an older plane): that feed (changes or decisions) follows the whole project's from now on. Said once per feed. */
  feed_fallback: [fallback: { feed: 'changes' | 'decisions'; reason: string }];
  /** A decision recorded on the plane arrived through the decision feed and was stored here. */
  decision: [decision: Decision];
  /** The decision feed passed over one decision (malformed, or refused by this store); the feed went on past it. */
  decision_skipped: [skipped: SkippedDecision];
  /** A listener of `event` threw `error`; the drain went on. */
  listener_error: [failure: { event: Exclude<keyof ReplicaEvents, 'listener_error'>; error: unknown }];
}
