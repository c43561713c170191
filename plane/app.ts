/**
 * The plane's HTTP app (Hono + @hono/zod-openapi). It stores and serves rows;
 * it never runs a step and never resolves a pause.
 *
 * The app is its route modules (routes/*, the inspector in ui/routes.tsx),
 * composed with `app.route()`; each route declares its own scope. What is said
 * once for all of them is here: the request id and log, request validation,
 * and the one answer to any error (an HttpError, http/errors.ts).
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import { requestId } from 'hono/request-id';
import pino from 'pino';
import { ErrorCode } from '../shared/errors.js';
import type { Scope } from './auth.js';
import type { PlaneDb } from './db/open.js';
import { AdmissionGate } from './gate.js';
import { DEFAULT_BODY_DEADLINE } from '../support/body-read.js';
import type { PlaneEnv, RouteDeps } from './http/env.js';
import { HttpError, httpErrorOf, issuesText, refusal } from './http/errors.js';
import { requireScope } from './http/scope.js';
import { planeMetrics } from './metrics.js';
import { adminRoutes } from './routes/admin.js';
import { changeRoutes } from './routes/changes.js';
import { claimRoutes } from './routes/claims.js';
import { ownerRoutes } from './routes/owners.js';
import { decisionRoutes } from './routes/decisions.js';
import { requestRoutes } from './routes/requests.js';
import { executionRoutes } from './routes/executions.js';
import { healthRoutes } from './routes/health.js';
import { ingestRoutes } from './routes/ingest.js';
import { projectRoutes } from './routes/project.js';
import type { PlaneAppOptionsOf } from './types.js';
import { inspectorRoutes } from './ui/routes.js';

export type PlaneAppOptions = PlaneAppOptionsOf<PlaneDb>;

export function createPlaneApp(o: PlaneAppOptions) {
  const log = o.logger ?? pino({ level: 'silent' });
  const deps: RouteDeps = {
    database: o.database,
    db: o.database.db,
    metrics: planeMetrics(),
    faults: o.faults ?? (() => {}),
    bodyDeadline: {
      idleMs: o.bodyIdleMs ?? DEFAULT_BODY_DEADLINE.idleMs,
      totalMs: o.bodyTotalMs ?? DEFAULT_BODY_DEADLINE.totalMs,
    },
  };

  const app = new OpenAPIHono<PlaneEnv>({
    // every route module's request validation answers here (but the decision route's body: INVALID_DECISION, routes/decisions.ts)
    defaultHook: (result) => {
      if (!result.success) {
        throw refusal(ErrorCode.INVALID_REQUEST, issuesText(result.error.issues));
      }
    },
  });

  app.use('*', requestId());
  app.use('*', async (c, next) => {
    const started = performance.now();
    c.set('log', log.child({ reqId: c.get('requestId') }));
    await next();
    const route = c.req.routePath ?? 'unmatched';
    deps.metrics.requests.inc({ method: c.req.method, route, status: String(c.res.status) });
    c.get('log').debug(
      { method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - started) },
      'request',
    );
  });

  app.onError((e, c) => {
    const http = httpErrorOf(e);
    http.report(c.get('log'));
    return http.respond(c);
  });
  app.notFound((c) => new HttpError(404, ErrorCode.NOT_FOUND, `no route ${c.req.method} ${c.req.path}`).respond(c));

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  app.route('/', healthRoutes(deps));
  const gate = new AdmissionGate(
    o.maxInflightIngest ?? 16,
    o.maxQueuedIngest ?? 64,
    o.ingestQueueWaitMs ?? 10_000,
    (n) => deps.metrics.ingestWaiting.set(n),
  );
  app.route('/', ingestRoutes(deps, { gate, takeoverAfterMs: o.takeoverAfterMs ?? 60_000 }));
  app.route('/', executionRoutes(deps));
  app.route(
    '/',
    claimRoutes(deps, {
      claimReleaseAfterMs: o.claimReleaseAfterMs ?? 3_600_000,
      takeoverAfterMs: o.takeoverAfterMs ?? 60_000,
    }),
  );
  app.route('/', ownerRoutes(deps, { takeoverAfterMs: o.takeoverAfterMs ?? 60_000 }));
  app.route('/', decisionRoutes(deps));
  app.route('/', requestRoutes(deps));
  app.route('/', changeRoutes(deps));
  app.route('/', projectRoutes(deps));
  app.route('/', adminRoutes(deps));

  app.doc31('/openapi.json', { openapi: '3.1.0', info: { title: 'waymark plane', version: '1' } });
  app.route(
    '/',
    inspectorRoutes(o.database.db, {
      dev: o.dev,
      bodyDeadline: deps.bodyDeadline,
      prices: o.prices,
      newKeyShownForMs: o.newKeyShownForMs,
    }),
  );

  return { app, metrics: deps.metrics, requireScope: (scope: Scope | null) => requireScope(o.database.db, scope) };
}
