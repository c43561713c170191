/**
 * The SQLite store's execution row, which orders every write of a run, and
 * the new row a write adds beside it: its position as stored, the upsert
 * that moves it (only forward), and the checkpoint insert. Also how a driver
 * error names its code, for the writes that turn a primary-key violation
 * into a typed error. (SQLite has no row lock: the caller's IMMEDIATE
 * transaction holds the whole file.)
 */
import type { Checkpoint } from '../../shared/rows.js';
import type { Lease } from '../checkpointer.js';
import { CHECKPOINT_COLUMNS, EXECUTION_COLUMNS, executionValues } from '../store/columns.js';
import type { Statements } from './statements.js';

const placeholders = (columns: readonly string[]) => columns.map(() => '?').join(', ');
// bound with `advanceValues`: the head's columns after `execution_id`, in EXECUTION_COLUMNS order
const ADVANCE = EXECUTION_COLUMNS.slice(1)
  .map((c) => `${c} = ?`)
  .join(', ');

/** The execution row's statements (see statements.ts). */
export const executionStatements = {
  getExec: `SELECT next_seq, last_id FROM executions WHERE execution_id = ?`,
  // bound positionally with executionValues / checkpointValues (store/columns.ts), in their columns' order
  upsertExec: `INSERT INTO executions (${EXECUTION_COLUMNS.join(', ')}) VALUES (${placeholders(EXECUTION_COLUMNS)})
     ON CONFLICT (execution_id) DO UPDATE SET
       next_seq = excluded.next_seq, last_id = excluded.last_id, last_node_id = excluded.last_node_id,
       last_step = excluded.last_step, last_status = excluded.last_status, updated_at = excluded.updated_at
     WHERE excluded.next_seq > executions.next_seq`,
  // the next row on a cached cursor: the execution moves only if it is still at that row (and, fenced, the lease is the writer's)
  advanceExec: `UPDATE executions SET ${ADVANCE} WHERE execution_id = ? AND next_seq = ? AND last_id = ?`,
  advanceExecFenced: `UPDATE executions SET ${ADVANCE} WHERE execution_id = ? AND next_seq = ? AND last_id = ?
     AND EXISTS (SELECT 1 FROM leases l WHERE l.execution_id = executions.execution_id AND l.holder = ? AND l.epoch = ?)`,
  insertCheckpoint: checkpointInsert(),
};

/**
 * A checkpoint insert bound with `checkpointValues` (store/columns.ts), then a `?` for each of `extra`'s values that
 * is one: its columns beyond the row's (the outbox's `event_seq` and `event_bytes`, outbox.ts) and their SQL.
 */
export function checkpointInsert(extra: Readonly<Record<string, string>> = {}): string {
  const columns = [...CHECKPOINT_COLUMNS, ...Object.keys(extra)];
  const values = [placeholders(CHECKPOINT_COLUMNS), ...Object.values(extra)];
  return `INSERT INTO checkpoints (${columns.join(', ')}) VALUES (${values.join(', ')})`;
}

/** `advanceExec`'s values: the head after `row`, then the head it must still be at (`prev`), then the lease's holder and epoch when fenced. */
export function advanceValues(row: Checkpoint, prev: { seq: number; id: string | null }, lease?: Lease): unknown[] {
  const [executionId, ...head] = executionValues(row);
  return [...head, executionId, prev.seq + 1, prev.id, ...(lease ? [lease.holder, lease.epoch] : [])];
}

export function sqliteCode(e: unknown): string | undefined {
  return (e as { code?: string })?.code;
}

/** Inside the caller's IMMEDIATE transaction: an execution's position as stored (undefined when it has no row). */
export function executionAt(st: Statements, executionId: string): { next_seq: number; last_id: string } | undefined {
  return st.getExec.get(executionId) as { next_seq: number; last_id: string } | undefined;
}
