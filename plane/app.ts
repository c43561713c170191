/**
 * The plane's HTTP app (Hono + @hono/zod-openapi). It stores and serves rows;
 * it never runs a step and never resolves a pause.
 */
import { OpenAPIHono, createRoute } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { requestId } from 'hono/request-id';
import pino, { type Logger } from 'pino';
import { z } from 'zod';
import { LIMITS } from '../shared/limits.js';
import {
  ClaimConflictView,
  ClaimRequest,
  TakeoverRequest,
  TakeoverResponse,
  ClaimResponse,
  ExecutionView,
  HoleView,
  IngestRequest,
  IngestResponse,
  Page,
  QuarantineView,
  RestorePage,
  WhoAmI,
  WriterView,
} from '../shared/protocol.js';
import { ErrorBody, ErrorCode } from '../shared/errors.js';
import { Checkpoint, ExecutionId, PendingInterrupt } from '../shared/rows.js';
import { authenticate, bearer, projectName, type Principal, type Scope } from './auth.js';
import { BodyError, ClientAborted, readJsonBody } from './body.js';
import type { PlaneDatabase } from './db/open.js';
import { isUnavailable } from './db/errors.js';
import { ingestBatch } from './ingest.js';
import { AdmissionGate } from './gate.js';
import { planeMetrics, type PlaneMetrics } from './metrics.js';
import { mountInspector } from './ui/routes.js';
import { mountAdmin } from './admin.js';
import {
  claimPause,
  takeOverRun,
  listTakeovers,
  CursorError,
  describeHoles,
  getExecution,
  listHoles,
  releaseClaim,
  listClaimConflicts,
  listExecutions,
  listQuarantine,
  listRows,
  listWriters,
  pauseState,
  restorePage,
} from './read.js';

export interface PlaneAppOptions {
  database: PlaneDatabase;
  logger?: Logger;
  maxInflightIngest?: number;
  /** Batches that may wait for a slot (default 64); more are refused with 429. */
  maxQueuedIngest?: number;
  /** How long a batch may wait for a slot (default 10 s) before it is refused with 429. */
  ingestQueueWaitMs?: number;
  /** How long a request body may go without a byte (default 10 s) before 408 BODY_TIMEOUT. */
  bodyIdleMs?: number;
  /** How long a whole request body may take (default 120 s) before 408 BODY_TIMEOUT. */
  bodyTotalMs?: number;
  /** Inspector without login (honoured only when the plane binds to loopback). */
  dev?: boolean;
  /**
   * A claim held (claimed at the plane, the holder's local claim never
   * reported) for longer than this may be taken over by another writer.
   * 0: never. Default 1 hour.
   */
  claimReleaseAfterMs?: number;
  /** A run not paused may be taken over once its writer was not heard from for this long (default 60 s; see PlaneConfig). */
  takeoverAfterMs?: number;
  /** Named fault points (tests): 'plane.ingest.afterCommit', 'plane.claim.afterCommit'; awaited. */
  faults?: import('../shared/faults.js').FaultHook;
}

export type PlaneEnv = { Variables: { principal: Principal; log: Logger; requestId: string } };

const errorJson = (c: Context, status: number, code: string, message: string, headers?: Record<string, string>) => {
  for (const [k, v] of Object.entries(headers ?? {})) c.header(k, v);
  return c.json({ error: { code, message } }, status as 400);
};

