import { z } from 'zod';

/**
 * Stable error codes. Errors that cross a process, a checkpoint or the wire
 * lose their class; classify them by `code`, never by message text.
 */
export const ErrorCode = {
  ALREADY_RESUMED: 'ALREADY_RESUMED',
  CHECKPOINT_ERROR: 'CHECKPOINT_ERROR',
  IDEMPOTENCY_ERROR: 'IDEMPOTENCY_ERROR',
  /** An idempotency key that cannot be stored (empty, too long, not well-formed text); `fn` did not run. */
  INVALID_IDEMPOTENCY_KEY: 'INVALID_IDEMPOTENCY_KEY',
  /** `idempotent()` of a function whose name cannot tell it apart (anonymous, `bound …`) was given no `key`. */
  IDEMPOTENCY_KEY_REQUIRED: 'IDEMPOTENCY_KEY_REQUIRED',
  /** An idempotent side effect ran but its result has no JSON form to record: the run is stopped, not failed. */
  EFFECT_NOT_RECORDED: 'EFFECT_NOT_RECORDED',
  INVALID_ROW: 'INVALID_ROW',
  DUPLICATE_ID: 'DUPLICATE_ID',
  PAUSE_EXISTS: 'PAUSE_EXISTS',
  CORRUPT_ROW: 'CORRUPT_ROW',
  RESUME_REQUIRED: 'RESUME_REQUIRED',
  EXECUTION_EXISTS: 'EXECUTION_EXISTS',
  EXECUTION_NOT_FOUND: 'EXECUTION_NOT_FOUND',
  /** A write named the row it follows (`prevId`) and that row is gone: the execution was deleted or pruned meanwhile. Nothing was written. */
  EXECUTION_GONE: 'EXECUTION_GONE',
  TOOL_NOT_FOUND: 'TOOL_NOT_FOUND',
  MAX_TURNS: 'MAX_TURNS',
  MODEL_ERROR: 'MODEL_ERROR',
  STORE_CLOSED: 'STORE_CLOSED',
  NOT_ON_PLANE: 'NOT_ON_PLANE',
  PLANE_ERROR: 'PLANE_ERROR',
  STORE_FAILED: 'STORE_FAILED',
  CLAIM_REFUSED: 'CLAIM_REFUSED',
  /** A Resume value that is not `{ approved: boolean, metadata?: {…JSON} }`; every problem is named in `details.problems`. */
  INVALID_RESUME: 'INVALID_RESUME',
  /** A write or renewal by a runner whose lease another runner has taken; nothing was written. */
  LEASE_LOST: 'LEASE_LOST',
  /** A lease request with an empty holder, a ttl that is not a positive integer, or a lease of another execution. */
  INVALID_LEASE: 'INVALID_LEASE',
  /** The run is held by a live lease of another runner (details: holder, expiresAt). */
  RUN_IN_PROGRESS: 'RUN_IN_PROGRESS',
  /** Another machine took this run over at the plane while this one was away (its lease expired by the plane's clock): this machine lost the run. */
  RUN_TAKEN_OVER: 'RUN_TAKEN_OVER',
  /** The run was cancelled (`cancel`): a runner stops at its next step boundary having written nothing more; a resume is refused. */
  RUN_CANCELLED: 'RUN_CANCELLED',
  /** `cancel` of a run that already completed: a finished run is not cancelled; nothing was written. */
  ALREADY_FINISHED: 'ALREADY_FINISHED',
  /** `cancel` options that cannot be stored (details.problems names each); nothing was written. */
  INVALID_CANCEL: 'INVALID_CANCEL',
  /** The plane refused a row of this run (a hole at a seq): its copy is incomplete and is not restored. */
  RUN_INCOMPLETE: 'RUN_INCOMPLETE',
  /** A restore's rows failed the client's check (seq not continuous from 0, a chain that does not decode, a pause that is not the newest row): nothing was imported. */
  RESTORE_UNVERIFIED: 'RESTORE_UNVERIFIED',
  /** A key asked for a project the plane does not have (or the caller may not see); the known ones are listed. */
  UNKNOWN_PROJECT: 'UNKNOWN_PROJECT',
  /** `waymark plane projects create` of a name that exists. */
  PROJECT_EXISTS: 'PROJECT_EXISTS',
  /** No key with that id in the caller's project. */
  KEY_NOT_FOUND: 'KEY_NOT_FOUND',
  /** The key was revoked already. */
  KEY_REVOKED: 'KEY_REVOKED',
  /** Another live process (named: pid, url) holds the plane's data dir; PGlite is one process's database. */
  DATA_DIR_LOCKED: 'DATA_DIR_LOCKED',
  /** A LangGraph config or checkpoint the waymark saver cannot map onto rows (missing thread_id, an id too long, a thread owned by another run); every problem is named in `details.problems`. */
  INVALID_GRAPH_CONFIG: 'INVALID_GRAPH_CONFIG',
  /** `waymark/ai-sdk` was given a model of a spec it does not implement (it supports LanguageModelV3); `details.specificationVersion` names the one given. */
  UNSUPPORTED_MODEL: 'UNSUPPORTED_MODEL',
  /** A subpath was imported without its optional peer dependency installed (`waymark/postgres` without `postgres`); the message says what to install. */
  MISSING_PEER: 'MISSING_PEER',
  /** A run that failed with an error that carried no code of its own (the run-end marker's default). */
  RUN_FAILED: 'RUN_FAILED',
  /** recoverRuns: a resume that threw without a code. */
  RECOVERY_FAILED: 'RECOVERY_FAILED',
  /** A request (HTTP body or admin call) that names its problems in the message; nothing changed. */
  INVALID_REQUEST: 'INVALID_REQUEST',
  /** The key is valid but lacks the scope (or the operator role) the action needs. */
  FORBIDDEN: 'FORBIDDEN',
  /** A `waymark plane` admin command found a running plane but no admin key to use with it. */
  ADMIN_KEY_REQUIRED: 'ADMIN_KEY_REQUIRED',
  /** The pause named is not on the plane (not synced yet, or of another project). */
  PAUSE_NOT_FOUND: 'PAUSE_NOT_FOUND',
  /** A `waymark plane` admin command pointed at a data dir that holds no plane database (nothing was created). */
  NO_PLANE_DATA: 'NO_PLANE_DATA',
  /** A constructor or function given options it cannot work with; the message names each. */
  INVALID_OPTIONS: 'INVALID_OPTIONS',
  // ── the plane's HTTP answers (plane/http/errors.ts: HttpError) ──
  /** No key, or a key that is malformed, unknown or revoked (401). */
  UNAUTHORIZED: 'UNAUTHORIZED',
  /** No route for this method and path (404). */
  NOT_FOUND: 'NOT_FOUND',
  /** The plane's database does not answer (503, Retry-After); retry later. */
  UNAVAILABLE: 'UNAVAILABLE',
  /** /readyz: the database is not reachable (503, Retry-After). */
  NOT_READY: 'NOT_READY',
  /** A failure of the plane itself (500); the log has it. */
  INTERNAL: 'INTERNAL',
  /** The client closed the connection before its request body arrived (499; logged, never answered). */
  CLIENT_ABORTED: 'CLIENT_ABORTED',
  /** Too many ingest batches in flight or waiting (429, Retry-After). */
  BUSY: 'BUSY',
  /** An ingest envelope whose protocol version this plane does not speak (400). */
  PROTOCOL: 'PROTOCOL',
  /** An ingest envelope that is not `{ protocol, writerId, rows, backlog? }` (400). */
  INVALID_ENVELOPE: 'INVALID_ENVELOPE',
  /** An ingest batch over `LIMITS.batchRows` rows (413). */
  TOO_MANY_ROWS: 'TOO_MANY_ROWS',
  /** A request body over its byte limit, before or after gzip (413). */
  TOO_LARGE: 'TOO_LARGE',
  /** A request body that stalled or trickled past its deadline (408; the connection is closed). */
  BODY_TIMEOUT: 'BODY_TIMEOUT',
  /** A body that is not JSON (400). */
  BAD_JSON: 'BAD_JSON',
  /** A gzip body that does not inflate (400). */
  BAD_GZIP: 'BAD_GZIP',
  /** A body that is not application/json (415). */
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  /** A Content-Encoding other than gzip or identity (415). */
  UNSUPPORTED_ENCODING: 'UNSUPPORTED_ENCODING',
  /** A page cursor this plane did not issue (400). */
  BAD_CURSOR: 'BAD_CURSOR',
  /** Another writer holds the claim of this pause (409; `details.writerId`). */
  ALREADY_CLAIMED: 'ALREADY_CLAIMED',
  /** A claim its holder already applied (resumed) cannot be released (409). */
  CLAIM_APPLIED: 'CLAIM_APPLIED',
  /** A takeover refused: the run's writer was heard from within the takeover delay (409; `details.liveUntil`). */
  LEASE_LIVE: 'LEASE_LIVE',
  /** A takeover refused: the plane holds newer rows of the run than the asking copy (409); restore again. */
  STALE_COPY: 'STALE_COPY',
  /** A takeover refused: the run is paused or finished on the plane (409). */
  NOT_RUNNING: 'NOT_RUNNING',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Base of every waymark error: a stable `code`, a message, an optional cause. */
export class WaymarkError extends Error {
  readonly code: string;
  readonly details?: Record<string, unknown>;
  constructor(code: string, message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'WaymarkError';
    this.code = code;
    if (options?.details) this.details = options.details;
  }
}

/** True when `e` carries the given waymark code (works across realms and processes). */
export function hasCode(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

/** The JSON error body every HTTP endpoint answers with. */
export const ErrorBody = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Why a run failed, as its run-end marker records it (`nodeOutput.error`). */
export interface RunError {
  code: string;
  message: string;
}

/** The error a failed run-end marker carries, with defaults for a marker written without one. */
export function runErrorOf(nodeOutput: unknown): RunError {
  const e = (nodeOutput as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return { code: String(e?.code ?? ErrorCode.RUN_FAILED), message: String(e?.message ?? 'no reason recorded') };
}
