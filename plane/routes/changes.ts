/**
 * The change feed over HTTP: GET /v1/changes, the runs of the project that
 * changed after a cursor (claimed, decided, cancelled, finished, deleted),
 * each where it stands now. A connected store's replica follows it (a long
 * poll, the same mechanism as the decision feed) and catches up the runs it
 * holds. The feed and its order are plane/changes.ts.
 */
import { createRoute } from '@hono/zod-openapi';
import { ChangeFeed } from '../../shared/protocol.js';
import { recheckKey } from '../auth.js';
import { changeCursor, changeFeed, waitForChanges } from '../changes.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { errors, FeedQuery, jsonAnswer, MAX_FEED_WAIT_S } from '../http/openapi.js';
import { scoped } from '../http/scope.js';

export function changeRoutes({ db }: RouteDeps) {
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
      if (q.wait === 0) return c.json(await changeFeed(db, projectId, after, q.limit), 200);
      const page = await waitForChanges(db, projectId, after, q.limit, q.wait * 1000, c.req.raw.signal);
      // a poll may have waited many seconds: a key revoked meanwhile is answered nothing
      await recheckKey(db, c.get('principal'));
      return c.json(page, 200);
    },
  );
  return app;
}
