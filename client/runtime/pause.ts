/**
 * Naming the pause a resume answers (issue 16). A decision answers one pause
 * (its `interrupted` checkpoint id); `resume` with `checkpointId` refuses to
 * answer any other, so a decision made for an earlier pause never answers a
 * later one the person was not shown.
 */
import type { Checkpoint } from '../../shared/rows.js';
import { AlreadyResumed } from '../errors.js';

/** The pause asked for is not the run's newest row: answered already (the run moved on, maybe to another pause). */
export function pauseNotOpen(executionId: string, checkpointId: string, latest: Checkpoint): AlreadyResumed {
  const open = latest.status === 'interrupted' ? latest.id : null;
  return new AlreadyResumed(
    `execution '${executionId}': the pause at checkpoint ${checkpointId} is no longer open${open ? `; the run's open pause is ${open}, not answered` : ''}; nothing was claimed`,
    { executionId, checkpointId, openCheckpointId: open },
  );
}
