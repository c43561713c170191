/**
 * The Postgres store's execution row, which orders every write of a run: its
 * lock (taken by each locked write and by an import) and the columns a new
 * newest row moves. Also how a driver error names its SQLSTATE and
 * constraint, for the writes that turn a unique violation into a typed error.
 */
import type { Tables, Tx } from './tables.js';

/** The `executions` columns a new newest row moves. */
export const ADVANCE = ['next_seq', 'last_id', 'last_node_id', 'last_step', 'last_status', 'updated_at'] as const;

export function pgCode(e: unknown): string | undefined {
  return (e as { code?: string })?.code;
}

export function constraintOf(e: unknown): string | undefined {
  return (e as { constraint_name?: string })?.constraint_name;
}

/** Lock an execution's row inside the caller's transaction (a placeholder row when new); its position as stored. */
export async function lockExecution(
  tx: Tx,
  t: Tables,
  executionId: string,
): Promise<{ next_seq: number; last_id: string }> {
  const [ex] = await tx<{ next_seq: number; last_id: string }[]>`
    INSERT INTO ${t.executions} (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at)
    VALUES (${executionId}, 0, '', '', '', '', '')
    ON CONFLICT (execution_id) DO UPDATE SET execution_id = excluded.execution_id
    RETURNING next_seq, last_id`;
  return ex;
}
