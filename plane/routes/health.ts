/**
 * Is the plane up, and can I reach it: liveness and readiness (no key), and
 * `whoami`, a cheap authenticated call that checks a connection (any scope).
 */
import { createRoute } from '@hono/zod-openapi';
import { ErrorCode } from '../../shared/errors.js';
import { WhoAmI } from '../../shared/protocol.js';
import { projectName } from '../auth.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { HttpError } from '../http/errors.js';
import { errors, jsonAnswer } from '../http/openapi.js';
import { scoped } from '../http/scope.js';

export function healthRoutes({ database, db }: RouteDeps) {
  const app = routeModule();
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', async (c) => {
    try {
      await database.ping();
    } catch (e) {
      throw new HttpError(503, ErrorCode.NOT_READY, `database not reachable: ${(e as Error).message}`, {
        headers: { 'Retry-After': '2' },
        cause: e,
      });
    }
    return c.json({ ok: true, database: database.kind, migrations: 'applied' });
  });
  // no /metrics here: operator metrics span every project, so they are served on their own
  // listener (metricsApp), never to a project's key

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/whoami',
      summary:
        "The presented key's project and scopes: a cheap authenticated call that checks a connection (any scope)",
      ...scoped(db, null),
      responses: { 200: jsonAnswer('the key', WhoAmI), ...errors },
    }),
    async (c) => {
      const p = c.get('principal');
      return c.json(
        {
          project: (await projectName(db, p.projectId)) ?? p.projectId,
          keyId: p.keyId,
          scopes: p.scopes,
          serverTime: new Date().toISOString(),
        },
        200,
      );
    },
  );
  return app;
}
