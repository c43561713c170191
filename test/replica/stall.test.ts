/**
 * A plane whose answer to the drain stalls: held after the plane committed,
 * cut off mid-body and left open, or trickled a byte at a time. Through a
 * proxy (test/helpers/stall-proxy.ts) in front of a real plane (PGlite) on
 * 127.0.0.1. The drain must give the request up at its own deadline (a small
 * `timeoutMs` here), mark nothing synced, retry on its own, and once the
 * plane answers again every row is on the plane exactly once and a refused
 * row is quarantined once, on both sides.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectPlane, type Replica, type RoundOutcome } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, releaseHold, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';
import { StallProxy, type StallMode } from '../helpers/stall-proxy.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-stall-');
/** The drain's request timeout in these tests: every bound below is a multiple of it, with room for a loaded machine. */
const TIMEOUT_MS = 1000;
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('stall', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

const get = (path: string) => call(`${plane.url}${path}`, { key });

async function planeRowIds(executionId: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const r = await get(`/v1/executions/${executionId}/rows?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
    if (r.status === 404) return ids;
    ids.push(...r.body.items.map((x: { id: string }) => x.id));
    cursor = r.body.nextCursor;
  } while (cursor);
  return ids;
}

/** The next round's outcome, or a failure naming what never happened within `ms`. */
function nextRound(r: Replica, ms: number): Promise<RoundOutcome> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      r.off('round', done);
      reject(new Error(`no drain round ended within ${ms} ms: the drain is still waiting on the stalled answer`));
    }, ms);
    function done(o: RoundOutcome) {
      clearTimeout(t);
      resolve(o);
    }
    r.once('round', done);
  });
}

let n = 0;
describe('a plane that stalls its answer to the drain', () => {
  let store: SqliteCheckpointer;
  let proxy: StallProxy;
  let replica: Replica | null = null;
  beforeEach(async () => {
    n++;
    store = new SqliteCheckpointer({ path: tmp.file(`s${n}.db`), writerId: `stall-writer-${n}` });
    proxy = await new StallProxy(plane.url, TIMEOUT_MS / 4).start();
  });
  afterEach(async () => {
    // the proxy first: a drain still waiting on a stalled answer (a test that failed) then sees its connection end
    await proxy.close();
    await replica?.stop();
    replica = null;
    await store.close();
  });
  const connect = () =>
    (replica = connectPlane(store, {
      url: proxy.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      backoffBaseMs: 20,
      backoffCapMs: 200,
      timeoutMs: TIMEOUT_MS,
      followChanges: false,
    }));

  const modes: [StallMode, string][] = [
    ['hold', 'held after the plane committed'],
    ['stall-mid-body', 'stopped halfway through its body, the connection left open'],
    ['trickle', 'trickled a byte at a time, never going quiet for a whole timeout'],
  ];
  for (const [mode, what] of modes) {
    it(`an ingest answer ${what}: the drain gives up at its deadline, marks nothing synced, retries, and every row lands once, the refused one quarantined once`, async () => {
      const exec = `stall-${mode}-${n}`;
      const clash = `clash-${mode}-${n}`;
      // another writer's row holds seq 0 of `clash` on the plane: ours is refused there (seq_conflict), every time it is sent
      const theirs = await eventsOf(
        async (s) => void (await s.put(step(clash, 0, { nodeOutput: 'theirs' }))),
        `other-${n}`,
      );
      expect(
        (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: `other-${n}`, rows: theirs } }))
          .body.accepted,
      ).toBe(1);
      // it no longer holds the run (a writer holding it would have ours refused as taken over, not by seq)
      await releaseHold(plane.url, key, clash, `other-${n}`);
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push((await store.put(step(exec, i))).id);
      await store.put(step(clash, 0, { nodeOutput: 'ours' }));

      let stalling = true;
      proxy.rule = ({ path }) => (stalling && path === '/v1/ingest' ? mode : undefined);
      const r = connect();
      const first = await nextRound(r, 30 * TIMEOUT_MS);
      expect(first.kind).toBe('retry');
      const during = await r.status();
      expect(during).toMatchObject({ state: 'backoff', pendingRows: 11, quarantinedCount: 0 });
      expect(during.lastError).toMatch(/timeout|network/i);
      // the plane had committed that very batch: only its answer was lost on the way
      expect(proxy.to('/v1/ingest')[0]).toMatchObject({ mode, planeStatus: 200 });
      expect(await planeRowIds(exec)).toEqual(ids);

      stalling = false;
      const s = await r.flush({ timeoutMs: 60_000 });
      expect(s).toMatchObject({ pendingRows: 0, quarantinedCount: 1 });
      expect(s.lastQuarantineReason).toContain('seq_conflict');
      expect(await planeRowIds(exec)).toEqual(ids);
      expect((await get(`/v1/executions/${exec}`)).body.execution).toMatchObject({ rowCount: 10, lastSeq: 9 });
      // the refused row was sent at least twice; the plane keeps one record of it and counts it once
      expect(proxy.to('/v1/ingest').length).toBeGreaterThanOrEqual(2);
      const q = (await get(`/v1/quarantine?executionId=${clash}`)).body.items;
      expect(q.map((x: { writerId: string; code: string }) => [x.writerId, x.code])).toEqual([
        [store.writerId, 'seq_conflict'],
      ]);
      const w = (await get('/v1/writers')).body.items.find((x: { writerId: string }) => x.writerId === store.writerId);
      expect(w).toMatchObject({ rowsAcked: 10, rowsRejected: 1 });
    });
  }

  it('stop() while an answer trickles returns once the request deadline passes, and leaves nothing open', async () => {
    // ten rows: an answer of about 1 KB, which the trickle takes minutes to deliver
    for (let i = 0; i < 10; i++) await store.put(step(`trickle-stop-${n}`, i));
    proxy.rule = ({ path }) => (path === '/v1/ingest' ? 'trickle' : undefined);
    const r = connect();
    const deadline = Date.now() + 30 * TIMEOUT_MS;
    while (!proxy.to('/v1/ingest').length && Date.now() < deadline) await new Promise((x) => setTimeout(x, 20));
    expect(proxy.to('/v1/ingest').length).toBe(1);
    const stopped = await Promise.race([
      r.stop().then(() => 'stopped'),
      new Promise((x) => setTimeout(() => x('still waiting on the trickle'), 30 * TIMEOUT_MS)),
    ]);
    expect(stopped).toBe('stopped');
    expect(r.handles).toEqual({
      retryTimer: false,
      pollTimer: false,
      roundInFlight: false,
      socketsOpen: false,
      followingChanges: false,
    });
    // stopped on its own deadline, not because the answer had arrived in the end
    expect((await store.outboxStats()).pendingCount).toBe(10);
    replica = null;
  });
});
