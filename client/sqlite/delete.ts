/**
 * The SQLite store's deletions: one execution (`deleteExecution`, which
 * queues the deletion for the plane) and a chunk of old finished runs
 * (`prune`, a chunk per IMMEDIATE transaction). Each runs inside the
 * caller's transaction; an execution's outbox events go before its
 * checkpoints (checkpoint events are found through the checkpoints' index).
 */
import type * as C from '../checkpointer.js';
import { executionDeleted, type QueuedEvent } from '../store/events.js';
import type { PruneCandidate, PruneWalk } from '../store/prune.js';
import type { Statements } from './statements.js';

/** Delete an execution's outbox events (only the unsent ones with `pendingOnly`), before its checkpoints. */
export function dropOutbox(st: Statements, executionId: string, pendingOnly: boolean): void {
  (pendingOnly ? st.dropUnsentCheckpointEvents : st.dropCheckpointEvents).run(executionId);
  (pendingOnly ? st.dropUnsentOtherEvents : st.dropOtherEvents).run(executionId);
}

/**
 * Delete an execution's rows and its unsent events; `queue` records the
 * deletion when there was anything to delete. `localOnly` queues nothing and
 * keeps a deletion of the run queued earlier (an earlier plain delete the plane
 * has not heard of yet).
 */
export function deleteRows(
  st: Statements,
  executionId: string,
  queue: (e: QueuedEvent) => void,
  localOnly = false,
): C.DeleteResult {
  // events never sent are moot once the execution is gone; the deletion itself is sent
  st.dropUnsentCheckpointEvents.run(executionId);
  (localOnly ? st.dropUnsentOtherEventsButDeletions : st.dropUnsentOtherEvents).run(executionId);
  const checkpoints = st.deleteCheckpoints.run(executionId).changes;
  const pending = st.deletePending.run(executionId).changes;
  const idempotency = st.deleteIdem.run(executionId).changes;
  const had = st.deleteExec.run(executionId).changes;
  st.deleteLease.run(executionId);
  if (!localOnly && (had || checkpoints || idempotency)) queue(executionDeleted(executionId));
  return { checkpoints, pending, idempotency };
}

/** One chunk of a prune walk: the next prunable executions deleted with their events; `dropped` hears each id. */
export function pruneChunk(st: Statements, walk: PruneWalk, dropped: (executionId: string) => void): void {
  for (const id of walk.take(st.prunable.all(walk.cutoff, walk.after) as PruneCandidate[])) {
    dropOutbox(st, id, false);
    const checkpoints = st.deleteCheckpoints.run(id).changes;
    const idempotency = st.deleteIdem.run(id).changes;
    st.deleteExec.run(id);
    st.deleteLease.run(id);
    dropped(id);
    walk.deleted({ checkpoints, idempotency });
  }
}
