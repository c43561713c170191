/** Cancel helpers both adapters share: option checks, the marker row, and how a refused fence is named. */
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { textProblem } from '../../shared/json.js';
import type { State } from '../../shared/codec.js';
import { cancelMarkerFields, cancelReason, type Checkpoint, isCancelMarker } from '../../shared/rows.js';
import type { CancelOptions, CheckpointInput } from '../checkpointer.js';
import { AlreadyFinished, CheckpointError, RunCancelled } from '../errors.js';
import { lengthProblem, objectProblem } from '../../support/validate.js';

/** The reason to store (null when none), or INVALID_CANCEL naming every problem; nothing is written either way. */
export function checkCancel(executionId: unknown, options: CancelOptions | undefined): string | null {
  const problems = [lengthProblem('executionId', executionId, 1), objectProblem('options', options)];
  const reason = options && typeof options === 'object' ? (options as CancelOptions).reason : undefined;
  if (reason !== undefined && reason !== null)
    problems.push(
      lengthProblem('reason', reason, 0, LIMITS.reasonLength),
      typeof reason === 'string' ? textProblem(reason, 'reason') : null,
    );
  const given = problems.filter((p): p is string => p !== null);
  if (given.length)
    throw new WaymarkError(ErrorCode.INVALID_CANCEL, `invalid cancel: ${given.join('; ')}`, {
      details: { problems: given },
    });
  return typeof reason === 'string' && reason.length ? reason : null;
}

export { cancelReason, isCancelMarker };

/**
 * Whether a cancel finds its work done: true when `last` (the execution's
 * newest row) is already a cancel marker; AlreadyFinished when the run completed.
 */
export function alreadyCancelled(last: Checkpoint): boolean {
  if (isCancelMarker(last)) return true;
  if (last.step === 'run_end' && last.status === 'completed') throw new AlreadyFinished(last.executionId, last.id);
  return false;
}

/** The reason stored in a cancel marker. */
export function runCancelled(marker: Checkpoint): RunCancelled {
  return new RunCancelled(marker.executionId, { reason: cancelReason(marker), checkpointId: marker.id });
}

/** The marker a cancel writes after `last` (the execution's newest row), carrying its state. */
export function cancelMarker(last: Checkpoint, state: State, reason: string | null): CheckpointInput {
  return { ...cancelMarkerFields(last, reason), executionId: last.executionId, prevId: last.id, state };
}

export function notFound(executionId: string): CheckpointError {
  return new CheckpointError(`execution '${executionId}' has no rows in this store; nothing was cancelled`, {
    code: ErrorCode.EXECUTION_NOT_FOUND,
    details: { executionId },
  });
}
