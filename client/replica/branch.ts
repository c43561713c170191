/**
 * A copy that lost a run takes the plane's branch in place of its own.
 */
import type { IdempotencyEntry } from '../../shared/rows.js';
import type { Checkpointer } from '../checkpointer.js';
import type { FlushResult } from './replica-types.js';

/**
 * Replace this store's copy of a run with the plane's, keeping every effect
 * it recorded. For a copy that ran on after it lost the run (the plane
 * refused its rows past the takeover), once nobody holds the run: without
 * this, the copy could never take the run, and a run whose winner stopped
 * too would stay unfinished for the whole fleet.
 *
 * The plane's copy is fetched and verified first; only then are this store's
 * rows of the run dropped (the plane refused those past the fence: they are
 * no run's history) and the plane's written. Its idempotency entries are
 * kept: sent first, and put back after the plane's (where both recorded one
 * key, the plane's stands), so an effect it made is never made again by
 * whoever runs the plane's branch. Returns false, changing nothing, while a
 * runner here holds the run or anything of this store is still unsent;
 * throws, changing nothing, when the plane's copy cannot be had.
 */
export async function adoptPlaneBranch(
  store: Checkpointer,
  executionId: string,
  plane: {
    flush: (o: { timeoutMs?: number }) => Promise<FlushResult>;
    /** Restore the run from the plane, calling `beforeImport` once its copy is verified and before writing it. */
    restore: (beforeImport: () => Promise<void>) => Promise<unknown>;
  },
  o: { timeoutMs?: number } = {},
): Promise<boolean> {
  if ((await store.getLease(executionId))?.live) return false;
  if ((await plane.flush({ timeoutMs: o.timeoutMs })).pendingRows > 0) return false;
  let effects: IdempotencyEntry[] | null = null;
  try {
    await plane.restore(async () => {
      const mine = await store.listIdempotent(executionId);
      await store.deleteExecution(executionId, { localOnly: true });
      effects = mine;
    });
  } finally {
    // the entries only this store holds, after the plane's (or alone, if writing the plane's copy failed)
    if (effects) await store.importRows({ checkpoints: [], pending: null, idempotency: effects });
  }
  return true;
}
