/**
 * The plane's first decision stays the one applied while a claim naming it is
 * held (its holder crashed before its local claim): a claim applying a later
 * local decision is refused ALREADY_DECIDED, also once the held claim is past
 * the release delay (it was handed the pause by the stale-claim takeover, and
 * the refund charged). Found by an adversarial audit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane } from '../../client/index.js';
import { decisionFor } from '../../client/testing/store/decisions.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-decisions-stale-');
let plane: TestPlane;
let key = '';
let approver = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite', { claimReleaseAfterMs: 300 });
  key = await plane.key('stale', ['ingest', 'read']);
  approver = await plane.key('stale', ['approve']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

describe('stale held claim of the plane decision vs a claim applying a later local decision', () => {
  it('the later local decision is never applied while the first (held, unapplied) one is the plane decision', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('a.db') });
    const replica = connectPlane(store, { url: plane.url, apiKey: key, pollMs: 0, debounceMs: 5, timeoutMs: 5000 });
    try {
      const ledger = new Ledger(tmp.file('a.jsonl'));
      const { agent } = refundAgent({ store, ledger });
      const id = `stale-${Date.now().toString(36)}`;
      const pause = (await agent.run(refundRequest('S-1', 50_000), { executionId: id })).pendingInterrupt!;
      expect((await replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
      const declined = await call(`${plane.url}/v1/executions/${id}/decision`, {
        key: approver,
        json: { checkpointId: pause.checkpointId, approved: false, comment: 'fraud' },
      });
      expect(declined.status).toBe(201);
      const P = (declined.body as { decisionId: string }).decisionId;
      // a worker on another machine wins the plane claim applying P, then crashes before its local claim
      const held = await call(`${plane.url}/v1/executions/${id}/claim`, {
        key,
        json: { checkpointId: pause.checkpointId, writerId: 'crashed-worker', decisionId: P },
      });
      expect(held.status, JSON.stringify(held.body)).toBe(200);
      // this store had not heard of P: it records its own approve
      const L = decisionFor(id, pause.checkpointId, { metadata: {}, decidedBy: 'erin' });
      expect(await store.recordDecision(L)).toEqual({ recorded: true });
      // past the release delay (300 ms): the held claim may be taken over, by a claim naming P or a resume from code, not by one naming L
      // (the claim only ages: a longer wait on a slow machine tests the same thing)
      await new Promise((r) => setTimeout(r, 600));
      const refused = await agent
        .resume(id, { approved: true }, { checkpointId: pause.checkpointId, decisionId: L.decisionId })
        .catch((e: { code?: string; details?: unknown }) => e);
      expect(refused).toMatchObject({
        code: 'ALREADY_DECIDED',
        details: { decision: { decisionId: P, state: 'claimed' } },
      });
      expect(ledger.charges()).toEqual([]);
      const run = await call(`${plane.url}/v1/executions/${id}`, { key });
      expect(run.body).toMatchObject({
        pause: { claimedBy: 'crashed-worker', decision: { decisionId: P, state: 'claimed' } },
      });
      // the decision P itself may take the stale claim over: the pause is then applied with it
      const taken = await call(`${plane.url}/v1/executions/${id}/claim`, {
        key,
        json: { checkpointId: pause.checkpointId, writerId: store.writerId, decisionId: P },
      });
      expect(taken.status, JSON.stringify(taken.body)).toBe(200);
    } finally {
      await replica.stop();
      await store.close();
    }
  });
});
