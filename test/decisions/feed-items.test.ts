/**
 * The decision feed against a plane that sends what it should not: a real HTTP server on 127.0.0.1 answers the feed's calls with
 * pages this test writes, so one malformed decision or one for another
 * project can be put in a page. A bad item is skipped and reported; the
 * cursor moves past it; the good ones are stored. Real SQLite store.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connectPlane, uuidv7, type Replica } from '../../client/index.js';
import type { SkippedDecision } from '../../client/replica/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-decisions-items-');
afterAll(() => tmp.cleanup());
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

interface FakePlane {
  url: string;
  /** The `after` of each feed request, in order. */
  asked: (string | null)[];
  /** Pages answered in order, keyed by the `after` asked with ('' for none). */
  pages: Map<string, { items: unknown[]; nextCursor: string }>;
  project: string;
}

async function fakePlane(project = 'proj-a'): Promise<FakePlane> {
  const f: FakePlane = { url: '', asked: [], pages: new Map(), project };
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (u.pathname === '/v1/whoami') {
      res.end(
        JSON.stringify({ project: f.project, keyId: 'k1', scopes: ['ingest'], serverTime: new Date().toISOString() }),
      );
      return;
    }
    if (u.pathname === '/v1/decisions') {
      const after = u.searchParams.get('after');
      f.asked.push(after);
      res.end(JSON.stringify(f.pages.get(after ?? '') ?? { items: [], nextCursor: after ?? '0' }));
      return;
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ error: { code: 'NOT_FOUND', message: u.pathname } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  f.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return f;
}

function view(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    decisionId: uuidv7(),
    executionId: `exec-${uuidv7()}`,
    checkpointId: uuidv7(),
    approved: true,
    metadata: {},
    decidedBy: 'manager',
    source: 'plane',
    decidedAt: new Date().toISOString(),
    state: 'pending',
    appliedBy: null,
    appliedAt: null,
    feedSeq: 1,
    ...over,
  };
}

function laptop(url: string, name: string): { store: SqliteCheckpointer; replica: Replica } {
  const store = new SqliteCheckpointer({ path: tmp.file(`${name}.db`) });
  const replica = connectPlane(store, {
    url,
    apiKey: 'wm_test',
    pollMs: 0,
    debounceMs: 5,
    timeoutMs: 5000,
    decisionWaitSeconds: 1,
  });
  cleanup.push(async () => {
    await replica.stop();
    await store.close();
  });
  return { store, replica };
}

describe('decision feed items', () => {
  it('a malformed decision in a page is skipped and reported (decision_skipped, with its id); the good ones are stored; the cursor moves past it', async () => {
    const plane = await fakePlane();
    const bad = view({ approved: 'yes', feedSeq: 1 });
    const good = view({ feedSeq: 2 });
    plane.pages.set('', { items: [bad, good], nextCursor: '2' });
    const { store, replica } = laptop(plane.url, 'poison');
    const skipped: SkippedDecision[] = [];
    replica.on('decision_skipped', (s) => skipped.push(s));
    const r = await replica.pullDecisions();
    expect(r).toMatchObject({ received: 2, stored: 1, skipped: 1, cursor: '2' });
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ decisionId: bad.decisionId, executionId: bad.executionId });
    expect(skipped[0]!.reason).toContain('approved');
    expect(await store.getDecision(good.executionId as string, good.checkpointId as string)).toMatchObject({
      decisionId: good.decisionId,
    });
    expect(await store.getDecision(bad.executionId as string, bad.checkpointId as string)).toBeNull();
    // the next round asks after the page: the bad item is not read again
    await replica.pullDecisions();
    expect(plane.asked).toEqual([null, '2']);
  });

  it('the cursor is kept per plane and project: a store moved to another project (or plane) reads that feed from its start, skipping nothing', async () => {
    const plane = await fakePlane('proj-a');
    const first = view({ feedSeq: 900 });
    plane.pages.set('', { items: [first], nextCursor: '900' });
    const path = 'moved';
    const a = laptop(plane.url, path);
    const r1 = await a.replica.pullDecisions();
    expect(r1).toMatchObject({ stored: 1, cursor: '900' });
    await a.replica.stop();
    // the same store, now for another project on that plane: its feed is at 3, far below 900
    plane.project = 'proj-b';
    const other = view({ feedSeq: 3 });
    plane.pages.set('', { items: [other], nextCursor: '3' });
    const b = laptop(plane.url, path);
    const r2 = await b.replica.pullDecisions();
    expect(r2).toMatchObject({ received: 1, stored: 1, cursor: '3' });
    expect(r2.cursorKey).not.toBe(r1.cursorKey);
    expect(plane.asked).toEqual([null, null]);
    expect(await b.store.getDecision(other.executionId as string, other.checkpointId as string)).toMatchObject({
      decisionId: other.decisionId,
    });
    // another plane URL for the first project: its own cursor too
    const second = await fakePlane('proj-a');
    const c = laptop(second.url, path);
    expect((await c.replica.pullDecisions()).cursorKey).not.toBe(r1.cursorKey);
    expect(second.asked).toEqual([null]);
    // back on the first project: its cursor was kept
    plane.project = 'proj-a';
    await b.replica.stop();
    const a2 = laptop(plane.url, path);
    await a2.replica.pullDecisions();
    expect(plane.asked.at(-1)).toBe('900');
  });

  it('decisions already applied or superseded on the plane are stored only for runs this store holds; pending ones always', async () => {
    const plane = await fakePlane();
    const { store, replica } = laptop(plane.url, 'states');
    const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file('states.jsonl')) });
    const mine = `states-${uuidv7()}`;
    const pause = (await agent.run(refundRequest(mine, 5000), { executionId: mine })).pendingInterrupt!;
    const appliedElsewhere = view({
      state: 'applied',
      appliedBy: 'other-machine',
      appliedAt: new Date().toISOString(),
      feedSeq: 1,
    });
    const supersededElsewhere = view({ state: 'superseded', feedSeq: 2 });
    const pendingElsewhere = view({ state: 'pending', feedSeq: 3 });
    const appliedMine = view({
      executionId: mine,
      checkpointId: pause.checkpointId,
      state: 'applied',
      appliedBy: 'other-machine',
      appliedAt: new Date().toISOString(),
      feedSeq: 4,
    });
    plane.pages.set('', {
      items: [appliedElsewhere, supersededElsewhere, pendingElsewhere, appliedMine],
      nextCursor: '4',
    });
    expect(await replica.pullDecisions()).toMatchObject({ received: 4, stored: 2, ignored: 2, cursor: '4' });
    expect((await store.listDecisions({})).items.map((d) => d.decisionId).sort()).toEqual(
      [pendingElsewhere.decisionId, appliedMine.decisionId].sort(),
    );
  });
});
