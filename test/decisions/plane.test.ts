/**
 * Issue 16 with a real plane (PGlite, HTTP on 127.0.0.1): a decision
 * recorded in a connected store drains to the plane as `decision_recorded`,
 * and the worker applies it through the plane claim first (the claim names
 * the decision), then the local claim; the plane shows it applied.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane, serveDecisions, uuidv7, type Decision, type DecisionOutcome } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-decisions-plane-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('decisions', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

describe('decisions through a plane', () => {
  it('a local decision drains to the plane as decision_recorded; a connected worker applies it with the plane claim naming it; one charge', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('laptop.db') });
    const replica = connectPlane(store, { url: plane.url, apiKey: key, pollMs: 0, debounceMs: 5, timeoutMs: 5000, decisionWaitSeconds: 1 });
    const claims: { decisionId?: string }[] = [];
    const guard = store.planeGuard.current!;
    // watch what the guard is asked (the plane's own record of the claim's decision is the dplane side's to show)
    store.planeGuard.install({ ...guard, claim: async (p) => (claims.push({ decisionId: p.decisionId }), guard.claim(p)) });
    try {
      const ledger = new Ledger(tmp.file('laptop.jsonl'));
      const { agent } = refundAgent({ store, ledger });
      const id = `plane-${Date.now().toString(36)}`;
      const pause = (await agent.run(refundRequest('P-1', 9000), { executionId: id })).pendingInterrupt!;
      const d: Decision = {
        decisionId: uuidv7(),
        executionId: id,
        checkpointId: pause.checkpointId,
        approved: true,
        metadata: { comment: 'ok' },
        decidedBy: 'laptop user',
        source: 'local',
        decidedAt: new Date().toISOString(),
      };
      expect(await store.recordDecision(d)).toEqual({ recorded: true });
      const flushed = await replica.flush({ timeoutMs: 10_000 });
      expect(flushed.pendingRows).toBe(0);
      expect(flushed.quarantinedCount).toBe(0);
      const seen: DecisionOutcome[] = [];
      const stop = new AbortController();
      const timer = setTimeout(() => stop.abort(), 20_000);
      await serveDecisions({
        agent,
        store,
        signal: stop.signal,
        pollMs: 50,
        onOutcome: (o) => {
          seen.push(o);
          stop.abort();
        },
      });
      clearTimeout(timer);
      expect(seen.map((o) => o.outcome)).toEqual(['applied']);
      expect(claims).toEqual([{ decisionId: d.decisionId }]);
      expect(ledger.charges()).toHaveLength(1);
      expect(await store.getDecision(id, pause.checkpointId)).toMatchObject({ state: 'applied', appliedBy: store.writerId });
      const after = await replica.flush({ timeoutMs: 10_000 });
      expect(after).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
      // the plane holds the local decision, applied by this writer (its claim and its interrupt_claimed name it)
      const feed = await call(`${plane.url}/v1/decisions?after=0&limit=1000`, { key });
      expect(feed.status).toBe(200);
      expect((feed.body as { items: unknown[] }).items).toContainEqual(expect.objectContaining({ decisionId: d.decisionId, source: 'local', state: 'applied', appliedBy: store.writerId }));
    } finally {
      await replica.stop();
      await store.close();
    }
  });
});
