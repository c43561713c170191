/**
 * Issue 16 with a real plane (PGlite, HTTP on 127.0.0.1): a decision
 * recorded in a connected store drains to the plane as `decision_recorded`,
 * and the worker applies it through the plane claim first (the claim names
 * the decision), then the local claim; the plane shows it applied.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane, serveDecisions, type Agent, type DecisionOutcome } from '../../client/index.js';
import { decisionFor } from '../../client/testing/store/decisions.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-decisions-plane-');
let plane: TestPlane;
let key = '';
let approver = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('decisions', ['ingest', 'read']);
  approver = await plane.key('decisions', ['approve']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

/** A decision worker on `store` (no replica: it does not follow the feed) until an outcome satisfies `last`; the outcomes, in order. */
async function serveUntil(
  agent: Agent,
  store: SqliteCheckpointer,
  last: (o: DecisionOutcome) => boolean,
): Promise<DecisionOutcome[]> {
  const seen: DecisionOutcome[] = [];
  const stop = new AbortController();
  // a bound on a hang only: the outcomes are asserted by the caller
  const timer = setTimeout(() => stop.abort(), 30_000);
  await serveDecisions({
    agent,
    store,
    signal: stop.signal,
    pollMs: 50,
    onOutcome: (o) => {
      seen.push(o);
      if (last(o)) stop.abort();
    },
  });
  clearTimeout(timer);
  return seen;
}

