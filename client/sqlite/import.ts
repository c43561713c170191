/**
 * The SQLite store's import (`importRows`): rows from a bundle (a restore
 * from the plane) inserted as held by the plane (never queued, so the
 * run shows as held by a plane), never overwriting a local row. Inside
 * the caller's IMMEDIATE transaction the plan (client/store/import.ts) is
 * made against the local rows and written, pauses that are no longer the
 * newest row are dropped as stale, and the bundle's pause and idempotency
 * entries are added.
 */
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import type * as C from '../checkpointer.js';
import {
  checkpointValues,
  executionValues,
  toColumns,
  type CheckpointColumns,
  type PendingColumns,
} from '../store/columns.js';
import { importResultOf, planImport } from '../store/import.js';
import type { Statements } from './statements.js';

/** Write a checked bundle inside the caller's transaction; `dropped` hears each execution whose newest row moved. */
export function importInto(
  st: Statements,
  bundle: { checkpoints: Checkpoint[]; pending: PendingInterrupt | null; idempotency: IdempotencyEntry[] },
  dropped: (executionId: string) => void,
): C.ImportResult {
  const { checkpoints, pending, idempotency: idem } = bundle;
  const plan = planImport(checkpoints, {
    idAt: (e, seq) => (st.getBySeq.get(e, seq) as { id: string } | undefined)?.id ?? null,
    find: (id) => {
      const r = st.getById.get(id) as CheckpointColumns | undefined;
      return r ? { executionId: r.execution_id, seq: Number(r.seq) } : null;
    },
  });
  const res = importResultOf(plan);
  for (const c of plan.insert) {
    st.insertRestoredCheckpoint.run(checkpointValues(c));
    st.upsertExec.run(executionValues(c));
    dropped(c.executionId);
    res.inserted++;
  }
  const executions = new Set(checkpoints.map((c) => c.executionId));
  if (pending) executions.add(pending.executionId);
  for (const e of [...executions].sort()) {
    // a pause is open only while its checkpoint is the newest row: one that is not is stale
    const open = st.getPending.get(e) as PendingColumns | undefined;
    const latest = st.latest.get(e) as CheckpointColumns | undefined;
    if (open && open.checkpoint_id !== latest?.id) {
      st.deletePending.run(e);
      res.stalePendingRemoved.push({ executionId: e, checkpointId: open.checkpoint_id });
    }
  }
  if (pending) {
    const latest = st.latest.get(pending.executionId) as CheckpointColumns | undefined;
    if (latest?.id === pending.checkpointId && !st.getPending.get(pending.executionId)) {
      st.insertPending.run(toColumns.pending(pending));
      res.pendingImported = true;
    }
  }
  for (const e of idem) res.idempotencyInserted += st.insertIdem.run(toColumns.idempotency(e)).changes;
  return res;
}
