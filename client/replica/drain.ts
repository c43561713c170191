/**
 * The outbox drain: replicates a store's outbox to a plane (POST /v1/ingest),
 * oldest rows first, and keeps its state, its backoff and its status; flush()
 * drains now. One part of a Replica (replica.ts), which emits its events.
 *
 * States
 *   idle        nothing in flight; a write (debounced), the poll timer or flush() starts a round
 *   draining    a round is sending batches, oldest first, until the outbox is empty
 *   backoff     the last round failed (5xx, 429, timeout, reset, or a request-level refusal
 *               such as 400 or 404); a timer retries on its own (429/503: at least
 *               Retry-After; otherwise exponential backoff with full jitter); flush() ends it
 *   auth_failed the plane refused the key (401/403); nothing is quarantined; setApiKey() resumes
 *   stopped     stop() was called; timers cleared (the replica then closes the sockets)
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
 * history, not the current state. The state is kept in the store's meta
 * ('drain') for `waymark sync status` in another process. Listeners are
 * isolated (the replica's emit): one that throws is reported as
 * `listener_error` and never stops the drain (the retry timer is armed
 * before `state` is emitted).
 */
import type { EventEmitter } from 'node:events';
import { LIMITS } from '../../shared/limits.js';
import type { Checkpointer } from '../checkpointer.js';
import type { FaultHook } from '../faults.js';
import { backoffDelay } from '../retry.js';
import type { PlaneHttp } from './http.js';
import { HttpFailure, Ingest, type IngestAnswer } from './ingest.js';
import type {
  DrainState,
  FlushOptions,
  FlushResult,
  ReplicaEvents,
  ReplicaOptions,
  ReplicaStatus,
  RoundOutcome,
} from './replica-types.js';

/** The drain's settings, defaults filled in; the request timeout and the backoff base are the whole connection's. */
export type DrainSettings = Readonly<
  Required<
    Pick<
      ReplicaOptions,
      'batchRows' | 'batchBytes' | 'debounceMs' | 'pollMs' | 'timeoutMs' | 'backoffBaseMs' | 'backoffCapMs'
    >
  >
>;

/** A replica's options resolved for its drain (batch sizes capped at the plane's limits). */
export function drainSettings(options: ReplicaOptions): DrainSettings {
  return Object.freeze({
    batchRows: Math.min(options.batchRows ?? 500, LIMITS.batchRows),
    batchBytes: Math.min(options.batchBytes ?? 4 * 1024 * 1024, LIMITS.batchBytes),
    debounceMs: options.debounceMs ?? 50,
    pollMs: options.pollMs ?? 5000,
    timeoutMs: options.timeoutMs ?? 30_000,
    backoffBaseMs: options.backoffBaseMs ?? 250,
    backoffCapMs: options.backoffCapMs ?? 30_000,
  });
}

/** What a drain works with besides its store and settings. */
export interface DrainLink {
  writerId: string;
  /** The connection its batches go over. */
  http: PlaneHttp;
  /** The key as it is now (setApiKey may replace it). */
  apiKey: () => string;
  faults: FaultHook;
  /** Where its events go (the replica: listeners are isolated there). */
  events: Pick<EventEmitter<ReplicaEvents>, 'emit' | 'on' | 'off' | 'once'>;
  /** The plane refused rows of a run another machine took over (RunFence.lost). */
  lost: (executionId: string, cancelled: boolean, reason: string) => void;
}

export class OutboxDrain {
  private current: DrainState = 'idle';
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
  private maxRows: number;
  private readonly unsubscribe: () => void;
  private readonly ingest: Ingest;
  private readonly apiKey: () => string;
  private readonly fault: FaultHook;
  private readonly events: DrainLink['events'];
  private readonly lost: DrainLink['lost'];

  /** Subscribes to the store's writes and arms the idle poll; the first round waits for start(). */
  constructor(
    private readonly store: Checkpointer,
    private readonly o: DrainSettings,
    link: DrainLink,
  ) {
    this.apiKey = link.apiKey;
    this.fault = link.faults;
    this.events = link.events;
    this.lost = link.lost;
    this.maxRows = this.o.batchRows;
    this.ingest = new Ingest(store, {
      writerId: link.writerId,
      http: link.http,
      apiKey: link.apiKey,
      timeoutMs: this.o.timeoutMs,
      faults: link.faults,
    });
    this.unsubscribe = store.onWrite(() => this.kick());
    if (this.o.pollMs > 0) {
      this.pollTimer = setInterval(() => {
        if (this.current === 'idle') this.kick(0);
      }, this.o.pollMs);
      this.pollTimer.unref();
    }
  }

  /** The drain's state (the table above). */
  get state(): DrainState {
    return this.current;
  }

  /** The first round, at once. */
  start(): void {
    this.kick(0);
  }