describe('decisions through a plane', () => {
  it('a local decision drains to the plane as decision_recorded; a connected worker applies it with the plane claim naming it; one charge', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('laptop.db') });
    const replica = connectPlane(store, {
      url: plane.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      timeoutMs: 5000,
      decisionWaitSeconds: 1,
    });
    const claims: { decisionId?: string }[] = [];
    const guard = store.planeGuard.current!;
    // watch what the guard is asked (the plane's own record of the claim's decision is the dplane side's to show)
    store.planeGuard.install({
      ...guard,
      claim: async (p) => (claims.push({ decisionId: p.decisionId }), guard.claim(p)),
    });
    try {
      const ledger = new Ledger(tmp.file('laptop.jsonl'));
      const { agent } = refundAgent({ store, ledger });
      const id = `plane-${Date.now().toString(36)}`;
      const pause = (await agent.run(refundRequest('P-1', 9000), { executionId: id })).pendingInterrupt!;
      const d = decisionFor(id, pause.checkpointId, { metadata: { comment: 'ok' }, decidedBy: 'laptop user' });
      expect(await store.recordDecision(d)).toEqual({ recorded: true });
      const flushed = await replica.flush({ timeoutMs: 10_000 });
      expect(flushed.pendingRows).toBe(0);
      expect(flushed.quarantinedCount).toBe(0);
      const seen = await serveUntil(agent, store, () => true);
      expect(seen.map((o) => o.outcome)).toEqual(['applied']);
      expect(claims).toEqual([{ decisionId: d.decisionId }]);
      expect(ledger.charges()).toHaveLength(1);
      expect(await store.getDecision(id, pause.checkpointId)).toMatchObject({
        state: 'applied',
        appliedBy: store.writerId,
      });
      const after = await replica.flush({ timeoutMs: 10_000 });
      expect(after).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
      // the plane holds the local decision, applied by this writer (its claim and its interrupt_claimed name it)
      const feed = await call(`${plane.url}/v1/decisions?after=0&limit=1000`, { key });
      expect(feed.status).toBe(200);
      expect((feed.body as { items: unknown[] }).items).toContainEqual(
        expect.objectContaining({
          decisionId: d.decisionId,
          source: 'local',
          state: 'applied',
          appliedBy: store.writerId,
        }),
      );
      // the inspector's decisions table says the name was given in a local store, not by a key of this plane
      const login = await fetch(`${plane.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams({ key, next: '/approvals' }),
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0];
      const html = await (await fetch(`${plane.url}/approvals`, { headers: { cookie } })).text();
      const row = html.slice(html.indexOf(`data-decision="${d.decisionId}"`));
      expect(row.slice(0, row.indexOf('</tr>'))).toContain('laptop user<span class="muted"> (in a local store)</span>');
    } finally {
      await replica.stop();
      await store.close();
    }
  });

  it('a decline recorded on the plane first wins over an approve recorded later in a store that had not heard of it: the plane refuses the claim naming its decision, the worker applies the decline; nothing charged', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('second.db') });
    const replica = connectPlane(store, {
      url: plane.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      timeoutMs: 5000,
      decisionWaitSeconds: 1,
    });
    try {
      const ledger = new Ledger(tmp.file('second.jsonl'));
      const { agent } = refundAgent({ store, ledger });
      const id = `first-${Date.now().toString(36)}`;
      const pause = (await agent.run(refundRequest('P-2', 5000), { executionId: id })).pendingInterrupt!;
      expect((await replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
      const declined = await call(`${plane.url}/v1/executions/${id}/decision`, {
        key: approver,
        json: { checkpointId: pause.checkpointId, approved: false, comment: 'fraud' },
      });
      expect(declined.status, JSON.stringify(declined.body)).toBe(201);
      const planeDecisionId = (declined.body as { decisionId: string }).decisionId;
      // recorded here before the plane's decision reached this store (the worker below follows the feed only once it runs)
      const mine = decisionFor(id, pause.checkpointId, { metadata: {}, decidedBy: 'erin' });
      expect(await store.recordDecision(mine)).toEqual({ recorded: true });
      // a resume applying it is refused by the plane, naming the first decision; nothing claimed, nothing charged
      const refused = await agent
        .resume(id, { approved: true }, { checkpointId: pause.checkpointId, decisionId: mine.decisionId })
        .catch((e: { code?: string; details?: unknown }) => e);
      expect(refused).toMatchObject({
        code: 'ALREADY_DECIDED',
        details: { decision: { decisionId: planeDecisionId, approved: false } },
      });
      expect(await store.getPendingInterrupt(id)).toMatchObject({ checkpointId: pause.checkpointId });
      // no `replica`: the worker does not follow the feed, so it meets the refusal (the feed's path is the next test)
      const seen = await serveUntil(agent, store, (o) => o.outcome === 'applied');
      expect(seen.map((o) => [o.outcome, o.decision.decisionId])).toEqual([
        ['superseded', mine.decisionId],
        ['applied', planeDecisionId],
      ]);
      expect(seen[0]).toMatchObject({ code: 'ALREADY_DECIDED' });
      expect(ledger.charges()).toEqual([]);
      expect(await store.getDecision(id, pause.checkpointId)).toMatchObject({
        decisionId: planeDecisionId,
        approved: false,
        state: 'applied',
        source: 'plane',
      });
      expect((await replica.flush({ timeoutMs: 10_000 })).quarantinedCount).toBe(0);
      const run = await call(`${plane.url}/v1/executions/${id}`, { key });
      expect(run.body).toMatchObject({
        pause: { decision: { decisionId: planeDecisionId, state: 'applied', appliedBy: store.writerId } },
      });
    } finally {
      await replica.stop();
      await store.close();
    }
  });

  it("the decision feed brings the plane's first decision into a store holding a later local one for the pause: it takes that one's place (not once the pause is claimed here)", async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('feed-first.db') });
    const replica = connectPlane(store, { url: plane.url, apiKey: key, pollMs: 0, debounceMs: 5, timeoutMs: 5000 });
    try {
      const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file('feed-first.jsonl')) });
      const ids = [`feed-a-${Date.now().toString(36)}`, `feed-b-${Date.now().toString(36)}`];
      const pauses: { checkpointId: string }[] = [];
      for (const id of ids)
        pauses.push((await agent.run(refundRequest(id, 5000), { executionId: id })).pendingInterrupt!);
      expect((await replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
      const planeIds: string[] = [];
      for (const [i, id] of ids.entries()) {
        const r = await call(`${plane.url}/v1/executions/${id}/decision`, {
          key: approver,
          json: { checkpointId: pauses[i].checkpointId, approved: false },
        });
        expect(r.status).toBe(201);
        planeIds.push((r.body as { decisionId: string }).decisionId);
      }
      const local = (i: number) => decisionFor(ids[i], pauses[i].checkpointId, { metadata: {}, decidedBy: 'erin' });
      const mine = [local(0), local(1)];
      for (const d of mine) expect(await store.recordDecision(d)).toEqual({ recorded: true });
      // the second pause is answered here (offline from the plane's point of view) before the feed arrives: its local decision stays
      const connected = store.planeGuard.current!;
      store.planeGuard.install({ claim: async () => {}, takeover: async () => {} });
      await agent.resume(
        ids[1],
        { approved: true },
        { checkpointId: pauses[1].checkpointId, decisionId: mine[1].decisionId },
      );
      store.planeGuard.install(connected);
      const pulled = await replica.pullDecisions();
      expect(pulled).toMatchObject({ stored: 1 });
      expect(await store.getDecision(ids[0], pauses[0].checkpointId)).toMatchObject({
        decisionId: planeIds[0],
        source: 'plane',
        state: 'pending',
      });
      expect(await store.getDecision(ids[1], pauses[1].checkpointId)).toMatchObject({
        decisionId: mine[1].decisionId,
        source: 'local',
        state: 'applied',
      });
    } finally {
      await replica.stop();
      await store.close();
    }
  });
});
