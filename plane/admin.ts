/**
 * Admin endpoints: projects and keys, through the running plane (so a
 * PGlite data dir is only ever opened by the plane that serves it).
 *
 * - A key with `admin` manages its own project: it lists that project, lists
 *   its keys, creates keys in it and revokes them. Another project does not
 *   exist for it (UNKNOWN_PROJECT / KEY_NOT_FOUND, listing only its own).
 * - A key with `operator` (the bootstrap key) manages every project, and is
 *   the only one that may create projects or grant `operator`.
 */
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { ErrorBody, ErrorCode, WaymarkError } from '../shared/errors.js';
import { createKey, createProject, keyState, listKeys, listProjects, revokeKey, SCOPES, type Principal, type Scope } from './auth.js';
import type { PlaneDb } from './db/open.js';
import type { PlaneEnv } from './app.js';
import { projects } from './db/schema.js';
import { eq } from 'drizzle-orm';
import { MIN_RETENTION_SECONDS, pruneRuns } from './retention.js';

export const ProjectView = z.object({ id: z.string(), name: z.string(), createdAt: z.string() });
export const KeyView = z.object({
  id: z.string(),
  name: z.string(),
  project: z.string(),
  scopes: z.array(z.string()),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});
export const CreatedKey = KeyView.extend({ key: z.string().describe('the secret, shown this once') });

const ScopeEnum = z.enum(SCOPES);

const errorBody = (description: string) => ({ description, content: { 'application/json': { schema: ErrorBody } } });

type Env = PlaneEnv;

const isOperator = (p: Principal) => p.scopes.includes('operator');

/** HTTP status of an admin error code. */
const STATUS: Record<string, number> = {
  [ErrorCode.INVALID_REQUEST]: 400,
  [ErrorCode.FORBIDDEN]: 403,
  [ErrorCode.UNKNOWN_PROJECT]: 404,
  [ErrorCode.KEY_NOT_FOUND]: 404,
  [ErrorCode.PROJECT_EXISTS]: 409,
  [ErrorCode.KEY_REVOKED]: 409,
};

export function keyView(k: Awaited<ReturnType<typeof listKeys>>[number]): z.infer<typeof KeyView> {
  return { id: k.id, name: k.name, project: k.project, scopes: k.scopes, createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null };
}

/** The admin operations, shared by the HTTP endpoints and the inspector's keys page. */
export const admin = {
  async projects(db: PlaneDb, p: Principal) {
    return (await listProjects(db, isOperator(p) ? undefined : p.projectId)).map((r) => ({ id: r.id, name: r.name, createdAt: r.createdAt.toISOString() }));
  },
  async createProject(db: PlaneDb, p: Principal, name: string) {
    if (!isOperator(p)) throw new WaymarkError(ErrorCode.FORBIDDEN, "creating a project takes the 'operator' scope (the plane's bootstrap admin key has it)");
    return createProject(db, name);
  },
  async keys(db: PlaneDb, p: Principal) {
    return (await listKeys(db, isOperator(p) ? undefined : p.projectId)).map(keyView);
  },
  async createKey(db: PlaneDb, p: Principal, o: { project?: string; name?: string; scopes: Scope[] }) {
    if (o.scopes.includes('operator') && !isOperator(p)) throw new WaymarkError(ErrorCode.FORBIDDEN, "only an operator key may grant the 'operator' scope");
    const own = o.project ?? (await db.select({ name: projects.name }).from(projects).where(eq(projects.id, p.projectId)))[0]?.name;
    const k = await createKey(db, { project: own ?? '', name: o.name, scopes: o.scopes, visibleTo: isOperator(p) ? undefined : p.projectId });
    const [view] = (await listKeys(db, k.projectId)).filter((r) => r.id === k.id).map(keyView);
    return { ...view, key: k.key };
  },
  async revoke(db: PlaneDb, p: Principal, id: string) {
    const scope = isOperator(p) ? undefined : p.projectId;
    if (await revokeKey(db, id, scope)) return { id, revoked: true as const };
    const state = await keyState(db, id, scope);
    if (state === 'revoked') throw new WaymarkError(ErrorCode.KEY_REVOKED, `key ${id} is revoked already`);
    throw new WaymarkError(ErrorCode.KEY_NOT_FOUND, `no key ${id} in this project`);
  },
};

