/** OpenAPI pieces the route modules share: error responses and common parameters. */
import { z } from 'zod';
import { ErrorBody } from '../../shared/errors.js';
import { ExecutionId } from '../../shared/rows.js';

/** A JSON request body of `schema`. */
export const jsonBody = <S extends z.ZodType>(schema: S) => ({ content: { 'application/json': { schema } } });

/** A JSON answer of `schema`, as the OpenAPI document describes it. */
export const jsonAnswer = <S extends z.ZodType>(description: string, schema: S) => ({ description, content: { 'application/json': { schema } } });

/** An error answer (`ErrorBody`). */
export const errorResponse = (description: string) => jsonAnswer(description, ErrorBody);

/** The error answers every keyed route may give. */
export const errors = {
  400: errorResponse('bad request'),
  401: errorResponse('no or bad key'),
  403: errorResponse('wrong scope'),
  503: errorResponse('database unavailable'),
};

/** `limit` of a paged listing. */
export const limitQ = z.coerce.number().int().min(1).max(1000).default(100);

/** The longest a feed's long poll holds (GET /v1/decisions, GET /v1/changes), in seconds. */
export const MAX_FEED_WAIT_S = 25;
/** A feed's query: the cursor (the last seq seen), how long to wait for entries, and a page size. */
export const FeedQuery = z.object({
  after: z.string().max(40).optional(),
  wait: z.coerce.number().min(0).max(MAX_FEED_WAIT_S).default(0),
  limit: limitQ,
});

/** `{id}` of an execution's routes. */
export const IdParam = z.object({ id: ExecutionId });
