/**
 * Group commit by key: what is submitted under a key while a commit of that
 * key is under way waits, and goes together in the key's next commit; a key
 * with nothing under way commits at once, so a lone submission waits for
 * nothing. One commit of a key is under way at a time in this process. Each
 * submission gets its own answer or its own error.
 */

/** One submission's answer: its value, or the error it alone failed with. */
export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

interface Waiter<T, R> {
  item: T;
  resolve(r: R): void;
  reject(e: unknown): void;
}

export interface GroupLimits<T> {
  /** Submissions per commit at most. */
  items: number;
  /** Their summed weight at most (a submission heavier than this alone still commits, alone). */
  weight: number;
  weightOf(item: T): number;
}

/** What a group commit did since it was made: commits (one per group, whether it succeeded or not) and submissions. */
export interface GroupStats {
  commits: number;
  items: number;
  /** The most submissions one commit took. */
  largest: number;
}

export class GroupCommit<T, R> {
  private readonly keys = new Map<string, Waiter<T, R>[]>();
  readonly stats: GroupStats = { commits: 0, items: 0, largest: 0 };

  constructor(
    /** Commit these submissions of one key together: one answer per submission, in their order. */
    private readonly commit: (key: string, items: T[]) => Promise<Settled<R>[]>,
    private readonly limits: GroupLimits<T>,
  ) {}

  submit(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const waiting = this.keys.get(key);
      if (waiting) {
        waiting.push({ item, resolve, reject });
        return;
      }
      this.keys.set(key, []);
      void this.drain(key, [{ item, resolve, reject }]);
    });
  }

  /** Submissions of a key waiting for the commit under way to finish. */
  waiting(key: string): number {
    return this.keys.get(key)?.length ?? 0;
  }

  /** Commit `group`, then what waited meanwhile, until nothing waits; then the key is idle again. */
  private async drain(key: string, first: Waiter<T, R>[]): Promise<void> {
    let group = first;
    while (group.length) {
      this.stats.commits++;
      this.stats.items += group.length;
      this.stats.largest = Math.max(this.stats.largest, group.length);
      let answers: Settled<R>[];
      try {
        answers = await this.commit(
          key,
          group.map((w) => w.item),
        );
      } catch (error) {
        answers = group.map(() => ({ ok: false, error }));
      }
      group.forEach((w, i) => {
        const a = answers[i];
        if (a?.ok) w.resolve(a.value);
        else w.reject(a ? a.error : new Error('group commit: no answer for a submission'));
      });
      group = this.take(key);
    }
    this.keys.delete(key);
  }

  /** The next group: waiting submissions in arrival order, within the limits (always at least one). */
  private take(key: string): Waiter<T, R>[] {
    const waiting = this.keys.get(key) ?? [];
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
