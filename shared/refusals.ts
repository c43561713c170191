/**
 * The HTTP status of each refusal, by its code: one code, one status, wherever
 * it is answered: the plane's API, its inspector's form pages and `waymark
 * ui`'s approve/decline pages, which show a refusal as a page with the status
 * the API answers its code with. A refusal changed nothing, and its message
 * says why. The plane makes one with `refusal` (plane/http/errors.ts), which
 * looks its status up here; the inspector's pages (inspector/, which do not
 * import the plane) look it up here too.
 */
import { ErrorCode } from './errors.js';

export const REFUSAL_STATUS = {
  [ErrorCode.INVALID_REQUEST]: 400,
  [ErrorCode.INVALID_RUN_REQUEST]: 400,
  [ErrorCode.INVALID_DECISION]: 400,
  [ErrorCode.TOO_MANY_PAUSES]: 400,
  [ErrorCode.BAD_CURSOR]: 400,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.CSRF_FAILED]: 403,
  [ErrorCode.EXECUTION_NOT_FOUND]: 404,
  [ErrorCode.REQUEST_NOT_FOUND]: 404,
  [ErrorCode.PAUSE_NOT_FOUND]: 404,
  [ErrorCode.UNKNOWN_PROJECT]: 404,
  [ErrorCode.KEY_NOT_FOUND]: 404,
  [ErrorCode.ALREADY_FINISHED]: 409,
  [ErrorCode.RUN_NOT_FAILED]: 409,
  [ErrorCode.RUN_NOT_STALE]: 409,
  [ErrorCode.NOT_FORKABLE]: 409,
  [ErrorCode.REQUEST_OPEN]: 409,
  [ErrorCode.PAUSE_CLOSED]: 409,
  [ErrorCode.ALREADY_DECIDED]: 409,
  [ErrorCode.PROJECT_EXISTS]: 409,
  [ErrorCode.KEY_REVOKED]: 409,
  [ErrorCode.ALREADY_CLAIMED]: 409,
  [ErrorCode.CLAIM_APPLIED]: 409,
  [ErrorCode.LEASE_LIVE]: 409,
  [ErrorCode.STALE_COPY]: 409,
  [ErrorCode.NOT_RUNNING]: 409,
  [ErrorCode.RUN_TAKEN_OVER]: 409,
  [ErrorCode.RUN_CANCELLED]: 409,
  [ErrorCode.LEASE_LOST]: 409,
  [ErrorCode.WRITER_COPY]: 409,
  [ErrorCode.RUN_INCOMPLETE]: 409,
} as const satisfies Partial<Record<ErrorCode, 400 | 403 | 404 | 409>>;
export type RefusalCode = keyof typeof REFUSAL_STATUS;

/** Whether `code` is a refusal's (REFUSAL_STATUS has its status). */
export const isRefusalCode = (code: unknown): code is RefusalCode =>
  typeof code === 'string' && Object.hasOwn(REFUSAL_STATUS, code);
