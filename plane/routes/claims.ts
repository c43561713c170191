/**
 * Who may resume: claim a pause (exactly one writer wins), give a claim back,
 * take over a run whose writer died mid-run. The arbitration is claims.ts;
 * this module answers its outcomes.
 */
import { z } from 'zod';
import { ErrorCode } from '../../shared/errors.js';
import { ClaimRequest, ClaimResponse, TakeoverRequest, TakeoverResponse } from '../../shared/protocol.js';
import { claimPause, releaseClaim, takeOverRun } from '../claims.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { executionNotFound, refusal } from '../http/errors.js';
import type { RefusalCode } from '../../shared/refusals.js';
import { askerOf, writerCopy, writerRoute } from './writer-route.js';

export function claimRoutes(
  { db, faults, bodyDeadline }: RouteDeps,
  o: { claimReleaseAfterMs: number; takeoverAfterMs: number },
) {
  const app = routeModule();

  app.openapi(
    writerRoute(db, bodyDeadline, {
      path: '/v1/executions/{id}/claim',
      summary: 'Claim a pause for one writer before resuming it; exactly one writer wins',
      body: ClaimRequest,
      ok: ['this writer holds the claim', ClaimResponse],
      notFound: 'the pause is not on the plane',
      refused:
        'another writer holds it (ALREADY_CLAIMED), or the pause was decided first on the plane with another decision than the one this claim applies (ALREADY_DECIDED, details.decision)',
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await claimPause(
        db,
        c.get('principal').projectId,
        id,
        body.checkpointId,
        askerOf(body, o.takeoverAfterMs),
        o.claimReleaseAfterMs,
        body.decisionId ?? null,
      );
      await faults('plane.claim.afterCommit');
      if ('takenFrom' in r && r.takenFrom) {
        c.get('log').warn(
          { executionId: id, checkpointId: body.checkpointId, from: r.takenFrom, to: body.writerId },
          'a held claim past its release delay was taken over',
        );
      }
      if ('notFound' in r)
        throw refusal(
          ErrorCode.PAUSE_NOT_FOUND,
          `pause ${body.checkpointId} of execution '${id}' is not on this plane (sync it first)`,
        );
      if ('copy' in r) throw writerCopy(body.writerId);
      if ('decided' in r && r.decided) {
        const first = r.decided;
        throw refusal(
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
        throw refusal(ErrorCode.ALREADY_CLAIMED, `pause ${body.checkpointId} was ${how}`, {
          details: {
            writerId: r.writerId,
            claimedAt: r.claimedAt,
            decisionId: 'decisionId' in r ? r.decisionId : null,
            applied: 'applied' in r ? r.applied : false,
            ...(closed ? { closed } : {}),
          },
          headers: { 'x-waymark-claimed-by': r.writerId },
        });
      }
      return c.json(
        {
          executionId: id,
          checkpointId: body.checkpointId,
          writerId: r.writerId,
          claimedAt: r.claimedAt,
          epoch: r.epoch,
        },
        200,
      );
    },
  );

  app.openapi(
    writerRoute(db, bodyDeadline, {
      path: '/v1/executions/{id}/takeover',
      summary:
        "Take over a run that is not paused (its owner died or stalled mid-run): one writer wins, once the owner's hold expired, and becomes the run's owner",
      body: TakeoverRequest,
      ok: ['this writer may run it', TakeoverResponse],
      notFound: 'the run is not on the plane',
      refused:
        'refused: LEASE_LIVE (its owner holds it: details.liveUntil), STALE_COPY (the plane holds rows or idempotency entries this copy lacks: details.missingKeys), NOT_RUNNING (paused or finished), WRITER_COPY (another store instance under this writer id)',
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await takeOverRun(
        db,
        c.get('principal').projectId,
        id,
        askerOf(body, o.takeoverAfterMs),
        body.seq,
        body.idempotencyKeys ?? null,
        body.lastId ?? null,
      );
      const refuse = (code: RefusalCode, message: string, details: Record<string, unknown>) =>
        refusal(code, message, { details: { executionId: id, ...details } });
      switch (r.outcome) {
        case 'not_found':
          throw executionNotFound(id, ' (sync it first)');
        case 'copy':
          throw writerCopy(body.writerId);
        case 'live':
          throw refuse(
            ErrorCode.LEASE_LIVE,
            `execution '${id}' is still being run by writer '${r.writerId}'; it may be taken over after ${r.liveUntil}`,
            {
              writerId: r.writerId,
              liveUntil: r.liveUntil,
            },
          );
        case 'lost':
          throw refuse(
            ErrorCode.RUN_TAKEN_OVER,
            `execution '${id}' was taken over by writer '${r.writerId}' at seq ${r.fromSeq} (${r.at}); this copy ran on after it and holds rows the plane refused` +
              (r.free
                ? "; nobody holds the run now: a copy that takes the plane's branch in place of its own may take it over"
                : ''),
            { writerId: r.writerId, fromSeq: r.fromSeq, at: r.at, free: r.free },
          );
        case 'stale': {
          const what = r.missingCount
            ? `the plane holds ${r.missingCount} idempotency entr${r.missingCount === 1 ? 'y' : 'ies'} this copy lacks (${r.missingKeys.slice(0, 3).join(', ')}${r.missingCount > 3 ? ', …' : ''}): restore it again`
            : `the plane has rows up to seq ${r.planeSeq}, newer than this copy (seq ${body.seq}): restore it again`;
          throw refuse(ErrorCode.STALE_COPY, `execution '${id}': ${what}`, {
            planeSeq: r.planeSeq,
            missingKeys: r.missingKeys,
            missingCount: r.missingCount,
          });
        }
        case 'not_running':
          throw refuse(
            ErrorCode.NOT_RUNNING,
            `execution '${id}' is ${r.status} on the plane, not running: nothing to take over`,
            { status: r.status },
          );
      }
      if (r.takenFrom)
        c.get('log').warn(
          { executionId: id, from: r.takenFrom, to: body.writerId, fromSeq: r.fromSeq, epoch: r.epoch },
          'a run was taken over',
        );
      return c.json(
        { executionId: id, writerId: body.writerId, fromSeq: r.fromSeq, takenFrom: r.takenFrom, epoch: r.epoch },
        200,
      );
    },
  );

  app.openapi(
    writerRoute(db, bodyDeadline, {
      path: '/v1/executions/{id}/claim/release',
      summary:
        'Give back a claim this writer holds but never applied locally (it crashed or gave up before resuming); the pause is open again',
      body: ClaimRequest,
      ok: ['released, or there was no claim', z.object({ released: z.boolean() })],
      notFound: 'the pause is not on the plane',
      refused: 'another writer holds it, or its holder already applied it',
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await releaseClaim(db, c.get('principal').projectId, id, body.checkpointId, body.writerId);
      if ('notFound' in r)
        throw refusal(
          ErrorCode.PAUSE_NOT_FOUND,
          `pause ${body.checkpointId} of execution '${id}' is not on this plane`,
        );
      if ('heldBy' in r)
        throw refusal(
          ErrorCode.ALREADY_CLAIMED,
          `pause ${body.checkpointId} is held by writer '${r.heldBy}', not '${body.writerId}'`,
        );
      if ('appliedAt' in r)
        throw refusal(
          ErrorCode.CLAIM_APPLIED,
          `pause ${body.checkpointId} was claimed and resumed by its holder at ${r.appliedAt}; an applied claim is final`,
        );
      return c.json({ released: r.released }, 200);
    },
  );
  return app;
}
