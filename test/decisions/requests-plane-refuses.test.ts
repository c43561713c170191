/**
 * The decision worker when its plane will not list run requests: a plane
 * older than run requests (GET /v1/requests answers 404 NOT_FOUND, as the
 * plane's router answers a route it lacks), and a key revoked while the
 * worker polls. Each is said once (the worker's logger), the worker goes on
 * serving decisions and asking every `pollMs`, and after a revocation it
 * applies no request; the replica goes `auth_failed` naming the revoked key,
 * as when a feed's round is refused. Real plane (PGlite, HTTP), a real proxy
 * in front of it (test/helpers/fault-proxy.ts), SQLite files.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectPlane,
  serveDecisions,
  type DecisionOutcome,
  type Replica,
  type RequestOutcome,
  type ServeSummary,
} from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { decisionFor } from '../../client/testing/store/decisions.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { createKey, revokeKey } from '../../plane/auth.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pollUntil } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-requests-refused-');
let plane: TestPlane;
const proxies: FaultProxy[] = [];
beforeAll(async () => {
  plane = await startTestPlane('pglite');
});
afterAll(async () => {
  for (const p of proxies) await p.close();
  await plane?.close();
  tmp.cleanup();
});

/** A store connected to the plane through a proxy, the refund agent on it, and a decision worker with a logger. */
async function worker(name: string, apiKey: string) {
  const proxy = await new FaultProxy(plane.url).start();
  proxies.push(proxy);
  const store = new SqliteCheckpointer({ path: tmp.file(`${name}.db`) });
  const replica: Replica = connectPlane(store, {
    url: proxy.url,
    apiKey,
    pollMs: 0,
    debounceMs: 5,
    timeoutMs: 5000,
    followChanges: false,
  });
  const ledger = new Ledger(tmp.file(`${name}.jsonl`));
  const { agent } = refundAgent({ store, ledger });
  const warnings: { fields: Record<string, unknown>; message: string }[] = [];
  const decisions: DecisionOutcome[] = [];
  const requests: RequestOutcome[] = [];
  const stop = new AbortController();
  let serving: Promise<ServeSummary> | null = null;
  return {
    proxy,
    store,
    replica,
    agent,
    ledger,
    warnings,
    decisions,
    requests,
    /** The /v1/requests listings the proxy passed on or answered. */
    listings: () => proxy.seen.filter((r) => r.path.startsWith('/v1/requests?')),
    serve() {
      serving = serveDecisions({
        agent,
        store,
        replica,
        signal: stop.signal,
        pollMs: 50,
        retry: { baseMs: 50, capMs: 200 },
        logger: { warn: (fields, message) => warnings.push({ fields, message }) },
        onOutcome: (o) => decisions.push(o),
        onRequestOutcome: (o) => requests.push(o),
      });
    },
    async stop(): Promise<ServeSummary> {
      stop.abort();
      const summary = await serving!;
      await replica.stop();
      await store.close();
      return summary;
    },
  };
}

