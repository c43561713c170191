/** POST /v1/ingest: a batch of outbox events, read within its deadline, admitted by the gate, stored in one transaction (ingest.ts). */
import { ErrorCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { IngestRequest, IngestResponse } from '../../shared/protocol.js';
import { recheckKey } from '../auth.js';
import { readJsonBody } from '../body.js';
import type { AdmissionGate } from '../gate.js';
import { ingestBatch } from '../ingest.js';
import { routeModule, type RouteDeps } from '../http/env.js';
import { HttpError, issuesText } from '../http/errors.js';
import { errorResponse, errors, jsonAnswer, jsonBody } from '../http/openapi.js';
import { requireScope, security } from '../http/scope.js';
import { refusePlaneWriter } from './writer-route.js';

export function ingestRoutes(
  { db, metrics, faults, bodyDeadline }: RouteDeps,
  o: { gate: AdmissionGate; takeoverAfterMs: number },
) {
  const app = routeModule();
  // not an openapi() route: the body is read by hand (gzip, limits, deadline), so it is documented on its own
  app.openAPIRegistry.registerPath({
    method: 'post',
    path: '/v1/ingest',
    summary: 'Store a batch of outbox events; one result per row, answered after COMMIT',
    security,
    request: { body: { ...jsonBody(IngestRequest), description: 'JSON, optionally gzip (Content-Encoding: gzip)' } },
    responses: {
      200: jsonAnswer('per-row results', IngestResponse),
      ...errors,
      413: errorResponse('too large (after decompression)'),
      415: errorResponse('not JSON / unknown encoding'),
      429: errorResponse('too many concurrent batches (Retry-After)'),
    },
  });
  app.post('/v1/ingest', requireScope(db, 'ingest'), async (c) => {
    // the body is read before admission, within its deadline: a slot is held only by a batch that
    // has fully arrived, so uploads that stall or trickle cannot take the slots from everyone else
    const body = await readJsonBody(c.req.raw, LIMITS.batchBytes, bodyDeadline);
    const release = await o.gate.enter();
    if (!release)
      throw new HttpError(429, ErrorCode.BUSY, 'too many concurrent batches', { headers: { 'Retry-After': '1' } });
    const t0 = performance.now();
    try {
      // the body, then a turn at the gate, may have taken seconds: a key revoked meanwhile writes nothing
      await recheckKey(db, c.get('principal'));
      const env = IngestRequest.safeParse(body);
      if (!env.success) {
        // every problem named; PROTOCOL when the protocol is one of them (a client of another version says so first)
        const code = env.error.issues.some((i) => i.path[0] === 'protocol')
          ? ErrorCode.PROTOCOL
          : ErrorCode.INVALID_ENVELOPE;
        throw new HttpError(400, code, issuesText(env.error.issues, '(body)'));
      }
      if (env.data.rows.length > LIMITS.batchRows) {
        throw new HttpError(413, ErrorCode.TOO_MANY_ROWS, `a batch holds at most ${LIMITS.batchRows} rows`);
      }
      refusePlaneWriter(env.data.writerId);
      const p = c.get('principal');
      const out = await ingestBatch(
        db,
        p.projectId,
        env.data.writerId,
        env.data.backlog,
        env.data.rows,
        o.takeoverAfterMs,
        p.keyId,
      );
      metrics.ingestRows.inc({ result: 'accepted' }, out.accepted);
      metrics.ingestRows.inc({ result: 'duplicate' }, out.duplicate);
      metrics.ingestRows.inc({ result: 'rejected' }, out.rejected);
      for (const d of out.decisions.dropped) {
        metrics.decisionsDropped.inc();
        c.get('log').warn(
          {
            executionId: d.decision.executionId,
            checkpointId: d.decision.checkpointId,
            decisionId: d.decision.decisionId,
            kept: d.first?.decisionId ?? null,
            writerId: env.data.writerId,
          },
          'a second decision for a pause was dropped; the first is kept',
        );
      }
      await faults('plane.ingest.afterCommit');
      const { decisions: _, ...answer } = out;
      return c.json(answer, 200);
    } finally {
      release();
      metrics.ingestSeconds.observe((performance.now() - t0) / 1000);
    }
  });
  return app;
}
