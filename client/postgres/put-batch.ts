/**
 * Group commit for the Postgres store's fast path: the puts on a cached
 * cursor that concurrent runs issue while a statement of them is on its way
 * wait for its answer and then go together, one statement and one commit
 * (`putManyOnCursor`). No timer: a put issued when none is on its way is sent
 * at once, alone. One statement at a time, so a put queued behind one that
 * waits for a row lock waits with it.
 */
import type { CursorPut, CursorPutResult } from './put-on-cursor.js';
import type { RowText } from '../store/rows.js';

interface Waiting {
  put: CursorPut;
  resolve: (rt: RowText | null) => void;
  reject: (error: unknown) => void;
}

export class CursorPutBatch {
  private queue: Waiting[] = [];
  /** The flush sending now, until the queue is empty (null when idle). */
  private sending: Promise<void> | null = null;
  /** Sends taken from the queue, the puts they held, the largest, and the puts written on the fast path (for benches and tests). */
  readonly stats = { batches: 0, writes: 0, largest: 0, written: 0 };

  /** `send` answers each put (`putManyOnCursor`); it never throws for one put's failure. */
  constructor(private readonly send: (puts: CursorPut[]) => Promise<CursorPutResult[]>) {}

  /** The put's row once committed, null when it must take the locked path; rejects with its own error. */
  submit(put: CursorPut): Promise<RowText | null> {
    return new Promise((resolve, reject) => {
      this.queue.push({ put, resolve, reject });
      this.kick();
    });
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
      let out: CursorPutResult[];
      try {
        out = await this.send(batch.map((w) => w.put));
      } catch (e) {
        for (const w of batch) w.reject(e);
        continue;
      }
      for (const [k, w] of batch.entries()) {
        const r = out[k];
        if (r !== null && 'error' in r) w.reject(r.error);
        else {
          if (r) this.stats.written++;
          w.resolve(r);
        }
      }
    }
  }
}
