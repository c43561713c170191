/**
 * Run requests over HTTP: ask the application to retry a failed run, recover
 * a stale one or fork one from a row (the `operate` scope), list them (the
 * application's worker: `read` or `ingest`), and the worker's claim of a fork
 * and report of an outcome (`ingest`: the writer's own key). The plane records
 * requests only; the store and its rules are plane/requests.ts.
 */
import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { LIMITS } from '../../shared/limits.js';
import {
  RunRequestBody,
  RunRequestClaim,
  RunRequestOutcome,
  RunRequestPage,
  RunRequestState,
  RunRequestView,
} from '../../shared/protocol.js';
import { Uuidv7, WriterId } from '../../shared/rows.js';
import { keyName } from '../auth.js';
import { jsonBodyWithin } from '../body.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { refuseBodyHook, requestNotFound } from '../http/errors.js';
import {
  controlBodyErrors,
  errorResponse,
  errors,
  givenOnce,
  IdParam,
  jsonAnswer,
  jsonBody,
  limitQ,
} from '../http/openapi.js';
import { scoped } from '../http/scope.js';
import { refusePlaneWriter } from './writer-route.js';
import {
  claimRequest,
  getRequest,
  listRequests,
  refuseBadOutcome,
  recordRequest,
  refuseBadRequestBody,
  settleRequest,
} from '../requests.js';

const RequestParam = z.object({ requestId: Uuidv7 });

export function requestRoutes({ db, bodyDeadline }: RouteDeps) {
  const app = routeModule();

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/executions/{id}/requests',
      summary:
        "Ask the application to retry a failed run, recover a stale one, or fork one from a row. The plane records the request; the application's worker applies it (the plane never runs a step)",
      ...scoped(db, 'operate', jsonBodyWithin(db, LIMITS.controlBodyBytes, bodyDeadline)),
      request: { params: IdParam, body: jsonBody(RunRequestBody) },
      responses: {
        201: jsonAnswer('recorded (state open)', RunRequestView),
        404: errorResponse('EXECUTION_NOT_FOUND: the run is not on the plane'),
        409: errorResponse(
          'RUN_NOT_FAILED, RUN_NOT_STALE, NOT_FORKABLE or REQUEST_OPEN (details.problems names every one; nothing was recorded)',
        ),
        ...controlBodyErrors,
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const p = c.get('principal');
      const view = await recordRequest(db, p.projectId, id, c.req.valid('json'), {
        name: await keyName(db, p.keyId),
        keyId: p.keyId,
      });
      c.get('log').info(
        { executionId: id, requestId: view.requestId, action: view.action, requestedBy: view.requestedBy },
        'run request recorded',
      );
      return c.json(view, 201);
    },
    refuseBodyHook(refuseBadRequestBody),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/requests',
      summary:
        "The project's run requests recorded after the cursor (`after`), oldest first, with where each stands; `state=open` lists only those waiting for the application (what its worker reads); `writerId` only those of runs that writer delivered rows of, restored (naming itself) or owns (what a decision worker with `runs: 'mine'` reads)",
      ...scoped(db, ['read', 'ingest', 'operate']),
      request: {
        query: z.object({
          after: z.string().max(200).optional(),
          state: RunRequestState.optional(),
          limit: limitQ,
          writerId: givenOnce(WriterId).optional(),
        }),
      },
      responses: { 200: jsonAnswer('a page; pass nextCursor as `after` for the next', RunRequestPage), ...errors },
    }),
    async (c) => {
      const q = c.req.valid('query');
      if (q.writerId !== undefined) refusePlaneWriter(q.writerId);
      return c.json(await listRequests(db, c.get('principal').projectId, q), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/requests/{requestId}',
      summary: 'One run request and where it stands',
      ...scoped(db, ['read', 'ingest', 'operate']),
      request: { params: RequestParam },
      responses: { 200: jsonAnswer('the request', RunRequestView), 404: errorResponse('REQUEST_NOT_FOUND'), ...errors },
    }),
    async (c) => {
      const { requestId } = c.req.valid('param');
      const r = await getRequest(db, c.get('principal').projectId, requestId);
      if (!r) throw requestNotFound(requestId);
      return c.json(r, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/requests/{requestId}/claim',
      summary:
        'A worker takes a fork request before it forks: the first writer holds it (won); another is answered lost (or settled: the request is no longer open)',
      ...scoped(db, 'ingest', jsonBodyWithin(db, LIMITS.controlBodyBytes, bodyDeadline)),
      request: { params: RequestParam, body: jsonBody(RunRequestClaim) },
      responses: {
        200: jsonAnswer(
          'the claim: won, lost or settled, and the request as it stands',
          z.object({ outcome: z.enum(['won', 'lost', 'settled']), request: RunRequestView }),
        ),
        404: errorResponse('REQUEST_NOT_FOUND'),
        ...controlBodyErrors,
        ...errors,
      },
    }),
    async (c) => {
      const { requestId } = c.req.valid('param');
      const r = await claimRequest(db, c.get('principal').projectId, requestId, c.req.valid('json'));
      return c.json(r, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/requests/{requestId}/outcome',
      summary:
        "A worker reports how applying a request went (applied, superseded, refused with its code); the answer is the request as it stands (an earlier applier's report is kept)",
      ...scoped(db, 'ingest', jsonBodyWithin(db, LIMITS.controlBodyBytes, bodyDeadline)),
      request: { params: RequestParam, body: jsonBody(RunRequestOutcome) },
      responses: {
        200: jsonAnswer('the request as it stands', RunRequestView),
        404: errorResponse('REQUEST_NOT_FOUND'),
        ...controlBodyErrors,
        ...errors,
      },
    }),
    async (c) => {
      const { requestId } = c.req.valid('param');
      const view = await settleRequest(db, c.get('principal').projectId, requestId, c.req.valid('json'));
      return c.json(view, 200);
    },
    refuseBodyHook(refuseBadOutcome),
  );
  return app;
}
