/**
 * Group commit for the Postgres store's fast path: puts on a cached cursor
 * that concurrent runs issue while an earlier one is on its way are sent
 * together, one statement and one commit for all of them
 * (`putManyOnCursor`), instead of one each. No timer: a put sent when none is
 * in flight goes at once, alone (the statement a lone run always sent); the
 * puts that arrive meanwhile wait for that answer and then go as one.
 */
import type { RowText } from '../store/rows.js';
import { connectionFailed } from '../../support/db-errors.js';
import type { CursorPut } from './put-on-cursor.js';

interface Waiting {
  put: CursorPut;
  resolve: (rt: RowText | null) => void;
  reject: (error: unknown) => void;
}

export interface CursorPutSender {
  /** One put alone (`putOnCursor`): its row, or null for the locked path. */
  one(put: CursorPut): Promise<RowText | null>;
  /** Several puts in one statement (`putManyOnCursor`). */
  many(puts: CursorPut[]): Promise<(RowText | null | { error: unknown })[]>;
}

export class CursorPutBatch {
  private queue: Waiting[] = [];
  /** The flush sending now, until the queue is empty (null when idle). */
  private sending: Promise<void> | null = null;
  /** Statements sent, the puts they held, the largest (for benches and tests). */
  readonly stats = { batches: 0, writes: 0, largest: 0 };

  constructor(private readonly send: CursorPutSender) {}

  /** The put's row once committed, null when it must take the locked path; rejects as `putOnCursor` would. */
  submit(put: CursorPut): Promise<RowText | null> {
    return new Promise((resolve, reject) => {
      this.queue.push({ put, resolve, reject });
      this.kick();
    });
  }

  /** Every put submitted so far answered (what `close` waits for before ending the pool). */
  async drained(): Promise<void> {
    while (this.sending) await this.sending;
  }

  /** Start sending unless a flush is on its way (it takes what is queued when its statement returns). */
  private kick(): void {
    if (this.sending || this.queue.length === 0) return;
    this.sending = this.flush().finally(() => {
      this.sending = null;
      // a put queued after the flush's last look and before this callback
      this.kick();
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      this.stats.batches++;
      this.stats.writes += batch.length;
      this.stats.largest = Math.max(this.stats.largest, batch.length);
      await (batch.length === 1 ? this.alone(batch[0]) : this.together(batch));
    }
  }

  private async alone(w: Waiting): Promise<void> {
    try {
      w.resolve(await this.send.one(w.put));
    } catch (e) {
      w.reject(e);
    }
  }

  private async together(batch: Waiting[]): Promise<void> {
    let out: (RowText | null | { error: unknown })[];
    try {
      out = await this.send.many(batch.map((w) => w.put));
    } catch (e) {
      // a lost connection may have committed them all: each put's caller looks for its row
      if (connectionFailed(e)) for (const w of batch) w.reject(e);
      // refused as a whole (one put's duplicate id, a value the server refuses): nothing committed, each alone
      else await Promise.all(batch.map((w) => this.alone(w)));
      return;
    }
    for (const [k, w] of batch.entries()) {
      const r = out[k];
      if (r !== null && 'error' in r) w.reject(r.error);
      else w.resolve(r);
    }
  }
}
