/**
 * Approvals over HTTP: record a decision for an open pause (the `approve`
 * scope), list the project's unanswered pauses (the inbox), and the decision
 * feed connected clients follow (a long poll). The plane records decisions
 * only; the application's worker applies each through the claim
 * (ClaimRequest.decisionId). The store and its rules are plane/decisions.ts.
 */
import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { LIMITS } from '../../shared/limits.js';
import { DecisionFeed, DecisionRequest, DecisionView, Page, PauseView } from '../../shared/protocol.js';
import { WriterId } from '../../shared/rows.js';
import { keyName, recheckKey } from '../auth.js';
import {
  decisionFeed,
  feedCursor,
  listPauses,
  recordDecision,
  refuseBadDecision,
  waitForDecisions,
} from '../decisions.js';
import { jsonBodyWithin } from '../body.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { refuseBodyHook } from '../http/errors.js';
import {
  controlBodyErrors,
  errorResponse,
  errors,
  FeedQuery,
  givenOnce,
  IdParam,
  jsonAnswer,
  jsonBody,
  limitQ,
  MAX_FEED_WAIT_S,
} from '../http/openapi.js';
import { scoped } from '../http/scope.js';
import { waitForWriterDecisions, writerDecisionsNow } from '../writer-decisions.js';
import { refusePlaneWriter } from './writer-route.js';

export function decisionRoutes({ db, bodyDeadline, metrics }: RouteDeps) {
  const app = routeModule();

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/executions/{id}/decision',
      summary:
        "Record a decision (approve or decline, with metadata and a comment) for the run's open pause; at most one per pause. The plane never resumes the run: the application's worker applies the decision through the claim",
      // a decision travels as one row (restore, a local store): its body is bounded like one
      ...scoped(db, 'approve', jsonBodyWithin(db, LIMITS.rowBytes, bodyDeadline)),
      request: { params: IdParam, body: jsonBody(DecisionRequest) },
      responses: {
        201: jsonAnswer('recorded (state pending)', DecisionView),
        404: errorResponse('PAUSE_NOT_FOUND: the pause is not on the plane, or not the open pause of this run'),
        ...controlBodyErrors,
        413: errorResponse('TOO_LARGE: a body over LIMITS.rowBytes'),
        409: errorResponse(
          'ALREADY_DECIDED (details.decision: the first decision) or PAUSE_CLOSED (claimed, cancelled or deleted; details say by whom)',
        ),
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const p = c.get('principal');
      const view = await recordDecision(db, p.projectId, id, c.req.valid('json'), await keyName(db, p.keyId), 'plane');
      c.get('log').info(
        {
          executionId: id,
          checkpointId: view.checkpointId,
          decisionId: view.decisionId,
          approved: view.approved,
          decidedBy: view.decidedBy,
        },
        'decision recorded',
      );
      return c.json(view, 201);
    },
    // a bad body is INVALID_DECISION naming every problem, as a local store refuses it (not the plane-wide INVALID_REQUEST)
    // (a module's own hook replaces the app's defaultHook: other targets are answered as it answers them)
    refuseBodyHook(refuseBadDecision),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/pauses',
      summary:
        "The approvals inbox: the project's unanswered pauses (open, or claimed and not yet applied), oldest opened first, with context, age and decision; cursor paged",
      ...scoped(db, ['read', 'approve']),
      request: { query: z.object({ cursor: z.string().max(200).optional(), limit: limitQ }) },
      responses: { 200: jsonAnswer('a page', Page(PauseView)), ...errors },
    }),
    async (c) => c.json(await listPauses(db, c.get('principal').projectId, c.req.valid('query')), 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/decisions',
      summary: `Decisions recorded after the cursor, in recording order, with where each stands. A long poll: with wait=N (at most ${MAX_FEED_WAIT_S}) and nothing after the cursor, answers when one is recorded, else after N seconds with an empty page and the same cursor`,
      ...scoped(db, ['read', 'ingest']),
      request: {
        query: FeedQuery,
      },
      responses: {
        200: jsonAnswer(
          'decisions after the cursor (possibly none); pass nextCursor as `after` next time',
          DecisionFeed,
        ),
        ...errors,
      },
    }),
    async (c) => {
      const q = c.req.valid('query');
      const projectId = c.get('principal').projectId;
      const after = feedCursor(q.after);
      const page =
        q.wait === 0
          ? await decisionFeed(db, projectId, after, q.limit)
          : await waitForDecisions(db, projectId, after, q.limit, q.wait * 1000, c.req.raw.signal);
      // a poll may have waited many seconds: a key revoked meanwhile is answered nothing
      if (q.wait > 0) await recheckKey(db, c.get('principal'));
      metrics.feedEntries.inc({ feed: 'decisions' }, page.items.length);
      return c.json(page, 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/writer-decisions',
      summary: `The decision feed of one writer: the decisions of GET /v1/decisions whose run the writer delivered rows of, restored (naming itself) or owns, with the same cursor. A long poll like GET /v1/decisions (wait at most ${MAX_FEED_WAIT_S}); nextCursor moves past the decisions read that are not the writer's`,
      ...scoped(db, ['read', 'ingest']),
      request: { query: FeedQuery.extend({ writerId: givenOnce(WriterId) }) },
      responses: {
        200: jsonAnswer(
          "the writer's decisions after the cursor (possibly none); pass nextCursor as `after` next time",
          DecisionFeed,
        ),
        ...errors,
      },
    }),
    async (c) => {
      const q = c.req.valid('query');
      refusePlaneWriter(q.writerId);
      const projectId = c.get('principal').projectId;
      const after = feedCursor(q.after);
      const page =
        q.wait === 0
          ? await writerDecisionsNow(db, projectId, q.writerId, after, q.limit)
          : await waitForWriterDecisions(db, projectId, q.writerId, after, q.limit, q.wait * 1000, c.req.raw.signal);
      if (q.wait > 0) await recheckKey(db, c.get('principal'));
      metrics.feedEntries.inc({ feed: 'decisions_writer' }, page.items.length);
      const answer: DecisionFeed = { items: page.items, nextCursor: page.nextCursor };
      return c.json(answer, 200);
    },
  );
  return app;
}
