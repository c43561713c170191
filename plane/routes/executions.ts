/** The read side of executions: the list, one execution, its rows, and the restore bundle. */
import { createRoute } from '@hono/zod-openapi';
import { z } from 'zod';
import { ErrorCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { ClaimConflictView, DecisionView, ExecutionView, HoleView, Page, RestorePage } from '../../shared/protocol.js';
import { Checkpoint, PendingInterrupt, WriterId } from '../../shared/rows.js';
import { CONTROL_CHARACTER } from '../../shared/text.js';
import { decisionOf } from '../decisions.js';
import { listClaimConflicts } from '../reads/claim-conflicts.js';
import { getExecution, listExecutions, listTakeovers } from '../reads/executions.js';
import { listHoles } from '../reads/holes.js';
import { pauseState } from '../reads/pauses.js';
import { listRows } from '../reads/rows.js';
import { restorePage } from '../restore.js';
import { describeHoles } from '../../support/holes.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { executionNotFound, refusal } from '../http/errors.js';
import { errorResponse, errors, givenOnce, IdParam, jsonAnswer, limitQ } from '../http/openapi.js';
import { scoped } from '../http/scope.js';
import { recordRestorer } from '../writer-changes.js';
import { refusePlaneWriter } from './writer-route.js';

/** One execution with its pause, claim conflicts, holes and takeovers. */
const ExecutionDetail = z.object({
  execution: ExecutionView,
  pause: z
    .object({
      pending: PendingInterrupt,
      state: z.string(),
      claimedBy: z.string().nullable(),
      claimedAt: z.string().nullable(),
      claim: z
        .object({
          writerId: z.string(),
          source: z.string(),
          claimedAt: z.string(),
          appliedAt: z.string().nullable(),
          state: z.enum(['held', 'applied']),
        })
        .nullable(),
      /** The decision recorded for this pause (POST …/decision, the inspector, a local store), with where it stands. */
      decision: DecisionView.nullable(),
    })
    .nullable(),
  conflicts: z.array(ClaimConflictView),
  /** Seqs whose rows the plane refused, and why (empty when `execution.complete`). */
  holes: z.array(HoleView),
  /** Takeovers of the run by another writer (POST …/takeover), oldest first. */
  takeovers: z.array(
    z.object({
      fromSeq: z.number().int(),
      winnerWriterId: z.string(),
      loserWriterId: z.string(),
      loserLastContactAt: z.string().nullable(),
      at: z.string(),
    }),
  ),
});

/** A filter compared with an id column: no control characters (ids have none, and Postgres text cannot hold U+0000). */
const idFilter = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => !CONTROL_CHARACTER.test(v), 'must not contain control characters');

/** A time to compare with `updated_at`: Postgres has no year 0 (1 BC), so that one is refused here, not by the database. */
const Since = z.iso.datetime().refine((v) => !v.startsWith('0000'), 'must be in the years 0001-9999');

export function executionRoutes({ db }: RouteDeps) {
  const app = routeModule();

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/executions',
      summary:
        'Executions, newest update first, cursor paged: a live view. A run updated while you page moves to the front: this walk does not list it again, or misses it if it had not reached it yet. For a complete listing walk the change feed (GET /v1/changes)',
      ...scoped(db, 'read'),
      request: {
        query: z.object({
          status: z.enum(['running', 'paused', 'completed', 'failed', 'cancelled']).optional(),
          writer: idFilter(LIMITS.writerIdLength).optional(),
          updatedSince: Since.optional(),
          q: idFilter(LIMITS.executionIdLength).optional(),
          cursor: z.string().max(1000).optional(),
          limit: limitQ,
        }),
      },
      responses: { 200: jsonAnswer('a page', Page(ExecutionView)), ...errors },
    }),
    async (c) => c.json(await listExecutions(db, c.get('principal').projectId, c.req.valid('query')), 200),
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/executions/{id}',
      summary: 'One execution with its pause (and its decision) and claim conflicts',
      ...scoped(db, 'read'),
      request: { params: IdParam },
      responses: {
        200: jsonAnswer('the execution', ExecutionDetail),
        404: errorResponse('unknown execution'),
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const projectId = c.get('principal').projectId;
      const execution = await getExecution(db, projectId, id);
      if (!execution) throw executionNotFound(id);
      const pause = await pauseState(db, projectId, id);
      return c.json(
        {
          execution,
          pause: pause && { ...pause, decision: await decisionOf(db, projectId, id, pause.pending.checkpointId) },
          conflicts: await listClaimConflicts(db, projectId, id),
          holes: await listHoles(db, projectId, id),
          takeovers: await listTakeovers(db, projectId, id),
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/executions/{id}/rows',
      summary:
        "An execution's rows by seq, cursor paged: at most `limit` rows and 8 MiB of them a page (never fewer than one row)",
      ...scoped(db, 'read'),
      request: { params: IdParam, query: z.object({ cursor: z.string().max(200).optional(), limit: limitQ }) },
      responses: {
        200: jsonAnswer('a page', Page(Checkpoint)),
        404: errorResponse('unknown execution'),
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const projectId = c.get('principal').projectId;
      if (!(await getExecution(db, projectId, id))) throw executionNotFound(id);
      return c.json(await listRows(db, projectId, id, c.req.valid('query')), 200);
    },
  );

  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/executions/{id}/restore',
      summary:
        'Everything a new machine needs to resume: rows (paged: at most `limit` rows and 8 MiB of them a page, never fewer than one), the open pause and its decision (first page), idempotency entries (all on the first page, or with `idempotency=paged` after the rows, paged like them: gather them from every page)',
      ...scoped(db, 'read'),
      request: {
        params: IdParam,
        query: z.object({
          // a cursor of the idempotency entries holds a key (up to 512 characters, escaped in JSON, then base64)
          cursor: z.string().max(8192).optional(),
          limit: z.coerce.number().int().min(1).max(1000).default(500),
          idempotency: z.enum(['first', 'paged']).default('first'),
          // the restoring store's writer: the run's changes reach its feed from now on (GET /v1/writer-changes)
          writerId: givenOnce(WriterId).optional(),
        }),
      },
      responses: {
        200: jsonAnswer('a page of the bundle', RestorePage),
        404: errorResponse('unknown execution'),
        409: errorResponse(
          'RUN_INCOMPLETE: the plane refused a row of this run, or a seq below its newest never arrived; `details.holes` names each (a refused seq, or the first seq of a span never received) and why',
        ),
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const projectId = c.get('principal').projectId;
      const execution = await getExecution(db, projectId, id);
      // a run whose every row was refused has holes but no summary: still incomplete, not unknown
      const list = !execution?.complete ? await listHoles(db, projectId, id) : [];
      if (!execution && !list.length) throw executionNotFound(id);
      if (list.length) {
        const message = `execution '${id}' is incomplete on this plane and cannot be restored: ${describeHoles(list)}`;
        throw refusal(ErrorCode.RUN_INCOMPLETE, message, {
          details: { executionId: id, missingSeqs: list.map((h) => h.seq), holes: list },
        });
      }
      const q = c.req.valid('query');
      if (q.writerId !== undefined && q.cursor === undefined) {
        refusePlaneWriter(q.writerId);
        await recordRestorer(db, projectId, id, q.writerId);
      }
      return c.json(
        await restorePage(db, projectId, id, { cursor: q.cursor, limit: q.limit, entries: q.idempotency }),
        200,
      );
    },
  );
  return app;
}
