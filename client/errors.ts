import { ErrorCode, WaymarkError } from '../shared/errors.js';

/** A resume found nothing to continue: already finished, or another resumer won the pause. */
export class AlreadyResumed extends WaymarkError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.ALREADY_RESUMED, message, { details });
    this.name = 'AlreadyResumed';
  }
}

/**
 * A resume told to act only while the run's newest row is a given one
 * (`ResumeOptions.expectNewestId`: a run request the worker applies) found
 * another newest row: the run moved on since the request named it (retried,
 * recovered, resumed from code, taken up on another machine). Nothing was
 * written; a lease taken was given back. `details.newestId`, `details.newestSeq`: the row found.
 */
export class MovedOn extends WaymarkError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.MOVED_ON, message, { details });
    this.name = 'MovedOn';
  }
}

/**
 * A resume told to act only while the run's newest row is a given one
 * (`ResumeOptions.expectNewestId`) found that row missing from this store,
 * even after the plane's takeover brought what it holds: this copy is behind
 * the plane's (or the row is not this run's), so whether the run moved on is
 * not this store's to judge. Nothing was written; a lease taken was given
 * back. `details.newestId`, `details.newestSeq`: this store's newest row.
 */
export class StoreBehind extends WaymarkError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.STORE_BEHIND, message, { details });
    this.name = 'StoreBehind';
  }
}

/**
 * The pause has another decision, the first (recorded on the plane, or taking
 * the place of this one in the store): nothing was claimed. `details.decision`
 * is that decision, when known; apply it instead.
 */
export class AlreadyDecided extends WaymarkError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.ALREADY_DECIDED, message, { details });
    this.name = 'AlreadyDecided';
  }
}

/** The rows do not allow the requested re-entry (missing tool, fork from a marker…). */
export class CheckpointError extends WaymarkError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown>; code?: ErrorCode }) {
    super(options?.code ?? ErrorCode.CHECKPOINT_ERROR, message, options);
    this.name = 'CheckpointError';
  }
}

/** An idempotent call could not be keyed (arguments with no stable JSON form); `fn` did not run. */
export class IdempotencyError extends WaymarkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.IDEMPOTENCY_ERROR, message, options);
    this.name = 'IdempotencyError';
  }
}

/** An idempotency key cannot be stored (1..512 characters of well-formed text); checked before the side effect runs. */
export class InvalidIdempotencyKey extends WaymarkError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.INVALID_IDEMPOTENCY_KEY, message, { details });
    this.name = 'InvalidIdempotencyKey';
  }
}

/** `idempotent()` was given a function with a generic name and no `key`: its default key could collide. */
export class IdempotencyKeyRequired extends WaymarkError {
  constructor(name: string) {
    super(
      ErrorCode.IDEMPOTENCY_KEY_REQUIRED,
      `idempotent() of a function named '${name}' needs a \`key\`: that name could belong to many functions, whose default keys would collide`,
      {
        details: { name },
      },
    );
    this.name = 'IdempotencyKeyRequired';
  }
}

/**
 * A side effect ran but its result could not be recorded (no JSON form: a
 * BigInt, a cycle). Not a tool result: it escapes the run after a failed
 * marker (recoverRuns leaves it; a resume by hand runs the effect again).
 */
export class EffectNotRecorded extends WaymarkError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(ErrorCode.EFFECT_NOT_RECORDED, message, options);
    this.name = 'EffectNotRecorded';
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
    super(ErrorCode.DUPLICATE_ID, `checkpoint id ${id} already exists; rows are never overwritten`, {
      details: { id },
    });
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

/**
 * A write named the row it follows (`prevId`) and the execution no longer
 * holds it: the execution was deleted or pruned while the run was going.
 * Nothing was written; the run is not started again at seq 0.
 */
export class ExecutionGoneError extends WaymarkError {
  constructor(executionId: string, prevId: string) {
    super(
      ErrorCode.EXECUTION_GONE,
      `execution '${executionId}' no longer holds row ${prevId}, which this write follows: it was deleted or pruned meanwhile; nothing was written`,
      {
        details: { executionId, prevId },
      },
    );
    this.name = 'ExecutionGoneError';
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
    super(ErrorCode.RESUME_REQUIRED, `execution ${executionId} is paused (${reason}); resume it with a Resume value`, {
      details: { executionId, reason },
    });
    this.name = 'ResumeRequired';
  }
}

/**
 * The plane is up and refused the claim of a pause (a revoked or wrong key, a
 * missing scope, the pause not on the plane, a request-level 400): the resume
 * is refused, since resuming locally would turn off the fleet-wide claim.
 */
export class ClaimRefused extends WaymarkError {
  constructor(
    message: string,
    details: { executionId: string; checkpointId: string; status: number; planeCode: string | null },
  ) {
    super(ErrorCode.CLAIM_REFUSED, message, { details });
    this.name = 'ClaimRefused';
  }
}

/**
 * A resume of a run a plane holds, from a store with no plane connected:
 * another machine may resume the same pause (or take the run over) through
 * the plane, and only the plane's claim makes one of them win. Nothing was
 * claimed or written.
 */
