/**
 * A connected store's decision feeds: a decision worker served its writer's runs (`runs: 'mine'`) follows its
 * writer's feed (GET /v1/writer-decisions) and is served the decisions of the runs its writer touched, never
 * another machine's; one on the project's whole feed (GET /v1/decisions: the default, and what `restore: true`
 * needs) stores the others' too, and its change feed then carries the runs with a decision (`decided=true`), so
 * it forgets a decision once another machine closes its pause. A store copied under a new writer id, on the
 * default, applies a decision for a run its copy paused. `runs: 'mine'` with `restore` is refused. Against a plane without the writer decision feed (404) the
 * store follows the whole feed instead and says so once. Real plane (PGlite, HTTP), a real proxy per machine
 * (test/helpers/fault-proxy.ts) that records what each asked, SQLite files, the refund agent.
 */
import { copyFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane, type DecisionOutcome, type Replica, serveDecisions } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';

describe("a connected store's decision feeds", () => {
  const tmp = scratchDir('waymark-writer-decisions-');
  let plane: TestPlane;
  let key = '';
  let approver = '';
  const open: { store: SqliteCheckpointer; replica: Replica }[] = [];
  const proxies: FaultProxy[] = [];

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    key = await plane.key('writer-decisions', ['ingest', 'read']);
    approver = await plane.key('writer-decisions', ['read', 'approve']);
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

  /** A machine: its own store file and ledger, connected through its own proxy, its feeds read by pulls and workers only. */
  async function machine(name: string) {
    const proxy = await new FaultProxy(plane.url).start();
    proxies.push(proxy);
    const store = new SqliteCheckpointer({ path: tmp.file(`${name}.db`), writerId: name });
    const fallbacks: { feed: string; reason: string }[] = [];
    const connect = () => {
      const replica = connectPlane(store, {
        url: proxy.url,
        apiKey: key,
        pollMs: 0,
        timeoutMs: 5000,
        decisionWaitSeconds: 1,
        followChanges: false,
      });
      replica.on('feed_fallback', (f) => fallbacks.push(f));
      return replica;
    };
    const ledger = new Ledger(tmp.file(`${name}.jsonl`));
    const m = { store, replica: connect(), proxy, fallbacks, ledger, agent: refundAgent({ store, ledger }).agent };
    open.push(m);
    /** The process restarts: a new replica of the same store. */
    const reconnect = async () => {
      await m.replica.stop();
      m.replica = connect();
    };
    return Object.assign(m, { reconnect });
  }
  type Machine = Awaited<ReturnType<typeof machine>>;

  /** The feed paths `m` asked (decision feeds, or change feeds), with their queries. */
  const asked = (m: Machine, feed: RegExp) => m.proxy.seen.map((r) => r.path).filter((p) => feed.test(p.split('?')[0]));

  /** `m` pauses a refund and sends it to the plane; a person approves it there. */
  async function decidedOn(m: Machine, id: string) {
    const pause = (await m.agent.run(refundRequest(id, 50_000), { executionId: id })).pendingInterrupt!;
    expect((await m.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    const r = await call(`${plane.url}/v1/executions/${id}/decision`, {
      key: approver,
      json: { checkpointId: pause.checkpointId, approved: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  }

  /** `m`'s worker (served its writer's runs' decisions and requests, or, `runs` left out, the default) until it applied `id`'s decision; its outcomes. */
  async function applied(m: Machine, id: string, runs: 'mine' | 'default' = 'mine') {
    const seen: DecisionOutcome[] = [];
    const stop = new AbortController();
    const served = serveDecisions({
      store: m.store,
      replica: m.replica,
      ...(runs === 'mine' ? { runs } : {}),
      agent: m.agent,
      signal: stop.signal,
      pollMs: 60_000,
      onOutcome: (x) => seen.push(x),
    });
    await until(`${id} applied`, () => seen.some((x) => x.outcome === 'applied' && x.decision.executionId === id));
    stop.abort();
    await served;
    expect((await m.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    return seen;
  }

  it("a worker on its writer's runs is served its own decisions and requests only; one on the whole feed, the project's", async () => {
    const a = await machine('a-laptop');
    const b = await machine('b-laptop');
    const c = await machine('c-restorer');
    await decidedOn(a, 'run-a');
    await decidedOn(b, 'run-b');

    // each laptop's feed: its own run's decision, never the other's; a store that touched neither run is served none
    expect(await c.replica.pullDecisions('mine')).toMatchObject({ received: 0, stored: 0 });
    const seen = await applied(a, 'run-a');
    expect(seen.map((x) => [x.outcome, x.decision.executionId])).toEqual([['applied', 'run-a']]);
    expect(a.ledger.charges()).toHaveLength(1);
    expect((await a.store.listDecisions()).items.map((d) => d.executionId)).toEqual(['run-a']);
    expect(
      asked(a, /decisions$/).every((p) => p.startsWith('/v1/writer-decisions?') && p.includes('writerId=a-laptop')),
    ).toBe(true);
    expect(asked(a, /decisions$/).length).toBeGreaterThan(0);
    // and the run requests it asks for are its writer's runs' too
    const listings = asked(a, /^\/v1\/requests$/);
    expect(listings.length).toBeGreaterThan(0);
    expect(listings.every((p) => p.includes('writerId=a-laptop'))).toBe(true);
    expect(await b.replica.pullDecisions('mine')).toMatchObject({ received: 1, stored: 1 });

    // the restoring store follows the whole feed: b's pending decision (a's is applied: not stored, not its run)
    expect(await c.replica.pullDecisions('all')).toMatchObject({ received: 2, stored: 1, ignored: 1 });
    expect(asked(c, /decisions$/).at(-1)).toMatch(/^\/v1\/decisions\?/);
    // and its change feed asks for the runs with a decision: b applies its decision, c forgets it (its pause closed)
    await applied(b, 'run-b');
    expect((await c.store.listDecisions()).items.map((d) => d.executionId)).toEqual(['run-b']);
    await c.replica.pullChanges();
    expect(asked(c, /changes$/).at(-1)).toMatch(/^\/v1\/writer-changes\?.*&decided=true$/);
    expect((await c.store.listDecisions()).items).toEqual([]);
    // the cursors: the writer's feed and the whole feed each keep their own
    expect((await c.replica.pullDecisions('mine')).cursorKey).toMatch(/^decisions\.writer .* c-restorer$/);
    expect((await c.replica.pullDecisions('all')).cursorKey).toMatch(/^decisions\.cursor /);
    for (const m of [a, b, c]) expect(m.fallbacks).toEqual([]);

    // a store that followed the whole feed, restarted: its change feed asks for decided runs from its first round;
    // its writer's feed, first asked now, starts at the whole feed's cursor
    const d = await machine('d-restarted');
    const whole = await d.replica.pullDecisions('all');
    await d.reconnect();
    await d.replica.pullChanges();
    expect(asked(d, /changes$/).at(-1)).toMatch(/&decided=true$/);
    // a store that followed the whole feed before it kept that note: its writer's feed, first asked, starts at the
    // whole feed's cursor and turns the change feed's decided runs on
    await d.store.setMeta('changes.decided', 'false');
    await d.reconnect();
    await d.replica.pullDecisions('mine');
    expect(asked(d, /decisions$/).at(-1)).toMatch(new RegExp(`^/v1/writer-decisions\\?.*after=${whole.cursor}(&|$)`));
    await d.replica.pullChanges();
    expect(asked(d, /changes$/).at(-1)).toMatch(/&decided=true$/);
    // a store that never did asks for none
    await a.replica.pullChanges();
    expect(asked(a, /changes$/).at(-1)).toMatch(/&decided=false$/);
  }, 60_000);

  it('a plane without the writer decision feed (404): the whole feed is followed instead, said once', async () => {
    const a = await machine('a-older');
    a.proxy.rule = ({ path }) =>
      path.startsWith('/v1/writer-decisions')
        ? { status: 404, code: 'NOT_FOUND', message: `no route GET ${path.split('?')[0]}` }
        : undefined;
    await decidedOn(a, 'older-run');
    await applied(a, 'older-run');
    expect(a.ledger.charges()).toHaveLength(1);
    // the whole feed brings other writers' decisions: the change feed now asks for decided runs, to forget them
    await a.replica.pullChanges();
    expect(asked(a, /changes$/).at(-1)).toMatch(/&decided=true$/);
    const paths = asked(a, /decisions$/).map((p) => p.split('?')[0]);
    expect(paths.slice(0, 2)).toEqual(['/v1/writer-decisions', '/v1/decisions']);
    expect(paths.slice(1).every((p) => p === '/v1/decisions')).toBe(true);
    expect(a.fallbacks).toEqual([
      {
        feed: 'decisions',
        reason: expect.stringMatching(
          /^this plane has no writer decision feed \(GET \/v1\/writer-decisions answered 404 NOT_FOUND/,
        ),
      },
    ]);
  }, 60_000);

  it('a store copied under a new writer id, on the default (the whole feed), applies the decision of a run paused before the copy', async () => {
    const a = await machine('a-original');
    const pause = (await a.agent.run(refundRequest('copied-run', 50_000), { executionId: 'copied-run' }))
      .pendingInterrupt!;
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    await a.replica.stop();
    await a.store.close();
    open.splice(open.indexOf(a), 1);
    copyFileSync(tmp.file('a-original.db'), tmp.file('b-copy.db'));
    const b = await machine('b-copy');
    expect(b.store.writerId).toBe('b-copy');
    const r = await call(`${plane.url}/v1/executions/copied-run/decision`, {
      key: approver,
      json: { checkpointId: pause.checkpointId, approved: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    // its writer's feed has nothing of the run (the plane knows it under the old id): the whole feed does
    expect(await b.replica.pullDecisions('mine')).toMatchObject({ received: 0 });
    expect((await applied(b, 'copied-run', 'default')).map((x) => x.outcome)).toEqual(['applied']);
    expect(b.ledger.charges()).toHaveLength(1);
    // the default worker asked the whole feed and listed the project's requests
    expect(asked(b, /decisions$/).at(-1)).toMatch(/^\/v1\/decisions\?/);
    expect(asked(b, /^\/v1\/requests$/).every((p) => !p.includes('writerId='))).toBe(true);
  }, 60_000);

  it('a change page asked without decided runs while the store began to keep others’ decisions is asked again with them', async () => {
    const m = await machine('e-switching');
    // the plane's answer to the first change page is held (served before the switch, arriving after it)
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    let first = true;
    m.proxy.rule = ({ path }) => {
      if (!path.startsWith('/v1/writer-changes') || !first) return undefined;
      first = false;
      return { holdAnswer: held };
    };
    const pulled = m.replica.pullChanges();
    await until('the first change page was asked', () => asked(m, /changes$/).length === 1);
    await m.replica.pullDecisions('all');
    release();
    await pulled;
    const pages = asked(m, /changes$/);
    expect(pages).toHaveLength(2);
    expect(pages[0]).toMatch(/&decided=false$/);
    expect(pages[1]).toBe(pages[0].replace(/decided=false$/, 'decided=true'));
  }, 60_000);

  it("options: runs is 'all' or 'mine', and 'mine' cannot serve restore; nothing is started", async () => {
    const m = await machine('options');
    const signal = AbortSignal.timeout(1000);
    const base = { store: m.store, replica: m.replica, agent: m.agent, signal };
    // every problem named at once
    const both = serveDecisions({ ...base, runs: 'everyone' as never, restore: 'yes' as never });
    await expect(both).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringContaining('runs') });
    await expect(both).rejects.toMatchObject({ message: expect.stringContaining('restore') });
    await expect(serveDecisions({ ...base, replica: undefined, runs: 'mine' })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: expect.stringContaining("runs: 'mine' needs a replica"),
    });
    // the replica's own calls check it the same way
    expect(() => m.replica.followDecisions('Mine' as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS' }),
    );
    await expect(m.replica.pullDecisions('Mine' as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(() => m.replica.openRequests(null, 10, 'x' as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS' }),
    );
    await expect(serveDecisions({ ...base, runs: 'mine', restore: true })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: expect.stringContaining("runs: 'mine' cannot serve restore"),
    });
    expect(m.proxy.seen.filter((x) => /decisions|requests/.test(x.path))).toEqual([]);
  });

  it('bad input is refused: no writer, the plane’s own writer id, a writer given twice, a bad cursor', async () => {
    for (const q of ['', '?writerId=', '?writerId=plane', '?writerId=a&writerId=b', '?writerId=a&after=x']) {
      const r = await call(`${plane.url}/v1/writer-decisions${q}`, { key });
      expect([r.status, r.body?.error?.code], q).toEqual([400, expect.any(String)]);
    }
    const r = await call(`${plane.url}/v1/writer-changes?writerId=a&decided=yes`, { key });
    expect(r.status).toBe(400);
  });
});