export function createPlaneApp(o: PlaneAppOptions) {
  const db = o.database.db;
  const log = o.logger ?? pino({ level: 'silent' });
  const metrics: PlaneMetrics = planeMetrics();
  const faults = o.faults ?? (() => {});
  const claimReleaseAfterMs = o.claimReleaseAfterMs ?? 3_600_000;
  const takeoverAfterMs = o.takeoverAfterMs ?? 60_000;
  const gate = new AdmissionGate(o.maxInflightIngest ?? 16, o.maxQueuedIngest ?? 64, o.ingestQueueWaitMs ?? 10_000);
  const bodyDeadline = { idleMs: o.bodyIdleMs ?? 10_000, totalMs: o.bodyTotalMs ?? 120_000 };

  const app = new OpenAPIHono<PlaneEnv>({
    defaultHook: (result, c) => {
      if (!result.success) {
        return errorJson(c, 400, ErrorCode.INVALID_REQUEST, result.error.issues.map((i) => `${i.path.join('.') || '(request)'}: ${i.message}`).join('; '));
      }
    },
  });

  app.use('*', requestId());
  app.use('*', async (c, next) => {
    const started = performance.now();
    c.set('log', log.child({ reqId: c.get('requestId') }));
    await next();
    const route = c.req.routePath ?? 'unmatched';
    metrics.requests.inc({ method: c.req.method, route, status: String(c.res.status) });
    c.get('log').debug({ method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - started) }, 'request');
  });

  /** A valid key, with `scope` (or admin) when one is named. */
  const requireScope =
    (scope: Scope | null): MiddlewareHandler<PlaneEnv> =>
    async (c, next) => {
      const p = await authenticate(db, bearer(c.req.header('authorization')));
      if (!p) return errorJson(c, 401, 'UNAUTHORIZED', 'a valid API key is required (Authorization: Bearer wm_…)');
      if (scope && !p.scopes.includes(scope) && !p.scopes.includes('admin')) return errorJson(c, 403, ErrorCode.FORBIDDEN, `this key lacks the '${scope}' scope`);
      c.set('principal', p);
      await next();
    };

  app.onError((e, c) => {
    // a timed-out body is still in the socket: answer, then close the connection rather than drain it
    if (e instanceof BodyError) return errorJson(c, e.status, e.code, e.message, e.status === 408 ? { Connection: 'close' } : undefined);
    if (e instanceof ClientAborted) {
      c.get('log')?.info({ cause: (e.cause as Error)?.message }, 'client aborted');
      return errorJson(c, 499, 'CLIENT_ABORTED', e.message);
    }
    if (e instanceof CursorError) return errorJson(c, 400, e.code, e.message);
    if (isUnavailable(e)) {
      c.get('log')?.warn({ err: e }, 'database unavailable');
      return errorJson(c, 503, 'UNAVAILABLE', 'the plane cannot reach its database; retry later', { 'Retry-After': '2' });
    }
    c.get('log')?.error({ err: e }, 'unhandled error');
    return errorJson(c, 500, 'INTERNAL', 'internal error');
  });
  app.notFound((c) => errorJson(c, 404, 'NOT_FOUND', `no route ${c.req.method} ${c.req.path}`));


  const security = [{ bearer: [] as string[] }];
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  const errors = {
    400: { description: 'bad request', content: { 'application/json': { schema: ErrorBody } } },
    401: { description: 'no or bad key', content: { 'application/json': { schema: ErrorBody } } },
    403: { description: 'wrong scope', content: { 'application/json': { schema: ErrorBody } } },
    503: { description: 'database unavailable', content: { 'application/json': { schema: ErrorBody } } },
  };
  const limitQ = z.coerce.number().int().min(1).max(1000).default(100);

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', async (c) => {
    try {
      await o.database.ping();
      return c.json({ ok: true, database: o.database.kind, migrations: 'applied' });
    } catch (e) {
      return errorJson(c, 503, 'NOT_READY', `database not reachable: ${(e as Error).message}`, { 'Retry-After': '2' });
    }
  });
  // no /metrics here: operator metrics span every project, so they are served on their own
  // listener (metricsApp), never to a project's key

  // ── who am I ─────────────────────────────────────────────────────────
  app.use('/v1/whoami', requireScope(null));
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/whoami',
      summary: "The presented key's project and scopes: a cheap authenticated call that checks a connection (any scope)",
      security,
      responses: { 200: { description: 'the key', content: { 'application/json': { schema: WhoAmI } } }, ...errors },
    }),
    async (c) => {
      const p = c.get('principal');
      return c.json({ project: (await projectName(db, p.projectId)) ?? p.projectId, keyId: p.keyId, scopes: p.scopes, serverTime: new Date().toISOString() }, 200);
    },
  );

  // ── ingest ───────────────────────────────────────────────────────────
  app.openAPIRegistry.registerPath({
    method: 'post',
    path: '/v1/ingest',
    summary: 'Store a batch of outbox events; one result per row, answered after COMMIT',
    security,
    request: { body: { content: { 'application/json': { schema: IngestRequest } }, description: 'JSON, optionally gzip (Content-Encoding: gzip)' } },
    responses: {
      200: { description: 'per-row results', content: { 'application/json': { schema: IngestResponse } } },
      ...errors,
      413: { description: 'too large (after decompression)', content: { 'application/json': { schema: ErrorBody } } },
      415: { description: 'not JSON / unknown encoding', content: { 'application/json': { schema: ErrorBody } } },
      429: { description: 'too many concurrent batches (Retry-After)', content: { 'application/json': { schema: ErrorBody } } },
    },
  });
  app.post('/v1/ingest', requireScope('ingest'), async (c) => {
    // the body is read before admission, within its deadline: a slot is held only by a batch that
    // has fully arrived, so uploads that stall or trickle cannot take the slots from everyone else
    const body = await readJsonBody(c.req.raw, LIMITS.batchBytes, bodyDeadline);
    const release = await gate.enter();
    if (!release) return errorJson(c, 429, 'BUSY', 'too many concurrent batches', { 'Retry-After': '1' });
    const t0 = performance.now();
    try {
      const env = IngestRequest.safeParse(body);
      if (!env.success) {
        const i = env.error.issues[0];
        const code = i.path[0] === 'protocol' ? 'PROTOCOL' : 'INVALID_ENVELOPE';
        return errorJson(c, 400, code, `${i.path.join('.') || '(body)'}: ${i.message}`);
      }
      if (env.data.rows.length > LIMITS.batchRows) {
        return errorJson(c, 413, 'TOO_MANY_ROWS', `a batch holds at most ${LIMITS.batchRows} rows`);
      }
      const p = c.get('principal');
      const out = await ingestBatch(db, p.projectId, env.data.writerId, env.data.backlog, env.data.rows);
      metrics.ingestRows.inc({ result: 'accepted' }, out.accepted);
      metrics.ingestRows.inc({ result: 'duplicate' }, out.duplicate);
      metrics.ingestRows.inc({ result: 'rejected' }, out.rejected);
      await faults('plane.ingest.afterCommit');
      return c.json(out, 200);
    } finally {
      release();
      metrics.ingestSeconds.observe((performance.now() - t0) / 1000);
    }
  });

  // ── read side ────────────────────────────────────────────────────────
  const IdParam = z.object({ id: ExecutionId });
  const notFound = (c: Context, id: string) => errorJson(c, 404, 'EXECUTION_NOT_FOUND', `execution '${id}' is not on this plane`);

  app.use('/v1/executions', requireScope('read'));
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/executions',
      summary: 'Executions, newest update first, cursor paged',
      security,
      request: {
        query: z.object({
          status: z.enum(['running', 'paused', 'completed', 'failed', 'cancelled']).optional(),
          writer: z.string().max(LIMITS.writerIdLength).optional(),
          updatedSince: z.iso.datetime().optional(),
          q: z.string().max(LIMITS.executionIdLength).optional(),
          cursor: z.string().max(1000).optional(),
          limit: limitQ,
        }),
      },
      responses: { 200: { description: 'a page', content: { 'application/json': { schema: Page(ExecutionView) } } }, ...errors },
    }),
    async (c) => c.json(await listExecutions(db, c.get('principal').projectId, c.req.valid('query')), 200),
  );

  app.use('/v1/executions/:id', async (c, next) => (c.req.method === 'GET' ? requireScope('read')(c, next) : next()));
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/executions/{id}',
      summary: 'One execution with its pause and claim conflicts',
      security,
      request: { params: IdParam },
      responses: {
        200: {
          description: 'the execution',
          content: {
            'application/json': {
              schema: z.object({
                execution: ExecutionView,
                pause: z
                  .object({
                    pending: PendingInterrupt,
                    state: z.string(),
                    claimedBy: z.string().nullable(),
                    claimedAt: z.string().nullable(),
                    claim: z
                      .object({ writerId: z.string(), source: z.string(), claimedAt: z.string(), appliedAt: z.string().nullable(), state: z.enum(['held', 'applied']) })
                      .nullable(),
                  })
                  .nullable(),
                conflicts: z.array(ClaimConflictView),
                /** Seqs whose rows the plane refused, and why (empty when `execution.complete`). */
                holes: z.array(HoleView),
                /** Takeovers of the run by another writer (POST …/takeover), oldest first. */
                takeovers: z.array(
                  z.object({ fromSeq: z.number().int(), winnerWriterId: z.string(), loserWriterId: z.string(), loserLastContactAt: z.string().nullable(), at: z.string() }),
                ),
              }),
            },
          },
        },
        404: { description: 'unknown execution', content: { 'application/json': { schema: ErrorBody } } },
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const projectId = c.get('principal').projectId;
      const execution = await getExecution(db, projectId, id);
      if (!execution) return notFound(c, id);
      return c.json(
        { execution, pause: await pauseState(db, projectId, id), conflicts: await listClaimConflicts(db, projectId, id), holes: await listHoles(db, projectId, id), takeovers: await listTakeovers(db, projectId, id) },
        200,
      );
    },
  );

  app.use('/v1/executions/:id/rows', requireScope('read'));
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/executions/{id}/rows',
      summary: "An execution's rows by seq, cursor paged",
      security,
      request: { params: IdParam, query: z.object({ cursor: z.string().max(200).optional(), limit: limitQ }) },
      responses: {
        200: { description: 'a page', content: { 'application/json': { schema: Page(Checkpoint) } } },
        404: { description: 'unknown execution', content: { 'application/json': { schema: ErrorBody } } },
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const projectId = c.get('principal').projectId;
      if (!(await getExecution(db, projectId, id))) return notFound(c, id);
      return c.json(await listRows(db, projectId, id, c.req.valid('query')), 200);
    },
  );

  app.use('/v1/executions/:id/restore', requireScope('read'));
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/executions/{id}/restore',
      summary: 'Everything a new machine needs to resume: rows (paged), the open pause, idempotency entries (first page)',
      security,
      request: { params: IdParam, query: z.object({ cursor: z.string().max(200).optional(), limit: z.coerce.number().int().min(1).max(1000).default(500) }) },
      responses: {
        200: { description: 'a page of the bundle', content: { 'application/json': { schema: RestorePage } } },
        404: { description: 'unknown execution', content: { 'application/json': { schema: ErrorBody } } },
        409: { description: 'RUN_INCOMPLETE: the plane refused a row of this run; `details.holes` names each seq and why', content: { 'application/json': { schema: ErrorBody } } },
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const projectId = c.get('principal').projectId;
      const execution = await getExecution(db, projectId, id);
      // a run whose every row was refused has holes but no summary: still incomplete, not unknown
      const list = !execution || !execution.complete ? await listHoles(db, projectId, id) : [];
      if (!execution && !list.length) return notFound(c, id);
      if (list.length) {
        const message = `execution '${id}' is incomplete on this plane and cannot be restored: ${describeHoles(list)}`;
        return c.json({ error: { code: ErrorCode.RUN_INCOMPLETE, message, details: { executionId: id, missingSeqs: list.map((h) => h.seq), holes: list } } }, 409);
      }
      return c.json(await restorePage(db, projectId, id, c.req.valid('query')), 200);
    },
  );

  app.use('/v1/executions/:id/claim', requireScope('ingest'));
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/executions/{id}/claim',
      summary: 'Claim a pause for one writer before resuming it; exactly one writer wins',
      security,
      request: { params: IdParam, body: { content: { 'application/json': { schema: ClaimRequest } } } },
      responses: {
        200: { description: 'this writer holds the claim', content: { 'application/json': { schema: ClaimResponse } } },
        404: { description: 'the pause is not on the plane', content: { 'application/json': { schema: ErrorBody } } },
        409: { description: 'another writer holds it', content: { 'application/json': { schema: ErrorBody } } },
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await claimPause(db, c.get('principal').projectId, id, body.checkpointId, body.writerId, claimReleaseAfterMs);
      await faults('plane.claim.afterCommit');
      if ('takenFrom' in r && r.takenFrom) {
        c.get('log').warn({ executionId: id, checkpointId: body.checkpointId, from: r.takenFrom, to: body.writerId }, 'a held claim past its release delay was taken over');
      }
      if ('notFound' in r) return errorJson(c, 404, ErrorCode.PAUSE_NOT_FOUND, `pause ${body.checkpointId} of execution '${id}' is not on this plane (sync it first)`);
      if (!r.won) {
        c.header('x-waymark-claimed-by', r.writerId);
        return c.json(
          { error: { code: 'ALREADY_CLAIMED', message: `pause ${body.checkpointId} was claimed by writer '${r.writerId}'`, details: { writerId: r.writerId, claimedAt: r.claimedAt } } },
          409,
        );
      }
      return c.json({ executionId: id, checkpointId: body.checkpointId, writerId: r.writerId, claimedAt: r.claimedAt }, 200);
    },
  );

  app.use('/v1/executions/:id/takeover', requireScope('ingest'));
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/executions/{id}/takeover',
      summary: 'Take over a run that is not paused (its writer died mid-run): one writer wins, and only once its writer was not heard from for the takeover delay',
      security,
      request: { params: IdParam, body: { content: { 'application/json': { schema: TakeoverRequest } } } },
      responses: {
        200: { description: 'this writer may run it', content: { 'application/json': { schema: TakeoverResponse } } },
        404: { description: 'the run is not on the plane', content: { 'application/json': { schema: ErrorBody } } },
        409: {
          description: 'refused: LEASE_LIVE (its writer was heard from recently), RUN_TAKEN_OVER (another writer has it), STALE_COPY (the plane has newer rows), NOT_RUNNING (paused or finished)',
          content: { 'application/json': { schema: ErrorBody } },
        },
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await takeOverRun(db, c.get('principal').projectId, id, body.writerId, body.seq, takeoverAfterMs);
      const refuse = (code: string, message: string, details: Record<string, unknown>) => c.json({ error: { code, message, details: { executionId: id, ...details } } }, 409);
      switch (r.outcome) {
        case 'not_found':
          return errorJson(c, 404, 'EXECUTION_NOT_FOUND', `execution '${id}' is not on this plane (sync it first)`);
        case 'lost':
          return refuse(ErrorCode.RUN_TAKEN_OVER, `execution '${id}' was taken over by writer '${r.writerId}' at seq ${r.fromSeq} (${r.at})`, { writerId: r.writerId, fromSeq: r.fromSeq, at: r.at });
        case 'live':
          return refuse('LEASE_LIVE', `execution '${id}' is still being run by writer '${r.writerId}' (last heard from ${r.lastContactAt}); it may be taken over after ${r.liveUntil}`, { writerId: r.writerId, lastContactAt: r.lastContactAt, liveUntil: r.liveUntil });
        case 'stale':
          return refuse('STALE_COPY', `execution '${id}' has rows up to seq ${r.planeSeq} on the plane, newer than this copy (seq ${body.seq}): restore it again`, { planeSeq: r.planeSeq });
        case 'not_running':
          return refuse('NOT_RUNNING', `execution '${id}' is ${r.status} on the plane, not running: nothing to take over`, { status: r.status });
      }
      if (r.takenFrom) c.get('log').warn({ executionId: id, from: r.takenFrom, to: body.writerId, fromSeq: r.fromSeq }, 'a run was taken over');
      return c.json({ executionId: id, writerId: body.writerId, fromSeq: r.fromSeq, takenFrom: r.takenFrom }, 200);
    },
  );

  app.use('/v1/executions/:id/claim/release', requireScope('ingest'));
  app.openapi(
    createRoute({
      method: 'post',
      path: '/v1/executions/{id}/claim/release',
      summary: 'Give back a claim this writer holds but never applied locally (it crashed or gave up before resuming); the pause is open again',
      security,
      request: { params: IdParam, body: { content: { 'application/json': { schema: ClaimRequest } } } },
      responses: {
        200: { description: 'released, or there was no claim', content: { 'application/json': { schema: z.object({ released: z.boolean() }) } } },
        404: { description: 'the pause is not on the plane', content: { 'application/json': { schema: ErrorBody } } },
        409: { description: 'another writer holds it, or its holder already applied it', content: { 'application/json': { schema: ErrorBody } } },
        ...errors,
      },
    }),
    async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const r = await releaseClaim(db, c.get('principal').projectId, id, body.checkpointId, body.writerId);
      if ('notFound' in r) return errorJson(c, 404, ErrorCode.PAUSE_NOT_FOUND, `pause ${body.checkpointId} of execution '${id}' is not on this plane`);
      if ('heldBy' in r) return errorJson(c, 409, 'ALREADY_CLAIMED', `pause ${body.checkpointId} is held by writer '${r.heldBy}', not '${body.writerId}'`);
      if ('appliedAt' in r) return errorJson(c, 409, 'CLAIM_APPLIED', `pause ${body.checkpointId} was claimed and resumed by its holder at ${r.appliedAt}; an applied claim is final`);
      return c.json({ released: r.released }, 200);
    },
  );

  app.use('/v1/quarantine', requireScope('read'));
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/quarantine',
      summary: 'Rows the plane refused, oldest first',
      security,
      request: { query: z.object({ executionId: ExecutionId.optional(), cursor: z.string().max(200).optional(), limit: limitQ }) },
      responses: { 200: { description: 'a page', content: { 'application/json': { schema: Page(QuarantineView) } } }, ...errors },
    }),
    async (c) => c.json(await listQuarantine(db, c.get('principal').projectId, c.req.valid('query')), 200),
  );

  app.use('/v1/writers', requireScope('read'));
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/writers',
      summary: "Each writer's last contact, rows acked and reported backlog",
      security,
      responses: { 200: { description: 'writers', content: { 'application/json': { schema: z.object({ items: z.array(WriterView) }) } } }, ...errors },
    }),
    async (c) => c.json({ items: await listWriters(db, c.get('principal').projectId) }, 200),
  );

  app.use('/v1/conflicts', requireScope('read'));
  app.openapi(
    createRoute({
      method: 'get',
      path: '/v1/conflicts',
      summary: 'Pauses claimed by more than one writer (the later claims arrived offline)',
      security,
      responses: { 200: { description: 'conflicts', content: { 'application/json': { schema: z.object({ items: z.array(ClaimConflictView) }) } } }, ...errors },
    }),
    async (c) => c.json({ items: await listClaimConflicts(db, c.get('principal').projectId) }, 200),
  );

  mountAdmin(app, db, { requireScope, security, errors });

  app.doc31('/openapi.json', { openapi: '3.1.0', info: { title: 'waymark plane', version: '1' } });
  mountInspector(app, db, { dev: o.dev });

  return { app, metrics, requireScope };
}
