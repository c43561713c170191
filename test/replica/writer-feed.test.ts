/**
 * A connected store follows its writer's change feed (GET /v1/writer-changes):
 * a store that restored another machine's run hears of that run's changes
 * and catches up, though it never wrote a row of it; and against a plane
 * without the writer feed (an older one: the route answers 404 NOT_FOUND, as
 * the plane's router answers a route it lacks) the store falls back to the
 * whole project's feed, says so once (`feed_fallback`), and still catches
 * up. Real plane (PGlite, HTTP), a real proxy in front of it
 * (test/helpers/fault-proxy.ts), SQLite files, the refund agent.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane, type Replica, type RunUpdate } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

describe("a connected store's writer feed", () => {
  const tmp = scratchDir('waymark-writer-feed-');
  let plane: TestPlane;
  let key = '';
  const open: { store: SqliteCheckpointer; replica: Replica }[] = [];
  const proxies: FaultProxy[] = [];

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    key = await plane.key('writer-feed', ['ingest', 'read']);
  });
  afterEach(async () => {
    for (const m of open.splice(0)) {
      await m.replica.stop();
      await m.store.close();
    }
    for (const p of proxies.splice(0)) await p.close();
  });
  afterAll(async () => {
    await plane?.close();
    tmp.cleanup();
  });

  /** A machine: its own store file, connected to the plane through its own proxy, not following (pullChanges does). */
  async function machine(name: string) {
    const proxy = await new FaultProxy(plane.url).start();
    proxies.push(proxy);
    const store = new SqliteCheckpointer({ path: tmp.file(`${name}.db`), writerId: name });
    const replica = connectPlane(store, {
      url: proxy.url,
      apiKey: key,
      pollMs: 0,
      timeoutMs: 5000,
      followChanges: false,
    });
    const updates: RunUpdate[] = [];
    const fallbacks: { feed: string; reason: string }[] = [];
    replica.on('run_updated', (u) => updates.push(u));
    replica.on('feed_fallback', (f) => fallbacks.push(f));
    const m = { store, replica, proxy, updates, fallbacks };
    open.push(m);
    return m;
  }

  /** A pauses the refund and syncs it; B restores it through its replica (naming B at the plane); B finishes it. */
  async function finishedByAfterRestore(id: string, a: Awaited<ReturnType<typeof machine>>, b: typeof a) {
    const ledger = new Ledger(tmp.file(`${id}.jsonl`));
    expect(
      await refundAgent({ store: a.store, ledger }).agent.run(refundRequest(id, 50_000), { executionId: id }),
    ).toMatchObject({ status: 'paused' });
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    await b.replica.restore(id);
    return { ledger, agentB: refundAgent({ store: b.store, ledger }).agent };
  }

  it('a store that restored a run it never wrote hears of its changes and catches up', async () => {
    const id = 'restored-then-changed';
    const a = await machine('a-owner');
    const b = await machine('b-restorer');
    // B restores A's paused run; then A resumes it and finishes: B, which wrote nothing of it, must hear of it
    const ledger = new Ledger(tmp.file(`${id}.jsonl`));
    const agentA = refundAgent({ store: a.store, ledger }).agent;
    expect(await agentA.run(refundRequest(id, 50_000), { executionId: id })).toMatchObject({ status: 'paused' });
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    await b.replica.restore(id);
    expect((await b.replica.pullChanges()).updates).toEqual([]);
    expect(await agentA.resume(id, { approved: true, metadata: {} })).toMatchObject({ status: 'completed' });
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);

    const pulled = await b.replica.pullChanges();
    expect(pulled.updates).toEqual([
      expect.objectContaining({ executionId: id, outcome: 'caught_up', status: 'completed', by: 'a-owner' }),
    ]);
    expect((await b.store.latest(id))?.seq).toBe((await a.store.latest(id))?.seq);
    // it asked its writer's feed, never the whole project's
    const feeds = b.proxy.seen.map((r) => r.path.split('?')[0]).filter((p) => p.endsWith('changes'));
    expect(new Set(feeds)).toEqual(new Set(['/v1/writer-changes']));
    expect(b.fallbacks).toEqual([]);
  }, 60_000);

  it('a plane without the writer feed (404): the whole project feed is followed instead, said once; catch-up still works', async () => {
    const id = 'older-plane';
    const a = await machine('a-older');
    const b = await machine('b-older');
    for (const m of [a, b])
      m.proxy.rule = ({ path }) =>
        path.startsWith('/v1/writer-changes')
          ? { status: 404, code: 'NOT_FOUND', message: `no route GET ${path.split('?')[0]}` }
          : undefined;
    const { ledger, agentB } = await finishedByAfterRestore(id, a, b);
    await a.replica.pullChanges();
    expect(await agentB.resume(id, { approved: true, metadata: {} })).toMatchObject({ status: 'completed' });
    expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    const pulled = await a.replica.pullChanges();
    expect(pulled.updates).toEqual([
      expect.objectContaining({ executionId: id, outcome: 'caught_up', status: 'completed', by: 'b-older' }),
    ]);
    await a.replica.pullChanges();
    expect(ledger.charges()).toHaveLength(1);
    // asked once, answered 404; the whole feed from then on, and said once
    const asked = a.proxy.seen.map((r) => r.path.split('?')[0]).filter((p) => p.endsWith('changes'));
    expect(asked).toEqual(['/v1/writer-changes', '/v1/changes', '/v1/changes', '/v1/changes']);
    expect(a.fallbacks).toEqual([
      {
        feed: 'changes',
        reason: expect.stringMatching(
          /^this plane has no writer feed \(GET \/v1\/writer-changes answered 404 NOT_FOUND/,
        ),
      },
    ]);
  }, 60_000);
});
