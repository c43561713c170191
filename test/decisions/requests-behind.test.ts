/**
 * A worker whose store holds an older copy of a run than the plane never
 * settles a request on that copy's word: it catches up from the plane and
 * applies the request (a retry named after a failure its copy has not seen; a
 * fork from a row its copy lacks). Only a store at or past the request's row
 * may judge that the run moved on. Real plane (PGlite, HTTP), SQLite files.
 */
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Agent,
  connectPlane,
  ScriptedModel,
  serveDecisions,
  tool,
  type Replica,
  type RequestOutcome,
} from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-requests-behind-');
let plane: TestPlane;
let key = '';
let operator = '';
let failing = true;
const opened: { store: SqliteCheckpointer; replica: Replica }[] = [];

const machine = (name: string) => {
  const store = new SqliteCheckpointer({ path: tmp.file(`${name}.db`) });
  const replica = connectPlane(store, {
    url: plane.url,
    apiKey: key,
    pollMs: 0,
    debounceMs: 5,
    timeoutMs: 5000,
    followChanges: false,
  });
  opened.push({ store, replica });
  const agent = new Agent({
    name: 'bot',
    model: new ScriptedModel(({ turn }) => {
      if (failing) throw Object.assign(new Error('upstream 500'), { code: 'MODEL_ERROR' });
      return turn === 0 ? { toolCalls: [{ name: 'work', arguments: {} }] } : { content: 'done' };
    }),
    tools: [tool({ name: 'work', description: 'A step of work', parameters: z.object({}), execute: async () => 'ok' })],
    checkpointer: store,
    leaseMs: 2000,
  });
  return { store, replica, agent };
};

/** The worker on `m` until the request has an outcome other than `failed`; every outcome it reported. */
async function serveUntilSettled(m: ReturnType<typeof machine>, requestId: string): Promise<RequestOutcome[]> {
  const seen: RequestOutcome[] = [];
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 30_000);
  await serveDecisions({
    agent: m.agent,
    store: m.store,
    replica: m.replica,
    signal: stop.signal,
    pollMs: 50,
    retry: { baseMs: 50, capMs: 200 },
    onRequestOutcome: (o) => {
      seen.push(o);
      if (o.request.requestId === requestId && o.outcome !== 'failed') stop.abort();
    },
  });
  clearTimeout(timer);
  return seen;
}

beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('behind', ['ingest', 'read']);
  operator = await plane.key('behind', ['operate']);
});
afterAll(async () => {
  for (const { store, replica } of opened) {
    await replica.stop().catch(() => {});
    await store.close().catch(() => {});
  }
  await plane?.close();
  tmp.cleanup();
});

describe('a worker whose store is behind the plane', () => {
  it('a retry named after a failure its copy has not seen: caught up and applied, not superseded', async () => {
    failing = true;
    const a = machine('a1');
    const b = machine('b1');
    await a.agent.run('hello', { executionId: 'behind-retry' });
    await a.replica.flush({ timeoutMs: 10_000 });
    await b.replica.restore('behind-retry');
    const old = (await b.store.latest('behind-retry'))!;
    // a fails it again: a newer failed marker, at the plane, that b's copy lacks
    expect((await a.agent.resume('behind-retry')).status).toBe('failed');
    await a.replica.flush({ timeoutMs: 10_000 });
    const req = await call(`${plane.url}/v1/executions/behind-retry/requests`, {
      key: operator,
      json: { action: 'retry' },
    });
    expect(req.status).toBe(201);
    expect(req.body.checkpointSeq).toBeGreaterThan(old.seq);
    failing = false;
    const seen = await serveUntilSettled(b, req.body.requestId);
    expect(seen.filter((o) => o.outcome !== 'failed').map((o) => o.outcome)).toEqual(['applied']);
    const at = await call(`${plane.url}/v1/requests/${req.body.requestId}`, { key });
    expect(at.body).toMatchObject({ state: 'applied', settledBy: b.store.writerId, runStatus: 'completed' });
  }, 60_000);

  it('a fork from a row its copy lacks: caught up and forked, not refused', async () => {
    failing = true;
    const a = machine('a2');
    const b = machine('b2');
    await a.agent.run('hello', { executionId: 'behind-fork' });
    await a.replica.flush({ timeoutMs: 10_000 });
    await b.replica.restore('behind-fork');
    const old = (await b.store.latest('behind-fork'))!;
    // a retries it to its end: steps after the failure, at the plane, that b's copy lacks
    failing = false;
    expect((await a.agent.resume('behind-fork')).status).toBe('completed');
    await a.replica.flush({ timeoutMs: 10_000 });
    const from = (await a.store.list('behind-fork', { limit: 100 })).find(
      (r) => r.seq > old.seq && r.step !== 'run_end',
    )!;
    expect(await b.store.getById(from.id)).toBeNull();
    const req = await call(`${plane.url}/v1/executions/behind-fork/requests`, {
      key: operator,
      json: { action: 'fork', checkpointId: from.id },
    });
    expect(req.status).toBe(201);
    const seen = await serveUntilSettled(b, req.body.requestId);
    expect(seen.filter((o) => o.outcome !== 'failed').map((o) => o.outcome)).toEqual(['applied']);
    expect((await b.store.latest(req.body.forkExecutionId))?.step).toBe('run_end');
  }, 60_000);
});
