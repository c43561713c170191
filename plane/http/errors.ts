/**
 * The plane's one HTTP error type. A route (or middleware) that answers with
 * an error throws an `HttpError`: its status, a code from the registry
 * (shared/errors.ts) and the body `{ error: { code, message, details? } }`,
 * with any headers the answer carries (Retry-After, Connection: close).
 * Hono's `HTTPException` is the model. The app's `onError` has one branch:
 * whatever was thrown becomes an `HttpError` (`httpErrorOf`) and answers.
 */
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from 'pino';
import { ErrorCode, type ErrorBody } from '../../shared/errors.js';
import { REFUSAL_STATUS, type RefusalCode } from '../../shared/refusals.js';
import { retryLater } from '../../support/db-errors.js';

export interface HttpErrorOptions {
  details?: Record<string, unknown>;
  /** Headers the answer carries (Retry-After, Connection, x-waymark-…). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class HttpError extends Error {
  readonly details?: Record<string, unknown>;
  readonly headers?: Record<string, string>;
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    o: HttpErrorOptions = {},
  ) {
    super(message, o.cause !== undefined ? { cause: o.cause } : undefined);
    this.name = 'HttpError';
    if (o.details) this.details = o.details;
    if (o.headers) this.headers = o.headers;
  }

  /** The JSON body of the answer. */
  get body(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }

  /** Log what the operator should know of this error (nothing, for an answer a client asked for). */
  report(_log: Logger | undefined): void {}

  /** The answer, through the request's context (so headers set earlier, x-request-id, stay). */
  respond(c: Context): Response {
    for (const [k, v] of Object.entries(this.headers ?? {})) c.header(k, v);
    return c.json(this.body, this.status as ContentfulStatusCode);
  }
}

/** A refusal: its code's status (REFUSAL_STATUS), which a page (plane/ui/run-form.tsx `refusalPage`) answers with too. */
export class Refusal extends HttpError {
  declare readonly status: (typeof REFUSAL_STATUS)[RefusalCode] & ContentfulStatusCode;
  constructor(code: RefusalCode, message: string, o: HttpErrorOptions = {}) {
    super(REFUSAL_STATUS[code], code, message, o);
  }
}

/** A refusal with its code's status (REFUSAL_STATUS): nothing was changed, and the message says why. */
export const refusal = (code: RefusalCode, message: string, o: HttpErrorOptions = {}): Refusal =>
  new Refusal(code, message, o);

/** 404 of an execution this plane does not hold (in the key's project); `hint` is said after it. */
export const executionNotFound = (executionId: string, hint = ''): Refusal =>
  refusal(ErrorCode.EXECUTION_NOT_FOUND, `execution '${executionId}' is not on this plane${hint}`, {
    details: { executionId },
  });

/** 404 of a run request this plane does not hold (in the key's project). */
export const requestNotFound = (requestId: string): Refusal =>
  refusal(ErrorCode.REQUEST_NOT_FOUND, `request '${requestId}' is not on this plane`, { details: { requestId } });

/** A database that does not answer: "retry later", never a 500. */
class Unavailable extends HttpError {
  constructor(cause: unknown) {
    super(503, ErrorCode.UNAVAILABLE, 'the plane cannot reach its database; retry later', {
      headers: { 'Retry-After': '2' },
      cause,
    });
  }
  override report(log: Logger | undefined): void {
    log?.warn({ err: this.cause }, 'database unavailable');
  }
}

/** A failure of the plane itself: logged in full, answered without detail. */
class Internal extends HttpError {
  constructor(cause: unknown) {
    super(500, ErrorCode.INTERNAL, 'internal error', { cause });
  }
  override report(log: Logger | undefined): void {
    log?.error({ err: this.cause }, 'unhandled error');
  }
}

/** Every problem zod found, each as `path: message` (`root` names the whole value), in one line. */
export function issuesText(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
  root = '(request)',
): string {
  return issues.map((i) => `${i.path.map(String).join('.') || root}: ${i.message}`).join('; ');
}

/** What was thrown, as the HTTP error to answer with. */
export function httpErrorOf(e: unknown): HttpError {
  if (e instanceof HttpError) return e;
  // what Hono's request validation refuses is the client's error, not the plane's: a body it could not read
  // (malformed JSON, a broken form), a Content-Type the route does not take, a body over a limit
  if (e instanceof HTTPException) {
    if (e.status === 400)
      return /JSON/.test(e.message)
        ? new HttpError(400, ErrorCode.BAD_JSON, e.message)
        : refusal(ErrorCode.INVALID_REQUEST, e.message);
    if (e.status === 415) return new HttpError(415, ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'send application/json');
    if (e.status === 413) return new HttpError(413, ErrorCode.TOO_LARGE, e.message || 'request body is too large');
  }
  // a database that is gone or refuses us (any failure of support/db-errors.ts's table, anywhere on the cause
  // chain) is an operator problem: "retry later" (503), never a 500
  if (retryLater(e)) return new Unavailable(e);
  return new Internal(e);
}

/**
 * A route's validation hook: a JSON body that does not parse is refused by `refuseBody` (its own code, every
 * problem named in `details.problems`); any other target (params, query) as 400 INVALID_REQUEST.
 */
export function refuseBodyHook(refuseBody: (body: unknown) => void) {
  return (result: {
    success: boolean;
    target: string;
    data?: unknown;
    error?: { issues: readonly { path: readonly PropertyKey[]; message: string }[] };
  }): undefined => {
    if (result.success) return undefined;
    if (result.target === 'json') refuseBody(result.data);
    throw refusal(ErrorCode.INVALID_REQUEST, issuesText(result.error?.issues ?? []));
  };
}
