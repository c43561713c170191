/**
 * What the routes about a run's ownership share: a writer's POST about one
 * execution, who it asks as, and the refusal of a copied store.
 */
import { createRoute } from '@hono/zod-openapi';
import type { z } from 'zod';
import { ErrorCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { jsonBodyWithin } from '../body.js';
import type { BodyDeadline } from '../../support/body-read.js';
import type { PlaneDb } from '../db/open.js';
import { type HttpError, refusal } from '../http/errors.js';
import { controlBodyErrors, errorResponse, errors, IdParam, jsonAnswer, jsonBody } from '../http/openapi.js';
import { scoped } from '../http/scope.js';
import { type Asker, PLANE_WRITER } from '../owners.js';

/**
 * A writer's POST about one execution (the ingest scope): its body (read
 * within LIMITS.controlBodyBytes and the body deadline), its answer, and what
 * its 404 and 409 mean.
 */
export function writerRoute<P extends string, B extends z.ZodType, A extends z.ZodType>(
  db: PlaneDb,
  bodyDeadline: BodyDeadline,
  o: { path: P; summary: string; body: B; ok: [description: string, answer: A]; notFound: string; refused: string },
) {
  return createRoute({
    method: 'post',
    path: o.path,
    summary: o.summary,
    ...scoped(db, 'ingest', jsonBodyWithin(db, LIMITS.controlBodyBytes, bodyDeadline)),
    request: { params: IdParam, body: jsonBody(o.body) },
    responses: {
      200: jsonAnswer(o.ok[0], o.ok[1]),
      404: errorResponse(o.notFound),
      409: errorResponse(o.refused),
      ...controlBodyErrors,
      ...errors,
    },
  });
}

/** The asker of an ownership request: an older client's holder is its writer id; its ttl the plane's takeover delay at least. */
export function askerOf(
  body: { writerId: string; holder?: string; instance?: string; ttlMs?: number },
  floorMs: number,
): Asker {
  refusePlaneWriter(body.writerId);
  return {
    writerId: body.writerId,
    holder: body.holder ?? body.writerId,
    instance: body.instance ?? null,
    ttlMs: Math.max(body.ttlMs ?? floorMs, floorMs),
  };
}

/** 400: the writer id the plane's own rows carry (its cancel markers) is no store's. */
export function refusePlaneWriter(writerId: string): void {
  if (writerId === PLANE_WRITER)
    throw refusal(
      ErrorCode.INVALID_REQUEST,
      `writerId: '${PLANE_WRITER}' is the plane's own (its cancel markers carry it); give this store another writer id`,
    );
}

/** 409 WRITER_COPY: another store instance presents this writer id. */
export function writerCopy(writerId: string): HttpError {
  return refusal(
    ErrorCode.WRITER_COPY,
    `writer id '${writerId}' is in use by another store instance (a copied store file, or one writerId given to two stores); nothing was granted: give this store its own writer id`,
    { details: { writerId } },
  );
}
