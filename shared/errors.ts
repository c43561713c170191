import { z } from 'zod';

/**
 * Stable error codes: the only way to name an error. Errors that cross a
 * process, a checkpoint or the wire lose their class; classify them by `code`,
 * never by message text. `WaymarkError.code` is typed by this registry, and
 * test/shared/error-codes.test.ts fails on a code in the source that is not
 * here, so a new code is added here first, with what it means.
 */
export const ErrorCode = {
  /** A resume with an answer whose pause was answered already (by another resumer, or before the run went on); the message says what the run did since (details.status; a failed run's details.error). Nothing was claimed. */
  ALREADY_RESUMED: 'ALREADY_RESUMED',
  CHECKPOINT_ERROR: 'CHECKPOINT_ERROR',
  IDEMPOTENCY_ERROR: 'IDEMPOTENCY_ERROR',
  /** An idempotency key that cannot be stored (empty, too long, not well-formed text); `fn` did not run. */
  INVALID_IDEMPOTENCY_KEY: 'INVALID_IDEMPOTENCY_KEY',
  /** `idempotent()` of a function whose name cannot tell it apart (anonymous, `bound …`) was given no `key`. */
  IDEMPOTENCY_KEY_REQUIRED: 'IDEMPOTENCY_KEY_REQUIRED',
  /** An idempotent side effect ran but its result cannot be recorded (no JSON form, over the row limit): thrown from run/resume after a failed marker, so no recovery runs the effect again. */
  EFFECT_NOT_RECORDED: 'EFFECT_NOT_RECORDED',
  INVALID_ROW: 'INVALID_ROW',
  DUPLICATE_ID: 'DUPLICATE_ID',
  PAUSE_EXISTS: 'PAUSE_EXISTS',
  CORRUPT_ROW: 'CORRUPT_ROW',
  RESUME_REQUIRED: 'RESUME_REQUIRED',
  EXECUTION_EXISTS: 'EXECUTION_EXISTS',
  /** No run of that id (in this store; on the plane: in the key's project, 404). */
  EXECUTION_NOT_FOUND: 'EXECUTION_NOT_FOUND',
  /** A write named the row it follows (`prevId`) and that row is gone: the execution was deleted or pruned meanwhile. Nothing was written. */
  EXECUTION_GONE: 'EXECUTION_GONE',
  /** A run to resume or recover needs a tool (named in `details.tool`) that its agent does not have; nothing was written and a pause is not consumed. A tool name the model makes up is not this error: it is answered to the model as a tool result. */
  TOOL_NOT_FOUND: 'TOOL_NOT_FOUND',
  MAX_TURNS: 'MAX_TURNS',
  MODEL_ERROR: 'MODEL_ERROR',
  STORE_CLOSED: 'STORE_CLOSED',
  /** `openStore(spec, { mustExist: true })` found no store at the path. */
  STORE_NOT_FOUND: 'STORE_NOT_FOUND',
  NOT_ON_PLANE: 'NOT_ON_PLANE',
  PLANE_ERROR: 'PLANE_ERROR',
  STORE_FAILED: 'STORE_FAILED',
  CLAIM_REFUSED: 'CLAIM_REFUSED',
  /** A resume of a run a plane holds (some of its checkpoints reached one, or came from one) from a store with no plane connected: another machine may resume it there. Nothing was claimed. */
  PLANE_NOT_CONNECTED: 'PLANE_NOT_CONNECTED',
  /** A Resume value that is not `{ approved: boolean, metadata?: {…JSON} }`; every problem is named in `details.problems`. */
  INVALID_RESUME: 'INVALID_RESUME',
  /** A write or renewal by a runner whose lease another runner has taken; nothing was written (409 on the plane). */
  LEASE_LOST: 'LEASE_LOST',
  /** A lease request with an empty holder, a ttl that is not a positive integer, or a lease of another execution. */
  INVALID_LEASE: 'INVALID_LEASE',
  /** The run is held by a live lease of another runner (details: holder, expiresAt). */
  RUN_IN_PROGRESS: 'RUN_IN_PROGRESS',
  /** Another machine took this run over at the plane while this one was away (its lease expired by the plane's clock): this machine lost the run (409 on the plane). */
  RUN_TAKEN_OVER: 'RUN_TAKEN_OVER',
  /** The run was cancelled (`cancel`): a runner stops at its next step boundary having written nothing more; a resume is refused (409 on the plane). */
  RUN_CANCELLED: 'RUN_CANCELLED',
  /** `cancel` or `resume` of a run that already completed: a finished run is neither cancelled nor resumed; nothing was written (409 on the plane). */
  ALREADY_FINISHED: 'ALREADY_FINISHED',
  /** `cancel` options that cannot be stored (details.problems names each); nothing was written. */
  INVALID_CANCEL: 'INVALID_CANCEL',
  /** A decision that cannot be recorded (a field missing or of the wrong type, an unknown field); `details.problems` names each, nothing was recorded (400 on the plane). */
  INVALID_DECISION: 'INVALID_DECISION',
  /** The plane refused a row of this run (a hole at a seq): its copy is incomplete and is not restored (409 on the plane). */
  RUN_INCOMPLETE: 'RUN_INCOMPLETE',
  /** A restore's rows failed the client's check (seq not continuous from 0, a chain that does not decode, a pause that is not the newest row): nothing was imported. */
  RESTORE_UNVERIFIED: 'RESTORE_UNVERIFIED',
  /** A key asked for a project the plane does not have (or the caller may not see); the known ones are listed (404). */
  UNKNOWN_PROJECT: 'UNKNOWN_PROJECT',
  /** `waymark plane projects create` of a name that exists (409). */
  PROJECT_EXISTS: 'PROJECT_EXISTS',
  /** No key with that id in the caller's project (404). */
  KEY_NOT_FOUND: 'KEY_NOT_FOUND',
  /** The key was revoked already (409). */
  KEY_REVOKED: 'KEY_REVOKED',
  /** Another live process (named: pid, url) holds the plane's data dir; PGlite is one process's database. */
  DATA_DIR_LOCKED: 'DATA_DIR_LOCKED',
  /** A new plane data dir could not be made (PGlite's initdb or the migrations failed; details.dataDir, details.stderr); the folder may hold part of one: remove it or give another. */
  DATA_DIR_INIT_FAILED: 'DATA_DIR_INIT_FAILED',
  /** The plane's database was migrated by a newer version of the plane than the one starting (both migrations named in the message); nothing was changed: start the newer version. */
  SCHEMA_NEWER: 'SCHEMA_NEWER',
  /** The plane's port (or its metrics port) is taken by another process. */
  PORT_IN_USE: 'PORT_IN_USE',
  /** A LangGraph config or checkpoint the waymark saver cannot map onto rows (missing thread_id, an id too long, a thread owned by another run); every problem is named in `details.problems`. */
  INVALID_GRAPH_CONFIG: 'INVALID_GRAPH_CONFIG',
  /** `waymark/ai-sdk` was given a model of a spec it does not implement (it supports LanguageModelV3); `details.specificationVersion` names the one given. */
  UNSUPPORTED_MODEL: 'UNSUPPORTED_MODEL',
  /** A subpath or command was used without its optional peer dependencies installed (`waymark/postgres` without `postgres`, `waymark plane` without its server's packages); the message names every missing one and the one command that installs them (`details.command`). */
  MISSING_PEER: 'MISSING_PEER',
  /** A run that failed with an error that carried no code of its own (the run-end marker's default). */
  RUN_FAILED: 'RUN_FAILED',
  /** recoverRuns: a resume that threw without a code. */
  RECOVERY_FAILED: 'RECOVERY_FAILED',
  /** A request (HTTP body or admin call) that names its problems in the message; nothing changed (400 on the plane). */
  INVALID_REQUEST: 'INVALID_REQUEST',
  /** The key is valid but lacks the scope (or the operator role) the action needs (403). */
  FORBIDDEN: 'FORBIDDEN',
  /** An inspector form (approve/decline, Keys) without this session's CSRF token, or from another origin (403); nothing changed. */
  CSRF_FAILED: 'CSRF_FAILED',
  /** A `waymark plane` admin command found a running plane but no admin key to use with it. */
  ADMIN_KEY_REQUIRED: 'ADMIN_KEY_REQUIRED',
  /** No pause to answer: the pause named is not on the plane (not synced yet, or of another project), or the run has no open pause (`decide`), or a resume with an answer found a run that never paused (details.status; a failed run's details.error: resume it without an answer). Nothing was recorded or claimed (404 on the plane). */
  PAUSE_NOT_FOUND: 'PAUSE_NOT_FOUND',
  /** A decision for a pause that is no longer open: claimed (details.claimedBy) or closed by a cancel or a deletion (409 on the plane). */
  PAUSE_CLOSED: 'PAUSE_CLOSED',
  /** A second decision for a pause that has one (at most one per pause); details.decision is the first (409 on the plane). */
  ALREADY_DECIDED: 'ALREADY_DECIDED',
  /** A run request (retry, recover, fork; POST /v1/executions/{id}/requests, the inspector's forms) whose body has problems; every one is named, nothing was recorded (400). */
  INVALID_RUN_REQUEST: 'INVALID_RUN_REQUEST',
  /** A retry asked of a run that has not failed (409; details.status); nothing was recorded. */
  RUN_NOT_FAILED: 'RUN_NOT_FAILED',
  /** A recover asked of a run that is not stale (its runner's hold live, or the run paused or ended: 409; details.status); nothing was recorded. */
  RUN_NOT_STALE: 'RUN_NOT_STALE',
  /** A fork asked from a row that is not a step of the run: not one of its rows, or its run-end marker (409); nothing was recorded. */
  NOT_FORKABLE: 'NOT_FORKABLE',
  /** A request like an open one (the same run and action) that the application has not settled yet (409; details.request: the open one); nothing was recorded. */
  REQUEST_OPEN: 'REQUEST_OPEN',
  /** A request (its id) this plane does not hold, of this key's project (404). */
  REQUEST_NOT_FOUND: 'REQUEST_NOT_FOUND',
  /** A run request the application refused (state `refused` at the plane) whose report named no code of its own. */
  REQUEST_REFUSED: 'REQUEST_REFUSED',
  /** A resume with `expectNewestId` (a run request applied by the worker) found the run's newest row another one: the run moved on (retried, recovered, resumed from code, taken up elsewhere) since the request named it. Nothing was written; the lease was given back. */
  MOVED_ON: 'MOVED_ON',
  /** A resume with `expectNewestId` found the named row missing from this store: its copy of the run is behind the plane's (or the row is not this run's), so it cannot tell whether the run moved on. Nothing was written; catch the store up (`restoreFromPlane`) and try again. */
  STORE_BEHIND: 'STORE_BEHIND',
  /** A `waymark plane` admin command pointed at a data dir that holds no plane database (nothing was created). */
  NO_PLANE_DATA: 'NO_PLANE_DATA',
  /** A constructor or function given options it cannot work with; the message names each. */
  INVALID_OPTIONS: 'INVALID_OPTIONS',
  /** `interrupt()`'s first pass unwinding its tool; the runtime records it as a pause, so no run ends with it. */
  INTERRUPT_SIGNAL: 'INTERRUPT_SIGNAL',
  /** `interrupt()` called outside a tool of a durable run. */
  NOT_IN_TOOL: 'NOT_IN_TOOL',
  /** A `waymark` command line the CLI cannot parse; every problem is named with the usage. */
  USAGE: 'USAGE',

  // The plane's HTTP answers (`{ error: { code, message } }`); the status is named with each.
  /** 401: no API key, or one the plane does not know. */
  UNAUTHORIZED: 'UNAUTHORIZED',
  /** 404: no route for this method and path. */
  NOT_FOUND: 'NOT_FOUND',
  /** 500: a bug of the plane; the log has the error. */
  INTERNAL: 'INTERNAL',
  /** 503 (Retry-After): the plane cannot reach its database; retry later. */
  UNAVAILABLE: 'UNAVAILABLE',
  /** 503 (Retry-After) from readyz: the database is not reachable yet. */
  NOT_READY: 'NOT_READY',
  /** 429 (Retry-After): too many concurrent batches. */
  BUSY: 'BUSY',
  /** 499 (logged, never read by anyone): the client hung up before its request body arrived. */
  CLIENT_ABORTED: 'CLIENT_ABORTED',
  /** 400: a batch of another protocol version. */
  PROTOCOL: 'PROTOCOL',
  /** 400: a batch envelope that does not parse; the message names each problem. */
  INVALID_ENVELOPE: 'INVALID_ENVELOPE',
  /** 400: a bulk approve/decline form of the inbox naming more pauses than `LIMITS.bulkDecisions`; nothing was recorded. */
  TOO_MANY_PAUSES: 'TOO_MANY_PAUSES',
  /** 413: a batch of more rows than `LIMITS.batchRows`. */
  TOO_MANY_ROWS: 'TOO_MANY_ROWS',
  /** 413: a request body over the plane's byte limit (sent or inflated). */
  TOO_LARGE: 'TOO_LARGE',
  /** 408: a request body that stalled or trickled past its deadline; the connection is closed. */
  BODY_TIMEOUT: 'BODY_TIMEOUT',
  /** 400: a gzip body that does not inflate. */
  BAD_GZIP: 'BAD_GZIP',
  /** 400: a body that is not JSON. */
  BAD_JSON: 'BAD_JSON',
  /** 415: a body that is not `application/json`. */
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  /** 415: a content-encoding other than gzip or identity. */
  UNSUPPORTED_ENCODING: 'UNSUPPORTED_ENCODING',
  /** 400: a list cursor this plane did not issue. */
  BAD_CURSOR: 'BAD_CURSOR',
  /** 409: the pause is claimed by another writer (details.writerId; details.decisionId: the decision that claim applies, null for a resume from code). */
  ALREADY_CLAIMED: 'ALREADY_CLAIMED',
  /** 409: the claim was applied (the pause resumed by its holder); an applied claim is final. */
  CLAIM_APPLIED: 'CLAIM_APPLIED',
  /** 409 to a takeover: the run's writer was heard from recently (details: writerId, lastContactAt, liveUntil). */
  LEASE_LIVE: 'LEASE_LIVE',
  /** 409 to a takeover: the plane has newer rows of the run than the copy offered (details.planeSeq). */
  STALE_COPY: 'STALE_COPY',
  /** 409 to a takeover: the run is paused or finished on the plane, so there is nothing to take over. */
  NOT_RUNNING: 'NOT_RUNNING',
  /** 409: another store instance presents this writer id (a copied store file, or one `writerId` given to two stores): only one of them may own runs; give the copy its own writer id. */
  WRITER_COPY: 'WRITER_COPY',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Base of every waymark error: a stable `code` of the registry, a message, an optional cause. */
export class WaymarkError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'WaymarkError';
    this.code = code;
    if (options?.details) this.details = options.details;
  }
}

/** True when `v` is a code of the registry (a code read from the wire or a row may be any string). */
export function isErrorCode(v: unknown): v is ErrorCode {
  return typeof v === 'string' && Object.hasOwn(ErrorCode, v) && (ErrorCode as Record<string, string>)[v] === v;
}

/** True when `e` carries the given waymark code (works across realms and processes). */
export function hasCode(e: unknown, code: ErrorCode): boolean {
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

/**
 * Every problem of a refused value, one line each: an unknown field by name,
 * anything else as `path: message` (`whole` names the value itself). A path
 * segment may be a symbol (a key of a caller's object), so each is spelled
 * with String(). `names` spells a field of the value as its caller's (a form's
 * field standing for it) calls it: a path is named by the caller's words.
 */
export function issueProblems(error: z.ZodError, whole: string, names: Record<string, string> = {}): string[] {
  const named = (path: string) => (Object.hasOwn(names, path) ? names[path] : path);
  return error.issues.flatMap((i) =>
    i.code === 'unrecognized_keys'
      ? i.keys.map((k) => `unknown field '${named(k)}'`)
      : [`${i.path.length ? named(i.path.map(String).join('.')) : whole}: ${i.message}`],
  );
}
