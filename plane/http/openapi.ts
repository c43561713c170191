/** OpenAPI pieces the route modules share: error responses and common parameters. */
import { z } from 'zod';
import { ErrorBody } from '../../shared/errors.js';
import { ExecutionId } from '../../shared/rows.js';

/**
 * A JSON request body of `schema`, required: the route's validator always
 * runs (a request without a body is validated as `{}`, and its 400 names every
 * missing field). An openapi route with a JSON body also reads it through
 * `jsonBodyWithin` (plane/body.ts), spread in with its scope (`scoped`).
 */
export const jsonBody = <S extends z.ZodType>(schema: S) => ({
  content: { 'application/json': { schema } },
  required: true as const,
});

/** A JSON answer of `schema`, as the OpenAPI document describes it. */
export const jsonAnswer = <S extends z.ZodType>(description: string, schema: S) => ({
  description,
  content: { 'application/json': { schema } },
});

/** An error answer (`ErrorBody`). */
export const errorResponse = (description: string) => jsonAnswer(description, ErrorBody);

/** The error answers every keyed route may give. */
export const errors = {
  400: errorResponse('bad request'),
  401: errorResponse('no or bad key'),
  403: errorResponse('wrong scope'),
  503: errorResponse('database unavailable'),
};

/** The error answers of a route whose JSON body is read by `jsonBodyWithin` (plane/body.ts), beyond `errors`. */
export const controlBodyErrors = {
  408: errorResponse('BODY_TIMEOUT: the body did not arrive within the body deadline (the connection is closed)'),
  413: errorResponse('TOO_LARGE: a body over LIMITS.controlBodyBytes'),
  415: errorResponse('UNSUPPORTED_MEDIA_TYPE: a body not sent as application/json'),
};

/**
 * A query parameter given once: a repeated one (`?limit=1&limit=2`) arrives
 * as an array, refused as such rather than as whatever coercing it makes.
 */
export const givenOnce = <S extends z.ZodType>(schema: S) =>
  z.preprocess((v, ctx) => {
    if (!Array.isArray(v)) return v;
    ctx.addIssue({ code: 'custom', message: 'given more than once' });
    return z.NEVER;
  }, schema);

/** `limit` of a paged listing. */
export const limitQ = givenOnce(z.coerce.number().int().min(1).max(1000).default(100));

/** The longest a feed's long poll holds (GET /v1/decisions, GET /v1/changes and the writers' feeds), in seconds. */
export const MAX_FEED_WAIT_S = 25;
/** A feed's query: the cursor (the last seq seen), how long to wait for entries, and a page size. */
export const FeedQuery = z.object({
  after: z.string().max(40).optional(),
  wait: givenOnce(z.coerce.number().min(0).max(MAX_FEED_WAIT_S).default(0)),
  limit: limitQ,
});

/** `{id}` of an execution's routes. */
export const IdParam = z.object({ id: ExecutionId });
