/**
 * The Postgres store's deletions: one execution (`deleteExecution`, which
 * queues the deletion for the plane) and a chunk of old finished runs
 * (`prune`, which walks executions in id order a chunk per transaction).
 * Each runs inside the caller's transaction.
 */
import type * as C from '../checkpointer.js';
import { executionDeleted, type QueuedEvent } from '../store/events.js';
import { PRUNE_CHUNK, type PruneCandidate, type PruneWalk } from '../store/prune.js';
import { textList, type Tables, type Tx } from './tables.js';
import { dropDecisions } from './decisions.js';

/**
 * Delete an execution's rows and its unsent events; `queue` records the
 * deletion when there was anything to delete. `localOnly` queues nothing and
 * keeps a deletion of the run queued earlier (an earlier plain delete the plane
 * has not heard of yet).
 */
export async function deleteRows(
  tx: Tx,
  t: Tables,
  executionId: string,
  queue: (e: QueuedEvent) => unknown,
  localOnly = false,
): Promise<C.DeleteResult> {
  // the lease, then the execution row (the store's lock order, lease → execution → pending; see
  // checkpointer.ts): a fenced write holds the lease while it writes, and any writer holds the execution
  // row's lock while it checks `prevId` and inserts, so a write either commits before this deletion (and
  // its rows are deleted) or runs after it (and is refused)
  await tx`DELETE FROM ${t.leases} WHERE execution_id = ${executionId}`;
  const e = await tx`DELETE FROM ${t.executions} WHERE execution_id = ${executionId}`;
  const c = await tx`DELETE FROM ${t.checkpoints} WHERE execution_id = ${executionId}`;
  const p = await tx`DELETE FROM ${t.pending} WHERE execution_id = ${executionId}`;
  const i = await tx`DELETE FROM ${t.idempotency} WHERE execution_id = ${executionId}`;
  await dropDecisions(tx, t, executionId);
  await tx`DELETE FROM ${t.outbox} WHERE execution_id = ${executionId} AND NOT synced AND (kind <> 'execution_deleted' OR NOT ${localOnly})`;
  if (!localOnly && (e.count || c.count || i.count)) await queue(executionDeleted(executionId));
  return { checkpoints: c.count, pending: p.count, idempotency: i.count };
}

/** One chunk of a prune walk: the next prunable executions, locked, deleted with their events; `dropped` hears each id. */
export async function pruneChunk(
  tx: Tx,
  t: Tables,
  walk: PruneWalk,
  dropped: (executionId: string) => void,
): Promise<void> {
  const prunable = (
    e: Tx,
  ) => e`e.last_step = 'run_end' AND e.last_status IN ('completed', 'failed', 'cancelled') AND e.updated_at < ${walk.cutoff}
      AND NOT EXISTS (SELECT 1 FROM ${t.pending} p WHERE p.execution_id = e.execution_id)`;
  // the chunk read without locks; its leases are locked, then its executions, each in id order (the
  // store's lock order, lease → execution; see checkpointer.ts), and each judged again under its lock
  const chunk = await tx<PruneCandidate[]>`
    SELECT e.execution_id,
           EXISTS (SELECT 1 FROM ${t.outbox} o WHERE o.execution_id = e.execution_id AND NOT o.synced) AS unsynced
    FROM ${t.executions} e
    WHERE ${prunable(tx)} AND e.execution_id COLLATE "C" > ${walk.after}
    ORDER BY e.execution_id COLLATE "C" LIMIT ${PRUNE_CHUNK}`;
  const take = walk.take(chunk);
  if (!take.length) return;
  await tx`SELECT 1 AS one FROM ${t.leases} WHERE execution_id IN ${textList(tx, take)} ORDER BY execution_id COLLATE "C" FOR UPDATE`;
  const locked = await tx<{ execution_id: string }[]>`
    SELECT e.execution_id FROM ${t.executions} e
    WHERE e.execution_id IN ${textList(tx, take)} AND ${prunable(tx)}
    ORDER BY e.execution_id COLLATE "C" FOR UPDATE OF e`;
  for (const { execution_id: id } of locked) {
    const c = await tx`DELETE FROM ${t.checkpoints} WHERE execution_id = ${id}`;
    const i = await tx`DELETE FROM ${t.idempotency} WHERE execution_id = ${id}`;
    await tx`DELETE FROM ${t.executions} WHERE execution_id = ${id}`;
    await tx`DELETE FROM ${t.leases} WHERE execution_id = ${id}`;
    await dropDecisions(tx, t, id);
    await tx`DELETE FROM ${t.outbox} WHERE execution_id = ${id}`;
    dropped(id);
    walk.deleted({ checkpoints: c.count, idempotency: i.count });
  }
}
