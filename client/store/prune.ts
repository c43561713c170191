/**
 * How a prune walks the finished runs, alike on both backends: chunks of
 * `PRUNE_CHUNK` executions in id order, each chunk one transaction, so a
 * large prune never holds the store for long.
 */
import type { PruneOptions, PruneResult } from '../checkpointer.js';
import { canonicalTime } from './rows.js';

export const PRUNE_CHUNK = 500;

/** A prunable execution as both backends select it: `unsynced` when some of its events have not reached the plane. */
export interface PruneCandidate {
  execution_id: string;
  unsynced: number | boolean;
}

/** A prune's position (the last execution id seen) and tally. */
export class PruneWalk {
  readonly result: PruneResult = { executions: 0, checkpoints: 0, idempotency: 0, keptUnsynced: 0 };
  /** Runs whose end marker is older than this are pruned. */
  readonly cutoff: string;
  after = '';
  done = false;
  private readonly includeUnsynced: boolean;

  constructor(options: PruneOptions) {
    this.cutoff = canonicalTime(options.olderThan);
    this.includeUnsynced = options.includeUnsynced ?? false;
  }

  /** The executions of one chunk to delete: one with unsent events is kept (and counted) unless `includeUnsynced`. */
  take(chunk: PruneCandidate[]): string[] {
    if (chunk.length) this.after = chunk[chunk.length - 1].execution_id;
    this.done = chunk.length < PRUNE_CHUNK;
    const remove: string[] = [];
    for (const c of chunk) {
      if (c.unsynced && !this.includeUnsynced) this.result.keptUnsynced++;
      else remove.push(c.execution_id);
    }
    return remove;
  }

  /** Count one execution deleted with its rows. */
  deleted(rows: { checkpoints: number; idempotency: number }): void {
    this.result.executions++;
    this.result.checkpoints += rows.checkpoints;
    this.result.idempotency += rows.idempotency;
  }
}