describe('a plane that does not list run requests', () => {
  it('older than run requests (404): said once, the worker goes on applying decisions', async () => {
    const key = await plane.key('older', ['ingest', 'read']);
    const w = await worker('older', key);
    // what the plane's router answers for a route it does not have
    w.proxy.rule = ({ path }) =>
      path.startsWith('/v1/requests')
        ? { status: 404, code: 'NOT_FOUND', message: `no route GET ${path.split('?')[0]}` }
        : undefined;
    const decide = async (order: string) => {
      const id = `older-${order}`;
      const pause = (await w.agent.run(refundRequest(order, 9000), { executionId: id })).pendingInterrupt!;
      expect((await w.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
      await w.store.recordDecision(decisionFor(id, pause.checkpointId, { decidedBy: 'manager' }));
      await pollUntil(async () => w.decisions.some((o) => o.decision.executionId === id && o.outcome === 'applied'));
    };
    w.serve();
    let summary: ServeSummary;
    try {
      await decide('O-1');
      // pass after pass asks, and is answered 404
      const asked = w.listings().length;
      await pollUntil(async () => w.listings().length >= asked + 3);
      await decide('O-2');
    } finally {
      summary = await w.stop();
    }
    expect(summary.applied).toBe(2);
    expect(w.ledger.charges()).toHaveLength(2);
    expect(w.listings().length).toBeGreaterThanOrEqual(4);
    expect(w.warnings.map((x) => x.message)).toEqual([
      expect.stringMatching(
        /^this plane does not record run requests \(GET \/v1\/requests answered 404 NOT_FOUND: a plane older than run requests/,
      ),
    ]);
    expect(w.warnings[0].fields).toMatchObject({ status: 404, planeCode: 'NOT_FOUND', code: 'PLANE_ERROR' });
    expect(summary.requests).toEqual({ applied: 0, appliedElsewhere: 0, superseded: 0, refused: 0, failed: 0 });
  }, 120_000);

  it('the key revoked while the worker polls: said once naming the key, auth_failed, no request applied after it', async () => {
    const k = await createKey(plane.database.db, {
      createProject: true,
      project: 'revoked',
      scopes: ['ingest', 'read'],
    });
    const operator = await plane.key('revoked', ['operate']);
    const w = await worker('revoked', k.key);
    // the decision feed's answers are held: only the run requests' listing can hear the refusal
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    w.proxy.rule = ({ path }) => (/^\/v1\/(writer-)?decisions\?/.test(path) ? { holdAnswer: held } : undefined);
    const source = (await w.agent.run(refundRequest('R-1', 50), { executionId: 'revoked-source' })).status;
    expect(source).toBe('completed');
    expect((await w.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    const from = (await w.store.list('revoked-source', { limit: 100 })).find((r) => r.step === 'llm_call')!;
    const fork = async () => {
      const r = await call(`${plane.url}/v1/executions/revoked-source/requests`, {
        key: operator,
        json: { action: 'fork', checkpointId: from.id },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body as { requestId: string; forkExecutionId: string };
    };
    w.serve();
    let summary: ServeSummary;
    let late: { requestId: string; forkExecutionId: string };
    try {
      // before: a request is applied
      const first = await fork();
      await pollUntil(async () => w.requests.some((o) => o.request.requestId === first.requestId));
      expect(w.requests.map((o) => o.outcome)).toEqual(['applied']);
      await revokeKey(plane.database.db, k.id);
      await pollUntil(async () => (await w.replica.status()).state === 'auth_failed');
      late = await fork();
      const asked = w.listings().length;
      await pollUntil(async () => w.listings().length >= asked + 3);
    } finally {
      release();
      summary = await w.stop();
    }
    expect(summary.requests.applied).toBe(1);
    expect(w.requests.filter((o) => o.request.requestId === late.requestId)).toEqual([]);
    const store = new SqliteCheckpointer({ path: tmp.file('revoked.db') });
    try {
      expect(await store.latest(late.forkExecutionId)).toBeNull();
    } finally {
      await store.close();
    }
    const at = await call(`${plane.url}/v1/requests/${late.requestId}`, { key: operator });
    expect(at.body).toMatchObject({ state: 'open', claimedBy: null });
    // said once, by the worker and by the replica, in the plane's words naming the key
    const said = w.warnings.filter((x) => x.message.includes('run request'));
    expect(said.map((x) => x.message)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^the plane refused this worker's key, so no run request is applied .*this API key \\(${k.id}\\) was revoked`,
        ),
      ),
    ]);
    expect(said[0].fields).toMatchObject({ status: 401, code: 'PLANE_ERROR' });
    const status = JSON.parse((await readMeta(tmp.file('revoked.db'))) ?? '{}');
    expect(status).toMatchObject({ state: 'auth_failed', lastError: expect.stringContaining(`(${k.id}) was revoked`) });
  }, 120_000);
});

/** What `waymark sync status` reads of the drain in another process (the store's `drain` note). */
async function readMeta(path: string): Promise<string | null> {
  const store = new SqliteCheckpointer({ path });
  try {
    return await store.getMeta('drain');
  } finally {
    await store.close();
  }
}
