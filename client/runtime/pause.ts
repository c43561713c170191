/**
 * Naming the pause a resume answers (issue 16). A decision answers one pause
 * (its `interrupted` checkpoint id); `resume` with `checkpointId` refuses to
 * answer any other, so a decision made for an earlier pause never answers a
 * later one the person was not shown.
 */
import type { Checkpoint } from '../../shared/rows.js';
import { AlreadyResumed } from '../errors.js';
import type { RunOptions } from './agent.js';

/** Options of `resume`: which pause the answer is for, and the decision it applies. */
export interface ResumeOptions extends RunOptions {
  /** Answer only this pause (its `interrupted` checkpoint id): another open pause of the run is AlreadyResumed naming both; nothing is claimed. */
  checkpointId?: string;
  /** The decision this resume applies (a decision worker): recorded on the claim, locally and at the plane. Needs `checkpointId`; the store refuses (INVALID_DECISION) a decision it holds for another pause. */
  decisionId?: string;
  /**
   * Resume a run a plane holds from a store with no plane connected, giving
   * up the fleet-wide claim (another machine may resume the same pause
   * through the plane). Without it such a resume is refused with
   * NotConnected (PLANE_NOT_CONNECTED) and nothing is claimed.
   */
  withoutPlane?: boolean;
}

/** The pause asked for is not the run's newest row: answered already (the run moved on, maybe to another pause). */
export function pauseNotOpen(executionId: string, checkpointId: string, latest: Checkpoint): AlreadyResumed {
  const open = latest.status === 'interrupted' ? latest.id : null;
  return new AlreadyResumed(
    `execution '${executionId}': the pause at checkpoint ${checkpointId} is no longer open${open ? `; the run's open pause is ${open}, not answered` : ''}; nothing was claimed`,
    { executionId, checkpointId, openCheckpointId: open },
  );
}
