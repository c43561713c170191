/**
 * Admin endpoints (`/v1/admin/…`, the admin scope): projects, keys and
 * retention, through the operations of admin.ts. An operation's refusal (a
 * WaymarkError of a code below) answers with that code's status.
 */
import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { WaymarkError } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { admin, CreatedKey, KeyView, ProjectView } from '../admin.js';
import { SCOPES } from '../auth.js';
import { jsonBodyWithin } from '../body.js';
import { MIN_RETENTION_SECONDS, PRUNE_BATCH, pruneRuns } from '../retention.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { refusal } from '../http/errors.js';
import { isRefusalCode } from '../../shared/refusals.js';
import { controlBodyErrors, errorResponse, errors, jsonAnswer, jsonBody } from '../http/openapi.js';
import { scoped } from '../http/scope.js';

// strict: a field the plane does not know is refused (a typo such as `scope` would otherwise be dropped unseen)
const CreateProjectBody = z.object({ name: z.string().max(200) }).strict();

// Only the types here: the scopes, the name, the project and any field the plane does not know are judged
// together (admin.createKey), so one answer names every problem of the request.
const CreateKeyFields = ['project', 'name', 'scopes'];
const CreateKeyBody = z.looseObject({
  project: z.string().max(200).optional(),
  name: z
    .string()
    .max(200)
    .optional()
    .describe(
      'at most 128 characters, not blank, no control characters (judged with the other fields, so one answer names every problem)',
    ),
  scopes: z
    .array(z.string().max(64))
    .max(SCOPES.length * 2)
    .describe(`one or more of: ${SCOPES.join(', ')}`),
});

const PruneBody = z
  .object({
    olderThanSeconds: z.number().int().min(MIN_RETENTION_SECONDS),
    project: z.string().max(200).optional(),
    dryRun: z.boolean().optional(),
  })
  .strict();

const PruneAnswer = z.object({
  dryRun: z.boolean(),
  cutoff: z.string(),
  items: z.array(
    z.object({
      project: z.string(),
      executionId: z.string(),
      status: z.string(),
      rowCount: z.number().int(),
      updatedAt: z.string(),
    }),
  ),
});

/** The operation's result; its refusal (a code of REFUSAL_STATUS) as an HttpError with that status (any other failure is thrown on). */
async function answered<T>(op: Promise<T>): Promise<T> {
  try {
    return await op;
  } catch (e) {
    if (e instanceof WaymarkError && isRefusalCode(e.code))
      throw refusal(e.code, e.message, { details: e.details, cause: e });
    throw e;
  }
}

export function adminRoutes({ db, bodyDeadline }: RouteDeps) {
  const app = routeModule();
  const adminScope = scoped(db, 'admin');
  // a POST with a body: read within a control body's limit and the body deadline, after the key is checked
  const adminBody = scoped(db, 'admin', jsonBodyWithin(db, LIMITS.controlBodyBytes, bodyDeadline));

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/admin/projects',
      summary: 'Projects this admin key manages: its own (an operator key: all)',
      ...adminScope,
      responses: { 200: jsonAnswer('projects', z.object({ items: z.array(ProjectView) })), ...errors },
    }),
    async (c) => c.json({ items: await admin.projects(db, c.get('principal')) }, 200),
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/projects',
      summary: 'Create a project (operator scope); keys can only be made for projects that exist',
      ...adminBody,
      request: { body: jsonBody(CreateProjectBody) },
      responses: {
        201: jsonAnswer('created', z.object({ id: z.string(), name: z.string() })),
        409: errorResponse('a project of that name exists'),
        ...controlBodyErrors,
        ...errors,
      },
    }),
    async (c) => c.json(await answered(admin.createProject(db, c.get('principal'), c.req.valid('json').name)), 201),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/admin/keys',
      summary: "Keys of this admin key's project (an operator key: all), never their secrets",
      ...adminScope,
      responses: { 200: jsonAnswer('keys', z.object({ items: z.array(KeyView) })), ...errors },
    }),
    async (c) => c.json({ items: await admin.keys(db, c.get('principal')) }, 200),
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/keys',
      summary: "Create a key in an existing project (default: the admin key's own); the secret is in this answer only",
      ...adminBody,
      request: { body: jsonBody(CreateKeyBody) },
      responses: {
        201: jsonAnswer('created (the secret is shown once)', CreatedKey),
        404: errorResponse('no such project (the known ones are listed)'),
        ...controlBodyErrors,
        ...errors,
      },
    }),
    async (c) => {
      const b = c.req.valid('json');
      const unknownFields = Object.keys(b).filter((k) => !CreateKeyFields.includes(k));
      return c.json(
        await answered(
          admin.createKey(db, c.get('principal'), {
            project: b.project,
            name: b.name,
            scopes: b.scopes,
            unknownFields,
          }),
        ),
        201,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/prune',
      summary: `Retention: delete (or with dryRun, list) the finished runs (completed, failed, cancelled) not updated for olderThanSeconds, with all their rows; never a paused or running run, nor one with an open pause, a held claim or a held owner. One project at a time, in transactions of at most ${PRUNE_BATCH} runs. Of the named project, else the admin key's own (an operator key: every project)`,
      ...adminBody,
      request: { body: jsonBody(PruneBody) },
      responses: {
        200: jsonAnswer('what was deleted (dryRun: what would be)', PruneAnswer),
        404: errorResponse('no such project (the known ones are listed)'),
        ...controlBodyErrors,
        ...errors,
      },
    }),
    async (c) => c.json(await answered(pruneRuns(db, c.get('principal'), c.req.valid('json'))), 200),
  );

  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/admin/keys/{id}/revoke',
      summary: 'Revoke a key: every plane process refuses it from its next request on',
      ...adminScope,
      request: { params: z.object({ id: z.string().max(100) }) },
      responses: {
        200: jsonAnswer('revoked', z.object({ id: z.string(), revoked: z.literal(true) })),
        404: errorResponse('no such key in this project'),
        409: errorResponse('revoked already'),
        ...errors,
      },
    }),
    async (c) => c.json(await answered(admin.revoke(db, c.get('principal'), c.req.valid('param').id)), 200),
  );
  return app;
}
