/** Project-wide listings: the quarantine, the writers, the claim conflicts. */
import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { ClaimConflictView, Page, QuarantineView, WriterView } from '../../shared/protocol.js';
import { ExecutionId } from '../../shared/rows.js';
import { listClaimConflicts } from '../reads/claim-conflicts.js';
import { listQuarantine } from '../reads/quarantine.js';
import { listWriters } from '../reads/writers.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { errors, jsonAnswer, limitQ } from '../http/openapi.js';
import { scoped } from '../http/scope.js';

export function projectRoutes({ db }: RouteDeps) {
  const app = routeModule();

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/quarantine',
      summary: 'Rows the plane refused, oldest first',
      ...scoped(db, 'read'),
      request: {
        query: z.object({ executionId: ExecutionId.optional(), cursor: z.string().max(200).optional(), limit: limitQ }),
      },
      responses: { 200: jsonAnswer('a page', Page(QuarantineView)), ...errors },
    }),
    async (c) => c.json(await listQuarantine(db, c.get('principal').projectId, c.req.valid('query')), 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/writers',
      summary: "Each writer's last contact, rows acked and reported backlog",
      ...scoped(db, 'read'),
      responses: { 200: jsonAnswer('writers', z.object({ items: z.array(WriterView) })), ...errors },
    }),
    async (c) => c.json({ items: await listWriters(db, c.get('principal').projectId) }, 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/conflicts',
      summary: 'Pauses claimed by more than one writer (the later claims arrived offline)',
      ...scoped(db, 'read'),
      responses: { 200: jsonAnswer('conflicts', z.object({ items: z.array(ClaimConflictView) })), ...errors },
    }),
    async (c) => c.json({ items: await listClaimConflicts(db, c.get('principal').projectId) }, 200),
  );
  return app;
}
