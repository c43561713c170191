/**
 * A copy that lost a run takes the plane's branch in place of its own.
 */
import type { Checkpointer } from '../checkpointer.js';
import type { FlushResult } from './replica-types.js';

/**
 * Replace this store's copy of a run with the plane's, keeping every effect
 * it recorded. For a copy that ran on after it lost the run (the plane
 * refused its rows past the takeover), once nobody holds the run: without
 * this, the copy could never take the run, and a run whose winner died too
 * would stay unfinished for the whole fleet.
 *
 * The rows this store wrote past its fence are dropped (the plane refused
 * them; they are no run's history); its idempotency entries are kept, and
 * were sent first, so an effect it made is never made again by whoever runs
 * the plane's branch. Returns false, changing nothing, while a runner here
 * holds the run or anything of this store is still unsent.
 */
export async function adoptPlaneBranch(
  store: Checkpointer,
  executionId: string,
  plane: { flush: (o: { timeoutMs?: number }) => Promise<FlushResult>; restore: (executionId: string) => Promise<unknown> },
  o: { timeoutMs?: number } = {},
): Promise<boolean> {
  if ((await store.getLease(executionId))?.live) return false;
  if ((await plane.flush({ timeoutMs: o.timeoutMs })).pendingRows > 0) return false;
  const effects = await store.listIdempotent(executionId);
  await store.deleteExecution(executionId, { localOnly: true });
  await store.importRows({ checkpoints: [], pending: null, idempotency: effects });
  await plane.restore(executionId);
  return true;
}
