/**
 * A run's owner at the plane (owners.ts): its holder renews or gives up its
 * hold, and a key with the cancel scope cancels the run (cancel.ts).
 */
import { createRoute } from '@hono/zod-openapi';
import { ErrorCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { CancelRequest, CancelResponse, LeaseRequest, LeaseResponse } from '../../shared/protocol.js';
import { jsonBodyWithin } from '../body.js';
import { keyName } from '../auth.js';
import { cancelAsked, cancelReasonAt, refuseBadCancelBody } from '../cancel.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { executionNotFound, refusal, refuseBodyHook } from '../http/errors.js';
import { controlBodyErrors, errorResponse, errors, IdParam, jsonAnswer, jsonBody } from '../http/openapi.js';
import { scoped } from '../http/scope.js';
import { recordedEffect, renewOwner } from '../owners.js';
import { askerOf, writerCopy, writerRoute } from './writer-route.js';

export function ownerRoutes({ db, bodyDeadline }: RouteDeps, o: { takeoverAfterMs: number }) {
  const app = routeModule();

  app.openapi(
    writerRoute(db, bodyDeadline, {
      path: '/v1/executions/{id}/lease',
      summary: "The run's owner renews its hold while it works (a heartbeat), or gives it up (release)",
      body: LeaseRequest,
      ok: ['held (epoch, expiresAt) or released', LeaseResponse],
      notFound: 'the run is not on the plane (its first row makes its writer the owner)',
      refused:
        'LEASE_LOST (another holder owns the run, or it ended), RUN_CANCELLED (it was cancelled), WRITER_COPY (another store instance under this writer id)',
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await renewOwner(
        db,
        c.get('principal').projectId,
        id,
        { ...askerOf(body, 0), release: body.release === true },
        o.takeoverAfterMs,
      );
      switch (r.outcome) {
        case 'not_found':
          throw executionNotFound(id, ' (its first row makes its writer the owner)');
        case 'copy':
          throw writerCopy(body.writerId);
        case 'cancelled': {
          const reason = await cancelReasonAt(db, c.get('principal').projectId, id);
          throw refusal(
            ErrorCode.RUN_CANCELLED,
            `execution '${id}' was cancelled${reason ? ` (${reason})` : ''}: stop at the next step boundary`,
            {
              details: { executionId: id, epoch: r.epoch, reason },
            },
          );
        }
        case 'lost':
          throw refusal(
            ErrorCode.LEASE_LOST,
            `execution '${id}' is no longer this holder's: ${r.state === 'held' ? `writer '${r.writerId}' owns it (epoch ${r.epoch})` : `it is ${r.state} on the plane`}`,
            {
              details: { executionId: id, writerId: r.writerId, epoch: r.epoch, state: r.state, ownEnd: r.ownEnd },
            },
          );
        case 'released':
          return c.json({ executionId: id, epoch: null, expiresAt: null, released: r.released }, 200);
      }
      const recorded =
        body.effectKey === undefined
          ? {}
          : { recorded: await recordedEffect(db, c.get('principal').projectId, id, body.effectKey) };
      return c.json({ executionId: id, epoch: r.epoch, expiresAt: r.expiresAt, released: false, ...recorded }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/executions/{id}/cancel',
      summary:
        'Cancel a run the plane holds: its owner becomes nobody (its runner stops at its next step), its open pause is closed, a cancel marker ends its history',
      ...scoped(db, 'cancel', jsonBodyWithin(db, LIMITS.controlBodyBytes, bodyDeadline)),
      request: { params: IdParam, body: jsonBody(CancelRequest) },
      responses: {
        200: jsonAnswer('cancelled (or already cancelled)', CancelResponse),
        404: errorResponse('the run is not on the plane'),
        409: errorResponse('ALREADY_FINISHED: the run completed; nothing was cancelled'),
        ...controlBodyErrors,
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const p = c.get('principal');
      const r = await cancelAsked(db, id, body, {
        projectId: p.projectId,
        keyId: p.keyId,
        keyName: await keyName(db, p.keyId),
      });
      if (!r.alreadyCancelled)
        c.get('log').warn({ executionId: id, from: r.takenFrom, seq: r.seq }, 'a run was cancelled at the plane');
      return c.json(
        {
          executionId: id,
          checkpointId: r.checkpointId,
          seq: r.seq,
          alreadyCancelled: r.alreadyCancelled,
          closedPause: r.closedPause,
          takenFrom: r.takenFrom,
        },
        200,
      );
    },
    // a bad body names every problem, by the rule the inspector's Cancel form is checked by too (cancel.ts)
    refuseBodyHook(refuseBadCancelBody),
  );

  return app;
}