export function mountAdmin(
  app: OpenAPIHono<Env>,
  db: PlaneDb,
  o: { requireScope: (s: Scope) => MiddlewareHandler<Env>; security: { bearer: string[] }[]; errors: Record<number, unknown> },
): void {
  const fail = (c: Context, e: unknown) => {
    if (e instanceof WaymarkError && STATUS[e.code]) {
      return c.json({ error: { code: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) } }, STATUS[e.code] as 400);
    }
    throw e;
  };
  const { security, errors } = o;
  const errs = errors as Record<400 | 401 | 403 | 503, ReturnType<typeof errorBody>>;
  app.use('/v1/admin/*', o.requireScope('admin'));

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/admin/projects',
      summary: "Projects this admin key manages: its own (an operator key: all)",
      security,
      responses: { 200: { description: 'projects', content: { 'application/json': { schema: z.object({ items: z.array(ProjectView) }) } } }, ...errs },
    }),
    async (c) => c.json({ items: await admin.projects(db, c.get('principal')) }, 200),
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/projects',
      summary: "Create a project (operator scope); keys can only be made for projects that exist",
      security,
      request: { body: { content: { 'application/json': { schema: z.object({ name: z.string() }) } } } },
      responses: {
        201: { description: 'created', content: { 'application/json': { schema: z.object({ id: z.string(), name: z.string() }) } } },
        409: errorBody('a project of that name exists'),
        ...errs,
      },
    }),
    async (c) => {
      try {
        return c.json(await admin.createProject(db, c.get('principal'), c.req.valid('json').name), 201);
      } catch (e) {
        return fail(c, e);
      }
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/admin/keys',
      summary: "Keys of this admin key's project (an operator key: all), never their secrets",
      security,
      responses: { 200: { description: 'keys', content: { 'application/json': { schema: z.object({ items: z.array(KeyView) }) } } }, ...errs },
    }),
    async (c) => c.json({ items: await admin.keys(db, c.get('principal')) }, 200),
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/keys',
      summary: 'Create a key in an existing project (default: the admin key\'s own); the secret is in this answer only',
      security,
      request: {
        body: {
          content: {
            'application/json': {
              schema: z.object({ project: z.string().max(200).optional(), name: z.string().max(200).optional(), scopes: z.array(ScopeEnum).min(1) }),
            },
          },
        },
      },
      responses: {
        201: { description: 'created (the secret is shown once)', content: { 'application/json': { schema: CreatedKey } } },
        404: errorBody('no such project (the known ones are listed)'),
        ...errs,
      },
    }),
    async (c) => {
      try {
        const b = c.req.valid('json');
        return c.json(await admin.createKey(db, c.get('principal'), { project: b.project, name: b.name, scopes: b.scopes }), 201);
      } catch (e) {
        return fail(c, e);
      }
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/prune',
      summary:
        "Retention: delete (or with dryRun, list) the finished runs (completed, failed) not updated for olderThanSeconds, with all their rows; never a paused or running run. Of the named project, else the admin key's own (an operator key: every project)",
      security,
      request: {
        body: {
          content: {
            'application/json': {
              schema: z.object({
                olderThanSeconds: z.number().int().min(MIN_RETENTION_SECONDS),
                project: z.string().max(200).optional(),
                dryRun: z.boolean().optional(),
              }),
            },
          },
        },
      },
      responses: {
        200: {
          description: 'what was deleted (dryRun: what would be)',
          content: {
            'application/json': {
              schema: z.object({
                dryRun: z.boolean(),
                cutoff: z.string(),
                items: z.array(z.object({ project: z.string(), executionId: z.string(), status: z.string(), rowCount: z.number().int(), updatedAt: z.string() })),
              }),
            },
          },
        },
        404: errorBody('no such project (the known ones are listed)'),
        ...errs,
      },
    }),
    async (c) => {
      try {
        return c.json(await pruneRuns(db, c.get('principal'), c.req.valid('json')), 200);
      } catch (e) {
        return fail(c, e);
      }
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/keys/{id}/revoke',
      summary: 'Revoke a key: every plane process refuses it from its next request on',
      security,
      request: { params: z.object({ id: z.string().max(100) }) },
      responses: {
        200: { description: 'revoked', content: { 'application/json': { schema: z.object({ id: z.string(), revoked: z.literal(true) }) } } },
        404: errorBody('no such key in this project'),
        409: errorBody('revoked already'),
        ...errs,
      },
    }),
    async (c) => {
      try {
        return c.json(await admin.revoke(db, c.get('principal'), c.req.valid('param').id), 200);
      } catch (e) {
        return fail(c, e);
      }
    },
  );
}
