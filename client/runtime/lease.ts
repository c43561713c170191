/**
 * A runner's hold on one execution: the lease it acquired, renewed on an
 * unref'd timer while a model call or tool runs (a fenced write renews it
 * too, once a third of its ttl has passed), and given up when the run stops
 * without a marker or pause (which release it in their own transaction).
 */
import { uuidv7 } from '../../shared/ids.js';
import { hasCode, ErrorCode } from '../../shared/errors.js';
import type { Checkpointer, Lease, PlaneRenewal } from '../checkpointer.js';

/** This process's instance id: a lease holder is `<store writer id>#<instance>/<n>`. */
export const PROCESS_INSTANCE = uuidv7();

export const DEFAULT_LEASE_MS = 30_000;

/**
 * The store or the plane said the runner no longer holds the run: another took
 * it over (LeaseLost), it was cancelled (RunCancelled), or another store
 * instance under this writer id holds it at the plane (WRITER_COPY).
 */
export const isLeaseLoss = (e: unknown): boolean =>
  hasCode(e, ErrorCode.LEASE_LOST) || hasCode(e, ErrorCode.RUN_CANCELLED) || hasCode(e, ErrorCode.WRITER_COPY);

let acquisitions = 0;

/** Unique per acquisition (`/<n>`), so a store can tell its own landed acquisition from another runner's. */
export function holderOf(store: Checkpointer): string {
  return `${store.writerId}#${PROCESS_INSTANCE}/${++acquisitions}`;
}

/** The runners of each store in this process, by execution: what a connected replica fences when it learns a run was lost. */
const running = new WeakMap<Checkpointer, Map<string, Set<RunLease>>>();

/**
 * Fence every runner of `executionId` on `store` in this process: the plane
 * refused one of its rows as taken over, or another machine's rows of it were
 * imported. Each stops before its next step, effect or write (`error`).
 * Returns how many runners were fenced.
 */
export function fenceRunners(store: Checkpointer, executionId: string, error: Error): number {
  const runners = running.get(store)?.get(executionId);
  if (!runners) return 0;
  for (const r of runners) r.fence(error);
  return runners.size;
}

export class RunLease {
  /** Set once the store or the plane refused a renewal: every later step stops with it. */
  private lost: Error | null = null;
  /** True once a run-end marker or a pause released the lease in its own transaction. */
  ended = false;
  private timer: NodeJS.Timeout | null = null;
  private renewing: Promise<void> | null = null;
  /** The plane's renewal in flight: apart from the store's, so a plane that stalls never holds the store's lease back. */
  private renewingAtPlane: Promise<void> | null = null;

  constructor(
    private readonly store: Checkpointer,
    readonly lease: Lease,
  ) {}

  /**
   * Renew every third of the ttl, so one late renewal still leaves the lease
   * live: in the store, then, while a plane is connected, at the plane (the
   * run's owner's heartbeat). A refusal by either is a loss.
   */
  start(): void {
    let set = running.get(this.store);
    if (!set) running.set(this.store, (set = new Map()));
    const mine = set.get(this.lease.executionId) ?? new Set<RunLease>();
    mine.add(this);
    set.set(this.lease.executionId, mine);
    const every = Math.max(5, Math.floor(this.lease.ttlMs / 3));
    this.timer = setInterval(() => {
      if (this.lost || this.ended) return;
      // a store hiccup is not a loss (the next fenced write decides); a cancel clears the holder (RunCancelled)
      const lost = (e: unknown) => {
        if (isLeaseLoss(e)) this.fence(e as Error);
      };
      this.renewing ??= this.store
        .renewLease(this.lease)
        .then(() => undefined, lost)
        .finally(() => {
          this.renewing = null;
        });
      this.renewingAtPlane ??= this.renewAtPlane()
        .then(() => undefined, lost)
        .finally(() => {
          this.renewingAtPlane = null;
        });
    }, every);
    this.timer.unref();
  }

  /** The plane's renewal, while a plane is connected, within a third of the ttl (an unreachable plane is not a loss). */
  private async renewAtPlane(effectKey?: string): Promise<PlaneRenewal | undefined> {
    return await this.store.planeGuard.current?.renew?.(this.lease, {
      timeoutMs: Math.max(100, Math.floor(this.lease.ttlMs / 3)),
      ...(effectKey ? { effectKey } : {}),
    });
  }

  /** One renewal by the store and one by the plane, at once: both must hold. What the plane said (see confirm). */
  private async renewBoth(effectKey?: string): Promise<PlaneRenewal> {
    const [, plane] = await Promise.all([this.store.renewLease(this.lease), this.renewAtPlane(effectKey)]);
    return { recorded: plane?.recorded === true, epoch: plane?.epoch ?? null };
  }

  /**
   * This runner lost the run (to a takeover or a cancel, learnt from the
   * plane): every later step, effect and write stops with `error`, and the
   * store's lease is given up so a fenced write of this runner fails too.
   */
  fence(error: Error): void {
    if (this.lost || this.ended) return;
    this.lost = error;
    void this.store.releaseLease(this.lease).catch(() => undefined);
  }

  /** Throws `LeaseLost` once a renewal found the lease taken by another runner (`RunCancelled` once the run was cancelled). */
  check(): void {
    if (this.lost) throw this.lost;
  }

  /**
   * The lease is still this runner's, as the store sees it now: a fenced
   * renewal, which also gives what follows a whole ttl before anyone else
   * could take the run. The timer's renewals cannot say so after a stall (a
   * blocked event loop, a suspended laptop): an idempotent side effect asks
   * this first. Throws LeaseLost once another runner took the run over
   * (RunCancelled once it was cancelled; a deleted run has no lease left).
   * Resolves with `recorded` true when the plane held a record of
   * `effectKey` (the effect about to start), now imported into the store:
   * the effect already ran; and the run's owner epoch at the plane (null
   * when no plane answered).
   */
  async confirm(effectKey?: string): Promise<PlaneRenewal> {
    this.check();
    try {
      return await this.renewBoth(effectKey);
    } catch (e) {
      if (isLeaseLoss(e)) this.fence(e as Error);
      throw e;
    }
  }

  /** Stop renewing; give the lease up unless a marker or pause already did, or it was lost. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    running.get(this.store)?.get(this.lease.executionId)?.delete(this);
    await this.renewing;
    if (!this.ended && !this.lost) {
      this.ended = true;
      await this.store.releaseLease(this.lease).catch(() => undefined);
      // the plane's hold too, so another machine need not wait for it to expire
      await this.renewingAtPlane?.catch(() => undefined);
      await this.store.planeGuard.current
        ?.renew?.(this.lease, { release: true, timeoutMs: Math.max(100, Math.floor(this.lease.ttlMs / 3)) })
        .catch(() => undefined);
    }
  }
}
