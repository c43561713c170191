import type { ExecutionState, ExecutionSummary } from '../checkpointer.js';

/** How a run's last row and pause translate into its state. */
export function summaryState(lastStep: string, lastStatus: string, paused: boolean): ExecutionState {
  if (paused) return 'paused';
  if (lastStep === 'run_end') return lastStatus === 'failed' ? 'failed' : 'completed';
  return 'running';
}

/** An `executions` row as both adapters select it (with `paused` from the pending join). */
export interface ExecRow {
  execution_id: string;
  next_seq: number;
  last_id: string;
  last_node_id: string;
  last_step: string;
  last_status: string;
  updated_at: string;
  paused: number | boolean;
}

export function summaryFromRow(r: ExecRow): ExecutionSummary {
  return {
    executionId: r.execution_id,
    state: summaryState(r.last_step, r.last_status, Boolean(r.paused)),
    rowCount: Number(r.next_seq),
    lastSeq: Number(r.next_seq) - 1,
    lastNodeId: r.last_node_id,
    lastStep: r.last_step as ExecutionSummary['lastStep'],
    lastStatus: r.last_status as ExecutionSummary['lastStatus'],
    updatedAt: r.updated_at,
  };
}
