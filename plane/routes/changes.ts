/**
 * The change feed over HTTP: GET /v1/changes, the runs of the project that
 * changed after a cursor (claimed, decided, cancelled, finished, deleted),
 * each where it stands now. A connected store's replica follows it (a long
 * poll, the same mechanism as the decision feed) and catches up the runs it
 * holds. The feed and its order are plane/changes.ts.
 *
 * GET /v1/writer-changes?writerId=…: the same feed, only the entries that
 * writer's store acts on (plane/writer-changes.ts): what a connected store
 * follows. The whole feed stays for operators and the inspector.
 */
import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { ChangeFeed } from '../../shared/protocol.js';
import { WriterId } from '../../shared/rows.js';
import { recheckKey } from '../auth.js';
import { changeCursor, changeFeed, waitForChanges } from '../changes.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { errors, FeedQuery, givenOnce, jsonAnswer, MAX_FEED_WAIT_S } from '../http/openapi.js';
import { scoped } from '../http/scope.js';
import { waitForWriterChanges, writerChangesNow } from '../writer-changes.js';
import { refusePlaneWriter } from './writer-route.js';

export function changeRoutes({ db, metrics }: RouteDeps) {
  const app = routeModule();
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/changes',
      summary: `Runs changed after the cursor, oldest change first, each once with where it stands now (status, newest seq and its writer, pause and its claim, or deleted). A long poll: with wait=N (at most ${MAX_FEED_WAIT_S}) and nothing after the cursor, answers when a run changes, else after N seconds with an empty page and the same cursor`,
      ...scoped(db, ['read', 'ingest']),
      request: {
        query: FeedQuery,
      },
      responses: {
        200: jsonAnswer(
          'runs changed after the cursor (possibly none); pass nextCursor as `after` next time',
          ChangeFeed,
        ),
        ...errors,
      },
    }),
    async (c) => {
      const q = c.req.valid('query');
      const projectId = c.get('principal').projectId;
      const after = changeCursor(q.after);
      const page =
        q.wait === 0
          ? await changeFeed(db, projectId, after, q.limit)
          : await waitForChanges(db, projectId, after, q.limit, q.wait * 1000, c.req.raw.signal);
      // a poll may have waited many seconds: a key revoked meanwhile is answered nothing
      if (q.wait > 0) await recheckKey(db, c.get('principal'));
      metrics.feedEntries.inc({ feed: 'changes' }, page.items.length);
      return c.json(page, 200);
    },
  );
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/writer-changes',
      summary: `The change feed of one writer: the entries of GET /v1/changes its store acts on, with the same cursor — runs it delivered rows of, restored (naming itself) or owns, deletions, and unless decided=false runs with a decision at the plane (a store that follows the whole decision feed keeps their decisions), less its own changes (its newest row, its pause unclaimed or claimed by it). A long poll like GET /v1/changes (wait at most ${MAX_FEED_WAIT_S}); nextCursor moves past the entries read that are not the writer's`,
      ...scoped(db, ['read', 'ingest']),
      request: {
        query: FeedQuery.extend({
          writerId: givenOnce(WriterId),
          // absent: an older client, which follows the whole decision feed and needs those runs' changes
          decided: givenOnce(z.enum(['true', 'false']).default('true')),
        }),
      },
      responses: {
        200: jsonAnswer(
          "the writer's runs changed after the cursor (possibly none); pass nextCursor as `after` next time",
          ChangeFeed,
        ),
        ...errors,
      },
    }),
    async (c) => {
      const q = c.req.valid('query');
      refusePlaneWriter(q.writerId);
      const projectId = c.get('principal').projectId;
      const after = changeCursor(q.after);
      const of = { writerId: q.writerId, decided: q.decided === 'true' };
      const page =
        q.wait === 0
          ? await writerChangesNow(db, projectId, of, after, q.limit)
          : await waitForWriterChanges(db, projectId, of, after, q.limit, q.wait * 1000, c.req.raw.signal);
      if (q.wait > 0) await recheckKey(db, c.get('principal'));
      metrics.feedEntries.inc({ feed: 'changes_writer' }, page.items.length);
      const answer: ChangeFeed = { items: page.items, nextCursor: page.nextCursor };
      return c.json(answer, 200);
    },
  );
  return app;
}
