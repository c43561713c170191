/**
 * What every plane route module shares: the context variables the app sets
 * (`principal` by a route's scope, `log` and `requestId` per request), the
 * dependencies a module is built from, and the factory of a module's app.
 * Route modules and the inspector import this, never plane/app.ts.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Logger } from 'pino';
import type { Principal } from '../auth.js';
import type { BodyDeadline } from '../../support/body-read.js';
import type { PlaneDatabase, PlaneDb } from '../db/open.js';
import type { PlaneMetrics } from '../metrics.js';
import type { PlaneFaults } from '../types.js';

export type PlaneEnv = { Variables: { principal: Principal; log: Logger; requestId: string } };

/** What a route module is built from. */
export interface RouteDeps {
  database: PlaneDatabase;
  db: PlaneDb;
  metrics: PlaneMetrics;
  faults: PlaneFaults;
  /** How long a request body may take (the plane's bodyIdleMs/bodyTotalMs), for every route that reads one. */
  bodyDeadline: BodyDeadline;
}

/**
 * The app of one route module, mounted on the plane's with `app.route()`. It
 * sets no hooks of its own: request validation (the default hook) and errors
 * (`onError`) are answered by the plane's app, once for every module.
 */
export const routeModule = () => new OpenAPIHono<PlaneEnv>();
