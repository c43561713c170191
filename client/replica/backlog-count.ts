/**
 * The backlog a drain batch reports to the plane: counted at most once a
 * second (counting walks every pending row, so counting per batch made
 * draining a backlog quadratic), less what was answered since.
 */
import type { Checkpointer, OutboxStats } from '../checkpointer.js';

export class BacklogCount {
  private count: { at: number; stats: OutboxStats; answeredRows: number; answeredBytes: number } | null = null;

  constructor(private readonly store: Checkpointer) {}

  /** What is left behind a batch of `rows` rows and `bytes` bytes. */
  async take(rows: number, bytes: number): Promise<{ rows: number; bytes: number; oldestPendingAt: string | null }> {
    const now = Date.now();
    if (!this.count || now - this.count.at >= 1000) {
      this.count = { at: now, stats: await this.store.outboxStats(), answeredRows: 0, answeredBytes: 0 };
    }
    const c = this.count;
    const left = Math.max(0, c.stats.pendingCount - c.answeredRows - rows);
    // one source of truth: with nothing left behind this batch, nothing is waiting
    return {
      rows: left,
      bytes: left ? Math.max(0, c.stats.pendingBytes - c.answeredBytes - bytes) : 0,
      oldestPendingAt: left ? c.stats.oldestPendingAt : null,
    };
  }

  /** A batch was answered (its rows are no longer pending). */
  answered(rows: number, bytes: number): void {
    if (!this.count) return;
    this.count.answeredRows += rows;
    this.count.answeredBytes += bytes;
  }
}
