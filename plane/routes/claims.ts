/**
 * Who may resume: claim a pause (exactly one writer wins), give a claim back,
 * take over a run whose writer died mid-run. The arbitration is claims.ts;
 * this module answers its outcomes.
 */
import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { ErrorCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { ClaimRequest, ClaimResponse, TakeoverRequest, TakeoverResponse } from '../../shared/protocol.js';
import { type BodyDeadline, jsonBodyWithin } from '../body.js';
import { claimPause, releaseClaim, takeOverRun } from '../claims.js';
import type { PlaneDb } from '../db/open.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { HttpError } from '../http/errors.js';
import { controlBodyErrors, errorResponse, errors, IdParam, jsonAnswer, jsonBody } from '../http/openapi.js';
import { scoped } from '../http/scope.js';
import { executionNotFound } from './executions.js';

/**
 * A writer's POST about one execution (the ingest scope): its body (read
 * within LIMITS.controlBodyBytes and the body deadline), its answer, and what
 * its 404 and 409 mean.
 */
function writerRoute<P extends string, B extends z.ZodType, A extends z.ZodType>(
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
    responses: { 200: jsonAnswer(o.ok[0], o.ok[1]), 404: errorResponse(o.notFound), 409: errorResponse(o.refused), ...controlBodyErrors, ...errors },
  });
}

export function claimRoutes({ db, faults, bodyDeadline }: RouteDeps, o: { claimReleaseAfterMs: number; takeoverAfterMs: number }) {
  const app = routeModule();

  app.openapi(
    writerRoute(db, bodyDeadline, {
      path: '/v1/executions/{id}/claim',
      summary: 'Claim a pause for one writer before resuming it; exactly one writer wins',
      body: ClaimRequest,
      ok: ['this writer holds the claim', ClaimResponse],
      notFound: 'the pause is not on the plane',
      refused: 'another writer holds it (ALREADY_CLAIMED), or the pause was decided first on the plane with another decision than the one this claim applies (ALREADY_DECIDED, details.decision)',
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await claimPause(db, c.get('principal').projectId, id, body.checkpointId, body.writerId, o.claimReleaseAfterMs, body.decisionId ?? null);
      await faults('plane.claim.afterCommit');
      if ('takenFrom' in r && r.takenFrom) {
        c.get('log').warn({ executionId: id, checkpointId: body.checkpointId, from: r.takenFrom, to: body.writerId }, 'a held claim past its release delay was taken over');
      }
      if ('notFound' in r) throw new HttpError(404, ErrorCode.PAUSE_NOT_FOUND, `pause ${body.checkpointId} of execution '${id}' is not on this plane (sync it first)`);
      if ('decided' in r && r.decided) {
        const first = r.decided;
        throw new HttpError(
          409,
          ErrorCode.ALREADY_DECIDED,
          `pause ${body.checkpointId} was decided first on the plane (decision ${first.decisionId} by '${first.decidedBy}': ${first.approved ? 'approve' : 'decline'}); nothing was claimed: apply that decision, not ${body.decisionId}`,
          { details: { decision: first } },
        );
      }
      if (!r.won) {
        const closed = 'closed' in r ? r.closed : null;
        const how =
          closed === 'delete'
            ? `closed: its run was deleted (by writer '${r.writerId}')`
            : closed === 'cancel'
              ? `closed: its run was cancelled by writer '${r.writerId}'`
              : `claimed by writer '${r.writerId}'`;
        throw new HttpError(409, ErrorCode.ALREADY_CLAIMED, `pause ${body.checkpointId} was ${how}`, {
          details: { writerId: r.writerId, claimedAt: r.claimedAt, decisionId: 'decisionId' in r ? r.decisionId : null, applied: 'applied' in r ? r.applied : false, ...(closed ? { closed } : {}) },
          headers: { 'x-waymark-claimed-by': r.writerId },
        });
      }
      return c.json({ executionId: id, checkpointId: body.checkpointId, writerId: r.writerId, claimedAt: r.claimedAt }, 200);
    },
  );

  app.openapi(
    writerRoute(db, bodyDeadline, {
      path: '/v1/executions/{id}/takeover',
      summary: 'Take over a run that is not paused (its writer died mid-run): one writer wins, and only once its writer was not heard from for the takeover delay',
      body: TakeoverRequest,
      ok: ['this writer may run it', TakeoverResponse],
      notFound: 'the run is not on the plane',
      refused: 'refused: LEASE_LIVE (its writer was heard from recently), RUN_TAKEN_OVER (another writer has it), STALE_COPY (the plane has newer rows), NOT_RUNNING (paused or finished)',
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await takeOverRun(db, c.get('principal').projectId, id, body.writerId, body.seq, o.takeoverAfterMs);
      const refuse = (code: ErrorCode, message: string, details: Record<string, unknown>) => new HttpError(409, code, message, { details: { executionId: id, ...details } });
      switch (r.outcome) {
        case 'not_found':
          throw executionNotFound(id, ' (sync it first)');
        case 'lost':
          throw refuse(ErrorCode.RUN_TAKEN_OVER, `execution '${id}' was taken over by writer '${r.writerId}' at seq ${r.fromSeq} (${r.at})`, { writerId: r.writerId, fromSeq: r.fromSeq, at: r.at });
        case 'live':
          throw refuse(ErrorCode.LEASE_LIVE, `execution '${id}' is still being run by writer '${r.writerId}' (last heard from ${r.lastContactAt}); it may be taken over after ${r.liveUntil}`, {
            writerId: r.writerId,
            lastContactAt: r.lastContactAt,
            liveUntil: r.liveUntil,
          });
        case 'stale':
          throw refuse(ErrorCode.STALE_COPY, `execution '${id}' has rows up to seq ${r.planeSeq} on the plane, newer than this copy (seq ${body.seq}): restore it again`, { planeSeq: r.planeSeq });
        case 'not_running':
          throw refuse(ErrorCode.NOT_RUNNING, `execution '${id}' is ${r.status} on the plane, not running: nothing to take over`, { status: r.status });
      }
      if (r.takenFrom) c.get('log').warn({ executionId: id, from: r.takenFrom, to: body.writerId, fromSeq: r.fromSeq }, 'a run was taken over');
      return c.json({ executionId: id, writerId: body.writerId, fromSeq: r.fromSeq, takenFrom: r.takenFrom }, 200);
    },
  );

  app.openapi(
    writerRoute(db, bodyDeadline, {
      path: '/v1/executions/{id}/claim/release',
      summary: 'Give back a claim this writer holds but never applied locally (it crashed or gave up before resuming); the pause is open again',
      body: ClaimRequest,
      ok: ['released, or there was no claim', z.object({ released: z.boolean() })],
      notFound: 'the pause is not on the plane',
      refused: 'another writer holds it, or its holder already applied it',
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await releaseClaim(db, c.get('principal').projectId, id, body.checkpointId, body.writerId);
      if ('notFound' in r) throw new HttpError(404, ErrorCode.PAUSE_NOT_FOUND, `pause ${body.checkpointId} of execution '${id}' is not on this plane`);
      if ('heldBy' in r) throw new HttpError(409, ErrorCode.ALREADY_CLAIMED, `pause ${body.checkpointId} is held by writer '${r.heldBy}', not '${body.writerId}'`);
      if ('appliedAt' in r) throw new HttpError(409, ErrorCode.CLAIM_APPLIED, `pause ${body.checkpointId} was claimed and resumed by its holder at ${r.appliedAt}; an applied claim is final`);
      return c.json({ released: r.released }, 200);
    },
  );
  return app;
}