export class NotConnected extends WaymarkError {
  constructor(readonly executionId: string) {
    super(
      ErrorCode.PLANE_NOT_CONNECTED,
      `execution '${executionId}' is held by a plane (its rows reached one, or were restored from one) and this store is not connected: ` +
        `another machine may resume it there. Connect the store first (connectPlane(store, …)) so the claim goes through the plane, ` +
        `or pass { withoutPlane: true } to resume it here without the fleet-wide claim; nothing was claimed`,
      { details: { executionId } },
    );
    this.name = 'NotConnected';
  }
}

/** A Resume value of the wrong shape; nothing was claimed. Names every problem. */
export class InvalidResume extends WaymarkError {
  constructor(readonly problems: string[]) {
    super(
      ErrorCode.INVALID_RESUME,
      `invalid Resume (expected { approved: boolean, metadata?: object }): ${problems.join('; ')}`,
      { details: { problems } },
    );
    this.name = 'InvalidResume';
  }
}

/**
 * What became of a lost lease of `epoch`: released with nobody holding it
 * (fenced, or the run cancelled), taken by another runner that since released
 * it, or held by another runner now.
 */
function leaseLossCause(epoch: number, current: { holder: string | null; epoch: number } | null): string {
  if (!current) return 'lost';
  if (current.holder !== null) return `taken by ${current.holder} (epoch ${current.epoch})`;
  return current.epoch === epoch
    ? 'released (nobody holds it now)'
    : `taken by another runner and since released (epoch ${current.epoch})`;
}

/** This runner's lease was taken by another runner (its own expired meanwhile); the write was refused, nothing written. */
export class LeaseLost extends WaymarkError {
  /** `why`, when given, replaces the generic tail: what the runner learnt and what to do (a takeover at the plane, an unreachable plane in strict mode). */
  constructor(
    executionId: string,
    details: {
      epoch: number;
      holder: string;
      current: { holder: string | null; epoch: number; expiresAt: string | null } | null;
    },
    why?: string,
  ) {
    super(
      ErrorCode.LEASE_LOST,
      why
        ? `execution ${executionId}: this runner lost the run: ${why}`
        : `execution ${executionId}: this runner's lease (epoch ${details.epoch}) was ${leaseLossCause(details.epoch, details.current)}; nothing was written`,
      { details: { executionId, ...details } },
    );
    this.name = 'LeaseLost';
  }
}

/** Another runner holds the run's lease and it has not expired: the run is not started a second time. */
export class RunInProgress extends WaymarkError {
  constructor(executionId: string, holder: string, expiresAt: string) {
    super(
      ErrorCode.RUN_IN_PROGRESS,
      `execution ${executionId} is being run by ${holder} (lease until ${expiresAt}); it was not run a second time`,
      { details: { executionId, holder, expiresAt } },
    );
    this.name = 'RunInProgress';
  }
}

/**
 * The run was cancelled. Thrown by a runner holding the lease at its next step
 * boundary (it wrote nothing after the cancel marker), and by `resume` of a
 * cancelled run, which is final like a completed one.
 */
export class RunCancelled extends WaymarkError {
  constructor(executionId: string, details: { reason: string | null; checkpointId: string | null }) {
    super(
      ErrorCode.RUN_CANCELLED,
      `execution ${executionId} was cancelled${details.reason ? ` (${details.reason})` : ''}; it does not run again and nothing more was written`,
      {
        details: { executionId, ...details },
      },
    );
    this.name = 'RunCancelled';
  }
}

/** `cancel` or `resume` of a run that already completed (`checkpointId`: its marker); nothing was written. */
export class AlreadyFinished extends WaymarkError {
  constructor(
    executionId: string,
    checkpointId: string,
    message = `execution ${executionId} already completed; a finished run is not cancelled`,
  ) {
    super(ErrorCode.ALREADY_FINISHED, message, { details: { executionId, checkpointId } });
    this.name = 'AlreadyFinished';
  }
}

/**
 * An answer to a run that never paused (it runs on, or failed; `details.status`, and a failed run's
 * `details.error`): it has no pause to answer; nothing was claimed.
 */
export class PauseNotFound extends WaymarkError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.PAUSE_NOT_FOUND, message, { details });
    this.name = 'PauseNotFound';
  }
}

/**
 * Another machine took this run over at the plane while this one was away
 * (its lease had expired by the plane's clock): this machine lost the run. Its
 * rows of the run after the takeover are refused by the plane (quarantined
 * here as `taken_over`), and it does not run it again.
 */
export class RunTakenOver extends WaymarkError {
  /**
   * `free`: nobody holds the run at the plane now (the winner stopped too);
   * this store's copy holds a branch the plane refused, so it may take the
   * run only after taking the plane's branch in its place
   * (`replica.adoptPlaneBranch`, which `recoverRuns` calls itself).
   */
  constructor(
    executionId: string,
    details: { writerId: string; fromSeq: number | null; at: string | null; free?: boolean },
  ) {
    super(
      ErrorCode.RUN_TAKEN_OVER,
      `execution ${executionId} was taken over by writer '${details.writerId}'${details.fromSeq !== null ? ` at seq ${details.fromSeq}` : ''} while this machine was away; this machine lost the run and does not run it again` +
        (details.free
          ? ` on its own branch: nobody holds it now, so replica.adoptPlaneBranch('${executionId}') takes the plane's branch here, after which it may be resumed`
          : ''),
      { details: { executionId, ...details } },
    );
    this.name = 'RunTakenOver';
  }
}
