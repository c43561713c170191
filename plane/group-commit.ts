/**
 * Group commit by key: what is submitted under a key while `inFlight` commits
 * of that key are under way waits, and goes together in the key's next commit
 * to start; a key with fewer under way commits at once, so a lone submission
 * waits for nothing. Each submission gets its own answer or its own error.
 */

import type { Settled } from '../shared/settled.js';

interface Waiter<T, R> {
  item: T;
  resolve(r: R): void;
  reject(e: unknown): void;
}

export interface GroupLimits<T> {
  /** Commits of one key under way at once (each takes what waits when it starts). */
  inFlight: number;
  /** Submissions per commit at most. */
  items: number;
  /** Their summed weight at most (a submission heavier than this alone still commits, alone). */
  weight: number;
  weightOf(item: T): number;
}

/** A key's submissions waiting for a commit to start, and its commits under way. */
interface KeyState<T, R> {
  waiting: Waiter<T, R>[];
  running: number;
}

export class KeyedGroupCommit<T, R> {
  private readonly keys = new Map<string, KeyState<T, R>>();

  constructor(
    /**
     * Commit these submissions of one key together: one answer per submission, in their order. An answer may be a
     * promise: that submission was sent on its own way (it settles when that does; the key's next commit need not
     * wait for it).
     */
    private readonly commit: (key: string, items: T[]) => Promise<(Settled<R> | Promise<Settled<R>>)[]>,
    private readonly limits: GroupLimits<T>,
  ) {}

  submit(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let k = this.keys.get(key);
      if (!k) {
        k = { waiting: [], running: 0 };
        this.keys.set(key, k);
      }
      if (k.running >= this.limits.inFlight) {
        k.waiting.push({ item, resolve, reject });
        return;
      }
      k.running++;
      void this.drain(key, k, [{ item, resolve, reject }]);
    });
  }

  /** Submissions of a key waiting for a commit of it to start. */
  waiting(key: string): number {
    return this.keys.get(key)?.waiting.length ?? 0;
  }

  /** Commit `first`, then what waits, a group at a time, until nothing waits; the key is idle once none of its commits runs. */
  private async drain(key: string, k: KeyState<T, R>, first: Waiter<T, R>[]): Promise<void> {
    let group = first;
    while (group.length) {
      let answers: (Settled<R> | Promise<Settled<R>>)[];
      try {
        answers = await this.commit(
          key,
          group.map((w) => w.item),
        );
      } catch (error) {
        answers = group.map(() => ({ ok: false, error }));
      }
      group.forEach((w, i) => {
        void Promise.resolve(answers[i]).then(
          (a) => {
            if (a?.ok) w.resolve(a.value);
            else w.reject(a ? a.error : new Error('group commit: no answer for a submission'));
          },
          (error: unknown) => w.reject(error),
        );
      });
      group = this.take(k.waiting);
    }
    if (--k.running === 0) this.keys.delete(key);
  }

  /** The next group: waiting submissions in arrival order, within the limits (always at least one). */
  private take(waiting: Waiter<T, R>[]): Waiter<T, R>[] {
    let n = 0;
    let weight = 0;
    while (n < waiting.length && n < this.limits.items) {
      const w = this.limits.weightOf(waiting[n].item);
      if (n > 0 && weight + w > this.limits.weight) break;
      weight += w;
      n++;
    }
    return waiting.splice(0, n);
  }
}
