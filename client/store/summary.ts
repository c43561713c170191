import type { ExecutionState } from '../checkpointer.js';

/** How a run's last row and pause translate into its state. */
export function summaryState(lastStep: string, lastStatus: string, paused: boolean): ExecutionState {
  if (paused) return 'paused';
  if (lastStep === 'run_end') return lastStatus === 'failed' ? 'failed' : 'completed';
  return 'running';
}
