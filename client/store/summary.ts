import type { ExecutionState, ExecutionSummary } from '../checkpointer.js';
import type { ExecutionColumns } from './columns.js';
import { leaseInfoOf } from './lease.js';

/** How a run's last row and pause translate into its state. */
export function summaryState(lastStep: string, lastStatus: string, paused: boolean): ExecutionState {
  if (paused) return 'paused';
  if (lastStep === 'run_end')
    return lastStatus === 'failed' ? 'failed' : lastStatus === 'cancelled' ? 'cancelled' : 'completed';
  return 'running';
}

/** An `executions` row as both adapters select it (with `paused` from the pending join). */
export interface ExecRow extends ExecutionColumns {
  paused: number | boolean;
  lease_holder: string | null;
  lease_epoch: number | string | null;
  lease_expires_at: number | string | null;
}

/** SQL condition (over `e` executions and `p` pending) selecting runs in one state; the same text on both engines. */
export function stateCondition(state: ExecutionState): string {
  switch (state) {
    case 'paused':
      return 'p.execution_id IS NOT NULL';
    case 'running':
      return `p.execution_id IS NULL AND e.last_step <> 'run_end'`;
    case 'completed':
      return `p.execution_id IS NULL AND e.last_step = 'run_end' AND e.last_status NOT IN ('failed', 'cancelled')`;
    case 'failed':
      return `p.execution_id IS NULL AND e.last_step = 'run_end' AND e.last_status = 'failed'`;
    case 'cancelled':
      return `p.execution_id IS NULL AND e.last_step = 'run_end' AND e.last_status = 'cancelled'`;
  }
}

export function summaryFromRow(r: ExecRow, nowMs: number): ExecutionSummary {
  return {
    executionId: r.execution_id,
    state: summaryState(r.last_step, r.last_status, Boolean(r.paused)),
    rowCount: Number(r.next_seq),
    lastSeq: Number(r.next_seq) - 1,
    lastNodeId: r.last_node_id,
    lastStep: r.last_step as ExecutionSummary['lastStep'],
    lastStatus: r.last_status as ExecutionSummary['lastStatus'],
    updatedAt: r.updated_at,
    lease:
      r.lease_epoch === null
        ? null
        : leaseInfoOf(
            {
              execution_id: r.execution_id,
              holder: r.lease_holder,
              epoch: r.lease_epoch,
              expires_at: r.lease_expires_at ?? 0,
            },
            nowMs,
          ),
  };
}
