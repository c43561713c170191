/**
 * Group commit: the writes that concurrent runs issue within one tick (one
 * drain of the microtask queue) share one transaction, so a process running many runs at once
 * pays one commit (one fsync at `synchronous=FULL`) per tick instead of one per
 * write.
 *
 * - No timer, and no turn of the event loop: a write is queued, and the
 *   flush runs in a microtask that re-queues itself until QUIET_HOPS rounds of
 *   the microtask queue passed without a new write. The runs resumed by the
 *   previous commit reach their next put within those rounds and join; a lone
 *   write waits only for those few microtasks. Nothing else (a due timer, I/O)
 *   runs between a put and its commit, as before group commit.
 * - The adapter's `commit` runs a whole batch in one transaction, each write in
 *   its own savepoint, and answers one outcome per write: a write that fails
 *   rolls back only its savepoint and fails only its own promise.
 * - A promise settles only after the shared COMMIT returned (`after` runs per
 *   write, in queue order, once the commit is done).
 * - `settle()` flushes synchronously: the adapter calls it before any other
 *   operation, so the store applies calls in the order they were made (a read
 *   issued after a put sees it; a pause recorded after a put follows it).
 */
import type { Settled } from '../../shared/settled.js';

interface Queued<J, R> {
  job: J;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitAdapter<J, W, R> {
  /**
   * Run every job in one transaction (a savepoint each) and commit; one
   * outcome per job, in order. Throws when the transaction itself failed
   * (nothing committed): every job then fails with that error.
   */
  commit(jobs: J[]): Settled<W>[];
  /** After the commit, per job that succeeded (cursor cache, write signal, fault point); may throw to fail that job alone. */
  after(job: J, written: W): R;
  /** After a failed job or a failed transaction (drop what the job may have cached). */
  failed(job: J, error: unknown): unknown;
}

/**
 * The flush waits until this many rounds of the microtask queue passed without
 * a new write (the runs resumed by the previous commit reach their next put
 * within a few rounds), and at most MAX_HOPS rounds in all.
 */
const QUIET_HOPS = 16;
const MAX_HOPS = 10_000;

export class GroupCommit<J, W, R> {
  private queue: Queued<J, R>[] = [];
  private scheduled = false;
  private running = false;
  /** Batches committed and the writes they held (for benches and tests). */
  readonly stats = { batches: 0, writes: 0, largest: 0 };

  constructor(private readonly adapter: GroupCommitAdapter<J, W, R>) {}

  /** Queue a write; it joins the batch flushed once the writes of this tick stopped arriving (or earlier by `settle`). */
  enqueue(job: J): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.quiet = 0;
      if (!this.scheduled) {
        this.scheduled = true;
        queueMicrotask(this.wait);
      }
    });
  }

  /** Rounds of the microtask queue since the last write arrived, and since the flush was scheduled. */
  private quiet = 0;
  private hops = 0;
  /** The scheduled flush: one microtask, queued again until the writes stop arriving. */
  private readonly wait = (): void => {
    if (this.quiet++ < QUIET_HOPS && this.hops++ < MAX_HOPS) {
      queueMicrotask(this.wait);
      return;
    }
    this.scheduled = false;
    this.quiet = 0;
    this.hops = 0;
    this.settle();
  };

  /** Writes queued and not yet committed. */
  get pending(): number {
    return this.queue.length;
  }

  /** Commit every queued write now (synchronously). A no-op inside a running commit. */
  settle(): void {
    if (this.running || this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    let outcomes: Settled<W>[];
    this.running = true;
    try {
      outcomes = this.adapter.commit(batch.map((q) => q.job));
    } catch (error) {
      outcomes = batch.map(() => ({ ok: false, error }));
    } finally {
      this.running = false;
    }
    this.stats.batches++;
    this.stats.writes += batch.length;
    this.stats.largest = Math.max(this.stats.largest, batch.length);
    for (const [i, q] of batch.entries()) {
      const o = outcomes[i];
      if (!o.ok) {
        try {
          q.reject(this.adapter.failed(q.job, o.error));
        } catch (e) {
          // a failing `failed` must not leave the rest of the batch unsettled
          q.reject(e);
        }
        continue;
      }
      try {
        q.resolve(this.adapter.after(q.job, o.value));
      } catch (e) {
        q.reject(e);
      }
    }
  }
}
