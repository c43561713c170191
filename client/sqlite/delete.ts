/**
 * The SQLite store's deletions: one execution (`deleteExecution`, which
 * queues the deletion for the plane) and a chunk of old finished runs
 * (`prune`, a chunk per IMMEDIATE transaction). Each runs inside the
 * caller's transaction. A checkpoint's waiting event is the row itself
 * (outbox.ts), gone with it; the outbox rows of an execution go before its
 * checkpoints: those of checkpoints (a quarantine's reason, an acknowledgement
 * recorded before migration 0007) are found through the checkpoints' index.
 */
import type * as C from '../checkpointer.js';
import { executionDeleted, type QueuedEvent } from '../store/events.js';
import { PRUNE_CHUNK, type PruneCandidate, type PruneWalk } from '../store/prune.js';
import type { Statements } from './statements.js';

/** The deletions' statements (see statements.ts). */
export const deleteStatements = {
  // an execution's outbox rows: those of checkpoints through the checkpoints' index, the other kinds through their own
  dropCheckpointEvents: `DELETE FROM outbox_entries WHERE id IN (SELECT id FROM checkpoints WHERE execution_id = ?)`,
  dropOtherEvents: `DELETE FROM outbox_entries WHERE execution_id = ? AND kind <> 'checkpoint'`,
  dropUnsentOtherEvents: `DELETE FROM outbox_entries WHERE execution_id = ? AND kind <> 'checkpoint' AND synced = 0`,
  // a local-only delete keeps a deletion of the run queued earlier: the plane must still hear of it
  dropUnsentOtherEventsButDeletions: `DELETE FROM outbox_entries WHERE execution_id = ? AND kind NOT IN ('checkpoint', 'execution_deleted') AND synced = 0`,
  deleteCheckpoints: `DELETE FROM checkpoints WHERE execution_id = ?`,
  deletePending: `DELETE FROM pending_interrupts WHERE execution_id = ?`,
  deleteIdem: `DELETE FROM idempotency WHERE execution_id = ?`,
  deleteExec: `DELETE FROM executions WHERE execution_id = ?`,
  deleteLease: `DELETE FROM leases WHERE execution_id = ?`,
  prunable: `SELECT e.execution_id,
            (EXISTS (SELECT 1 FROM checkpoints c WHERE c.execution_id = e.execution_id AND c.event_seq > 0)
             OR EXISTS (SELECT 1 FROM outbox_entries o WHERE o.execution_id = e.execution_id AND o.kind <> 'checkpoint' AND o.synced = 0)) AS unsynced
     FROM executions e
     WHERE e.last_step = 'run_end' AND e.last_status IN ('completed', 'failed', 'cancelled') AND e.updated_at < ?
       AND NOT EXISTS (SELECT 1 FROM pending_interrupts p WHERE p.execution_id = e.execution_id)
       AND e.execution_id > ?
     ORDER BY e.execution_id LIMIT ${PRUNE_CHUNK}`,
};

/** Delete an execution's outbox rows, before its checkpoints (which take their waiting events with them). */
export function dropOutbox(st: Statements, executionId: string): void {
  st.dropCheckpointEvents.run(executionId);
  st.dropOtherEvents.run(executionId);
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
    dropOutbox(st, id);
    const checkpoints = st.deleteCheckpoints.run(id).changes;
    const idempotency = st.deleteIdem.run(id).changes;
    st.deleteExec.run(id);
    st.deleteLease.run(id);
    dropped(id);
    walk.deleted({ checkpoints, idempotency });
  }
}
