import { ErrorCode, WaymarkError } from '../shared/errors.js';

/** A resume found nothing to continue: already finished, or another resumer won the pause. */
export class AlreadyResumed extends WaymarkError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.ALREADY_RESUMED, message, { details });
    this.name = 'AlreadyResumed';
  }
}

/** The rows do not allow the requested re-entry (missing tool, fork from a marker…). */
export class CheckpointError extends WaymarkError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown>; code?: string }) {
    super(options?.code ?? ErrorCode.CHECKPOINT_ERROR, message, options);
    this.name = 'CheckpointError';
  }
}

/** An idempotent call could not be cached (non-JSON result or arguments). */
export class IdempotencyError extends WaymarkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.IDEMPOTENCY_ERROR, message, options);
    this.name = 'IdempotencyError';
  }
}

/** A row failed the wire schema; nothing was written. */
export class InvalidRowError extends WaymarkError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.INVALID_ROW, message, { details });
    this.name = 'InvalidRowError';
  }
}

/** A checkpoint id was reused; the stored row is unchanged. */
export class DuplicateIdError extends WaymarkError {
  constructor(id: string) {
    super(ErrorCode.DUPLICATE_ID, `checkpoint id ${id} already exists; rows are never overwritten`, { details: { id } });
    this.name = 'DuplicateIdError';
  }
}

/** A second pause was opened while one is already open for the execution. */
export class PauseExistsError extends WaymarkError {
  constructor(executionId: string) {
    super(ErrorCode.PAUSE_EXISTS, `execution ${executionId} already has an open pause`, { details: { executionId } });
    this.name = 'PauseExistsError';
  }
}

/** A stored row could not be read back (bad JSON, broken snapshot chain). */
export class CorruptRowError extends WaymarkError {
  constructor(rowId: string, problem: string, cause?: unknown) {
    super(ErrorCode.CORRUPT_ROW, `stored row ${rowId} is corrupt: ${problem}`, { cause, details: { rowId } });
    this.name = 'CorruptRowError';
  }
}

/** A paused run was resumed without a Resume value. */
export class ResumeRequired extends WaymarkError {
  constructor(executionId: string, reason: string) {
    super(
      ErrorCode.RESUME_REQUIRED,
      `execution ${executionId} is paused (${reason}); resume it with a Resume value`,
      { details: { executionId, reason } },
    );
    this.name = 'ResumeRequired';
  }
}

/**
 * The plane is up and refused the claim of a pause (a revoked or wrong key, a
 * missing scope, the pause not on the plane, a request-level 400): the resume
 * is refused, since resuming locally would turn off the fleet-wide claim.
 */
export class ClaimRefused extends WaymarkError {
  constructor(message: string, details: { executionId: string; checkpointId: string; status: number; planeCode: string | null }) {
    super(ErrorCode.CLAIM_REFUSED, message, { details });
    this.name = 'ClaimRefused';
  }
}
