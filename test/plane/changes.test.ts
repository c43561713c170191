/**
 * The plane's change feed (GET /v1/changes, plane/changes.ts): one entry per
 * run at its newest change seq, where it stands now; paged by cursor; a
 * deletion as a tombstone before a run started again under the same id; a
 * claim and a release are changes; the long poll answers when a run changes
 * (in this process at once, from another plane process within about a
 * second); bad input refused. On Postgres, concurrent ingests commit their
 * seqs in order: a follower that pages through never skips a run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import { changeFeed, waitForChanges } from '../../plane/changes.js';
import { ingestBatch } from '../../plane/ingest.js';
import { ChangeFeed } from '../../shared/protocol.js';
import { call, releaseHold, openTestPlaneDatabase, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { FEED_RECHECK_MS, waitersOf } from '../../plane/long-poll.js';
import { until } from '../helpers/until.js';

const pg = await pgReady('change feed on postgres');

describe('the change feed over HTTP (PGlite)', () => {
  let plane: TestPlane;
  let key = '';
  const ingest = async (writerId: string, build: Parameters<typeof eventsOf>[0]) => {
    const rows = await eventsOf(build, writerId);
    const r = await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId, rows } });
    expect(r.body.accepted, JSON.stringify(r.body)).toBe(rows.length);
  };
  const feed = async (q = '') => {
    const r = await call(`${plane.url}/v1/changes${q}`, { key });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return ChangeFeed.parse(r.body);
  };

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    key = await plane.key('changes', ['ingest', 'read']);
  });
  afterAll(async () => plane?.close());

  it('one entry per run, oldest change first, where it stands now; paged by cursor; a later change moves the run to the end', async () => {
    await ingest('w1', async (s) => {
      await s.put(step('x', 0));
      await s.put(step('x', 1));
      await s.put(step('y', 0));
    });
    const all = await feed();
    expect(all.items.map((i) => [i.executionId, i.lastSeq, i.status, i.lastWriterId, i.deleted])).toEqual([
      ['x', 1, 'running', 'w1', false],
      ['y', 0, 'running', 'w1', false],
    ]);
    expect(all.items[0].changeSeq).toBeLessThan(all.items[1].changeSeq);
    expect(all.nextCursor).toBe(String(all.items[1].changeSeq));

    const first = await feed('?limit=1');
    expect(first.items.map((i) => i.executionId)).toEqual(['x']);
    const second = await feed(`?limit=1&after=${first.nextCursor}`);
    expect(second.items.map((i) => i.executionId)).toEqual(['y']);
    const none = await feed(`?after=${second.nextCursor}`);
    expect(none).toEqual({ items: [], nextCursor: second.nextCursor });

    // another writer extends x (w1 gave its hold up): it restored the plane's rows (synced, not queued) and wrote seq 2
    await releaseHold(plane.url, key, 'x', 'w1');
    const restored = (await call(`${plane.url}/v1/executions/x/restore`, { key })).body;
    await ingest('w2', async (s) => {
      await s.importRows({ checkpoints: restored.rows, pending: null, idempotency: [] });
      await s.put(step('x', 2));
    });
    const after = await feed(`?after=${second.nextCursor}`);
    expect(after.items.map((i) => [i.executionId, i.lastSeq, i.lastWriterId])).toEqual([['x', 2, 'w2']]);
    const fromStart = await feed();
    expect(fromStart.items.map((i) => i.executionId)).toEqual(['y', 'x']);
  });

  it('a pause, its claim and its release are changes; the pause state and the holder are shown', async () => {
    let checkpointId = '';
    await ingest('w1', async (s) => {
      checkpointId = (await s.recordInterrupt(pause('z'), { reason: 'approve', context: null })).checkpoint.id;
    });
    const cursor = (await feed()).nextCursor;
    const before = (await feed()).items.find((i) => i.executionId === 'z')!;
    expect(before).toMatchObject({
      status: 'paused',
      pauseState: 'open',
      pauseCheckpointId: checkpointId,
      claimedBy: null,
    });

    expect(
      (await call(`${plane.url}/v1/executions/z/claim`, { key, json: { checkpointId, writerId: 'w9' } })).status,
    ).toBe(200);
    const claimed = await feed(`?after=${cursor}`);
    expect(claimed.items).toEqual([
      expect.objectContaining({
        executionId: 'z',
        status: 'running',
        pauseState: 'claimed',
        claimedBy: 'w9',
        lastWriterId: 'w1',
      }),
    ]);

    expect(
      (await call(`${plane.url}/v1/executions/z/claim/release`, { key, json: { checkpointId, writerId: 'w9' } }))
        .status,
    ).toBe(200);
    const released = await feed(`?after=${claimed.nextCursor}`);
    expect(released.items).toEqual([
      expect.objectContaining({ executionId: 'z', status: 'paused', pauseState: 'open', claimedBy: null }),
    ]);
  });

  it('a deletion is a tombstone; the run started again under the same id follows it', async () => {
    await ingest('w1', async (s) => {
      await s.put(step('gone', 0));
    });
    const cursor = (await feed()).nextCursor;
    await ingest('w1', async (s) => {
      await s.put(step('gone', 0));
      await s.deleteExecution('gone');
    });
    const deleted = await feed(`?after=${cursor}`);
    expect(deleted.items).toEqual([
      {
        executionId: 'gone',
        changeSeq: expect.any(Number),
        deleted: true,
        status: null,
        lastSeq: null,
        lastWriterId: 'w1',
        pauseState: null,
        pauseCheckpointId: null,
        claimedBy: null,
      },
    ]);
    await ingest('w3', async (s) => {
      await s.put(step('gone', 0, { nodeInput: { again: true } }));
    });
    const again = await feed(`?after=${cursor}`);
    expect(again.items.map((i) => [i.executionId, i.deleted, i.lastWriterId])).toEqual([
      ['gone', true, 'w1'],
      ['gone', false, 'w3'],
    ]);
  });

  it('the long poll holds until a run changes, else answers empty with the same cursor; bad input is refused', async () => {
    const cursor = (await feed()).nextCursor;
    const t = performance.now();
    expect(await feed(`?after=${cursor}&wait=1`)).toEqual({ items: [], nextCursor: cursor });
    expect(performance.now() - t).toBeGreaterThanOrEqual(900);

    let answeredAt = 0;
    const held = feed(`?after=${cursor}&wait=20`).then((page) => ((answeredAt = performance.now()), page));
    // the poll is waiting before the run changes (else it would answer the change at once, proving nothing)
    await until('the poll waits', () => waitersOf(plane.database.db, 'changes').polls === 1);
    await ingest('w1', async (s) => {
      await s.put(step('woke', 0));
    });
    const changedAt = performance.now();
    expect((await held).items.map((i) => i.executionId)).toEqual(['woke']);
    // woken by the ingest, not left to its 20 s wait (which would answer the change too). The bound is the plane's own
    // intervals with a wide margin, from the ingest's answer: 10 database rechecks (FEED_RECHECK_MS; the wake-up in
    // this process is at once), half the poll's wait; a loaded machine does not reach it, a poll left to its wait does
    expect(answeredAt - changedAt, 'ms from the ingest to the poll answering').toBeLessThan(10 * FEED_RECHECK_MS);

    for (const q of ['?after=abc', '?after=-1', '?wait=26', '?wait=x', '?limit=0']) {
      const r = await call(`${plane.url}/v1/changes${q}`, { key });
      expect(r.status, q).toBe(400);
    }
    expect((await call(`${plane.url}/v1/changes?after=abc`, { key })).body.error.code).toBe('BAD_CURSOR');
    // above 2^53 the seq would be rounded (and the feed skip or repeat): refused, naming the largest
    const huge = await call(`${plane.url}/v1/changes?after=9007199254740993`, { key });
    expect([huge.status, huge.body.error.code, huge.body.error.message]).toEqual([
      400,
      'BAD_CURSOR',
      expect.stringContaining(String(Number.MAX_SAFE_INTEGER)),
    ]);
  });
});

describe.skipIf(!pg)('the change feed on postgres', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_changes_feed');
  });
  afterAll(async () => tdb?.drop());

  it('concurrent ingests commit their seqs in order: a follower paging through sees every run; another process wakes its polls', async () => {
    const a = await openTestPlaneDatabase({ url: tdb.url });
    const b = await openTestPlaneDatabase({ url: tdb.url });
    try {
      const p = await createKey(a.db, { project: 'concurrent', scopes: ['ingest'], createProject: true });
      const batches = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          eventsOf(async (s) => {
            for (let seq = 0; seq < 3; seq++) await s.put(step(`run-${i}`, seq));
          }, `w${i}`),
        ),
      );
      // a follower reads the feed while the batches commit, from both processes at once
      const seen = new Set<string>();
      let cursor = 0;
      let writing = true;
      const cursors: number[] = [];
      const read = async () => {
        const page = await changeFeed(a.db, p.projectId, cursor, 5);
        for (const i of page.items) {
          expect(i.changeSeq).toBeGreaterThan(cursor);
          seen.add(i.executionId);
        }
        cursor = Number(page.nextCursor);
        cursors.push(cursor);
        return page.items.length;
      };
      const follower = (async () => {
        while (writing) await read();
      })();
      await Promise.all(
        batches.map((rows, i) => ingestBatch(i % 2 ? a.db : b.db, p.projectId, `w${i}`, undefined, rows)),
      );
      writing = false;
      await follower;
      // every batch has committed: the rest of the feed, from where the follower stopped
      while (await read());
      const full = await changeFeed(a.db, p.projectId, 0, 1000);
      expect(
        full.items.filter((i) => !seen.has(i.executionId)).map((i) => [i.executionId, i.changeSeq]),
        JSON.stringify(cursors),
      ).toEqual([]);
      expect(seen.size).toBe(batches.length);

      // six polls in process A wait; process B's write reaches them only through A's database recheck
      const answeredAt: number[] = [];
      const waiting = Array.from({ length: 6 }, () =>
        waitForChanges(a.db, p.projectId, cursor, 10, 20_000).then(
          (page) => (answeredAt.push(performance.now()), page),
        ),
      );
      await until('the 6 polls wait', () => waitersOf(a.db, 'changes').polls === 6);
      await ingestBatch(
        b.db,
        p.projectId,
        'other',
        undefined,
        await eventsOf(async (s) => {
          await s.put(step('late', 0));
        }, 'other'),
      );
      const changedAt = performance.now();
      for (const page of await Promise.all(waiting)) expect(page.items.map((i) => i.executionId)).toEqual(['late']);
      // "within about a second" (one recheck, FEED_RECHECK_MS), not left to the polls' 20 s wait: bounded by the plane's
      // own intervals with a wide margin, from the ingest's commit: 10 rechecks, half the wait. A loaded machine delays
      // a recheck by a second or two, not by ten; a recheck that never wakes the polls leaves them to their wait
      expect(Math.max(...answeredAt) - changedAt, 'ms from the commit to the last poll answering').toBeLessThan(
        10 * FEED_RECHECK_MS,
      );
    } finally {
      await a.close();
      await b.close();
    }
  });
});