  private setState(s: DrainState): void {
    if (this.current === s) return;
    this.current = s;
    this.events.emit('state', s);
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
          state: this.current,
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
   * A feed's round, or a run-request call, refused for the key (401: unknown
   * or revoked; a 403, a key without the feed's scope, may still drain and is
   * not this): the replica is `auth_failed`, as when the drain is refused, so
   * its state, its 'state' event and `waymark sync status` say so at once; a
   * worker that only follows decisions heard nothing before (nothing was left
   * to drain). `setApiKey` starts it again.
   */
  keyRefused(message: string, apiKey: string | null): void {
    // a round sent with the key setApiKey replaced since: not this key's refusal
    if (this.current === 'stopped' || (apiKey !== null && apiKey !== this.apiKey())) return;
    this.fail(message);
    if (this.current === 'auth_failed') return;
    this.setState('auth_failed');
  }

  private fail(message: string): void {
    this.lastError = message;
    this.lastErrorAt = new Date().toISOString();
  }

  /** Ask for a round soon (debounced). Safe to call any time. */
  kick(delayMs = this.o.debounceMs): void {
    if (this.current === 'stopped' || this.current === 'auth_failed') return;
    this.kicked = true;
    if (this.round || this.current === 'backoff') return;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.startRound();
    }, delayMs);
    this.timer.unref();
  }

  private startRound(): void {
    if (this.round || this.current === 'stopped' || this.current === 'auth_failed') return;
    this.kicked = false;
    this.nextAttemptAt = null;
    this.setState('draining');
    this.round = this.drainAll()
      .then((outcome) => {
        this.round = null;
        if (this.current === 'stopped') return;
        if (outcome.kind === 'done') {
          this.failures = 0;
          this.lastSuccessAt = new Date().toISOString();
          this.setState('idle');
          this.events.emit('drained');
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
        this.events.emit('round', outcome);
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
    if (this.round || this.current === 'stopped' || this.current === 'auth_failed') return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.startRound();
  }

  /** One round: batches, oldest first, until the outbox is empty or a failure ends the round. */
  private async drainAll(): Promise<RoundOutcome> {
    for (;;) {
      if (this.current === 'stopped') return { kind: 'done' };
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
        this.answered(await this.ingest.send(sendable));
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

  /** The plane answered a batch: count it, say so, and fence the runs it said another machine took over. */
  private answered({ synced, quarantined, lost }: IngestAnswer): void {
    this.rowsSynced += synced;
    this.lastAckAt = new Date().toISOString();
    const ids = Object.keys(quarantined);
    this.events.emit('ack', { synced, quarantined: ids.length });
    if (ids.length) this.events.emit('quarantined', { ids, reason: Object.values(quarantined)[0] });
    // a runner of it in this process stops before its next step or effect: the plane holds another branch now
    for (const [executionId, l] of lost) this.lost(executionId, l.cancelled, l.reason);
  }

  async status(): Promise<ReplicaStatus> {
    const s = await this.store.outboxStats();
    return {
      state: this.current,
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
  async flush(options: FlushOptions = {}): Promise<FlushResult> {
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    const syncedBefore = this.rowsSynced;
    let rounds = 0;
    const counted = () => rounds++;
    this.events.on('round', counted);
    try {
      this.startNow();
      for (;;) {
        if (this.current === 'stopped' || this.current === 'auth_failed') break;
        const s = await this.store.outboxStats();
        if (s.pendingCount === 0 && !this.round) break;
        if (Date.now() >= deadline) break;
        if (this.current === 'idle') this.startNow();
        await new Promise<void>((resolve) => {
          // not unref'd: the caller is awaiting this, so it must keep the process alive
          const t = setTimeout(done, Math.max(1, Math.min(100, deadline - Date.now())));
          const events = this.events;
          function done() {
            clearTimeout(t);
            events.off('round', done);
            resolve();
          }
          events.once('round', done);
        });
      }
    } finally {
      this.events.off('round', counted);
    }
    return { ...(await this.status()), sent: this.rowsSynced - syncedBefore, rounds };
  }

  /** The key was replaced: a drain stopped in auth_failed starts again. */
  keyReplaced(): void {
    if (this.current === 'auth_failed') {
      this.setState('idle');
      this.kick(0);
    }
  }

  /** Stop: no more rounds; timers cleared; waits for the round in flight. */
  async stop(): Promise<void> {
    if (this.current === 'stopped') return;
    this.setState('stopped');
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.timer = null;
    this.pollTimer = null;
    await this.round?.catch(() => {});
  }

  /** What the drain still holds open (all false after stop()). */
  get handles(): { retryTimer: boolean; pollTimer: boolean; roundInFlight: boolean } {
    return { retryTimer: this.timer !== null, pollTimer: this.pollTimer !== null, roundInFlight: this.round !== null };
  }
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
