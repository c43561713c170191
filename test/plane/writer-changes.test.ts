/**
 * A writer's change feed (GET /v1/writer-changes, plane/writer-changes.ts):
 * three writers on one plane, each with its own runs. Each writer's feed
 * carries only the changes others made to runs it touched (delivered rows
 * of, restored naming itself, owns), the deletions of others, and never its
 * own changes; the whole project's feed (GET /v1/changes) still carries
 * every run. A page reads a bounded stretch of the project's feed and its
 * cursor moves past the entries that are not the writer's; its long poll is
 * not answered by another writer's change, and is by one to a run the writer
 * touched. On Postgres, a writer paging its feed while many ingests commit
 * at once misses none of its runs' changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import { ingestBatch } from '../../plane/ingest.js';
import { waitersOf } from '../../plane/long-poll.js';
import { recordRestorer, writerChangeFeed } from '../../plane/writer-changes.js';
import { ChangeFeed } from '../../shared/protocol.js';
import { call, openTestPlaneDatabase, releaseHold, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, step, takeEvents } from '../helpers/rows.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { until } from '../helpers/until.js';

const pg = await pgReady("a writer's change feed on postgres");

describe("a writer's change feed over HTTP (PGlite)", () => {
  let plane: TestPlane;
  let key = '';
  let projectId = '';
  // each writer's own store, its rows sent as its drain would
  const stores = new Map<string, SqliteCheckpointer>();
  const ingest = async (writerId: string, build: (s: SqliteCheckpointer) => Promise<unknown>) => {
    const store = stores.get(writerId) ?? new SqliteCheckpointer({ path: ':memory:', writerId });
    stores.set(writerId, store);
    await build(store);
    const rows = await takeEvents(store);
    const r = await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId, rows } });
    expect(r.body.accepted, JSON.stringify(r.body)).toBe(rows.length);
  };
  const writerFeed = async (writerId: string, q = '') => {
    const r = await call(`${plane.url}/v1/writer-changes?writerId=${writerId}${q}`, { key });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return ChangeFeed.parse(r.body);
  };
  const wholeFeed = async (q = '') => ChangeFeed.parse((await call(`${plane.url}/v1/changes${q}`, { key })).body);
  /** The runs of one writer's feed from the start, with the writer of their newest row. */
  const runsOf = async (writerId: string) =>
    (await writerFeed(writerId)).items.map((i) => `${i.executionId}@${i.lastWriterId}${i.deleted ? ' deleted' : ''}`);
  /** Restore a run as a store does (naming its writer, or not), then write its next row as that writer. */
  const restoreAndExtend = async (writerId: string, id: string, seq: number) => {
    const bundle = (await call(`${plane.url}/v1/executions/${id}/restore?writerId=${writerId}`, { key })).body;
    await ingest(writerId, async (s) => {
      await s.importRows({ checkpoints: bundle.rows, pending: null, idempotency: [] });
      await s.put(step(id, seq));
    });
  };

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    const k = await createKey(plane.database.db, {
      createProject: true,
      project: 'writers',
      scopes: ['ingest', 'read'],
    });
    key = k.key;
    projectId = k.projectId;
  });
  afterAll(async () => {
    for (const store of stores.values()) await store.close();
    await plane?.close();
  });

  it("three writers each on their own runs: each feed carries only the others' changes to runs it touched; the whole feed carries all", async () => {
    for (const w of ['w1', 'w2', 'w3'])
      await ingest(w, async (s) => {
        for (const run of ['a', 'b']) {
          await s.put(step(`${w}-${run}`, 0));
          await s.put(step(`${w}-${run}`, 1));
        }
      });
    // each writer alone on its runs: its feed is empty (its own changes are not sent back to it)
    for (const w of ['w1', 'w2', 'w3']) expect(await runsOf(w), w).toEqual([]);
    expect((await wholeFeed()).items).toHaveLength(6);

    // w2 takes w1-a on (w1 gave its hold up): w1 hears of it, w3 does not, w2 does not hear its own change
    await releaseHold(plane.url, key, 'w1-a', 'w1');
    await restoreAndExtend('w2', 'w1-a', 2);
    // w3 restores w1-b (naming itself) and writes nothing: it hears of w1's next row of it
    expect((await call(`${plane.url}/v1/executions/w1-b/restore?writerId=w3`, { key })).status).toBe(200);
    await ingest('w1', async (s) => {
      await s.put(step('w1-b', 2));
    });
    // w2 reads w3-a without naming itself (an operator's read): not a run it touched
    expect((await call(`${plane.url}/v1/executions/w3-a/restore`, { key })).status).toBe(200);
    await ingest('w3', async (s) => {
      await s.put(step('w3-a', 2));
    });

    expect(await runsOf('w1')).toEqual(['w1-a@w2']);
    expect(await runsOf('w2')).toEqual([]);
    expect(await runsOf('w3')).toEqual(['w1-b@w1']);
    expect((await wholeFeed()).items).toHaveLength(6);

    // w1 takes its run back: now w2 hears of it, having delivered rows of it
    await releaseHold(plane.url, key, 'w1-a', 'w2');
    await restoreAndExtend('w1', 'w1-a', 3);
    expect(await runsOf('w2')).toEqual(['w1-a@w1']);
    expect(await runsOf('w1')).toEqual([]);

    // a deletion reaches every writer but the one deleting (the run's contacts go with it)
    await ingest('w3', async (s) => {
      await s.put(step('w3-b', 2));
      await s.deleteExecution('w3-b');
    });
    expect(await runsOf('w1')).toEqual(['w3-b@w3 deleted']);
    expect(await runsOf('w2')).toEqual(['w1-a@w1', 'w3-b@w3 deleted']);
    expect(await runsOf('w3')).toEqual(['w1-b@w1']);
  });

  it('the cursor moves past entries not the writer’s, page by page; pages follow from the cursor without a gap', async () => {
    const db = plane.database.db;
    const start = Number((await wholeFeed()).nextCursor);
    await ingest('p1', async (s) => {
      for (let i = 0; i < 5; i++) await s.put(step(`p1-${i}`, 0));
    });
    await recordRestorer(db, projectId, 'p1-3', 'p2');
    await recordRestorer(db, projectId, 'p1-4', 'p2');
    // one batch each: their changes in this order
    for (let i = 0; i < 5; i++) await ingest('p1', (s) => s.put(step(`p1-${i}`, 1)));
    // reading two of the project's entries a page: one page of others' runs (read on), then p2's two, one a page
    const pages = [];
    let after = start;
    for (let i = 0; i < 3; i++) {
      const page = await writerChangeFeed(db, projectId, { writerId: 'p2', decided: false }, after, 1, 2);
      pages.push([page.items.map((x) => x.executionId), page.readOn]);
      expect(Number(page.nextCursor)).toBeGreaterThan(after);
      after = Number(page.nextCursor);
    }
    expect(pages).toEqual([
      [[], true],
      [['p1-3'], false],
      [['p1-4'], false],
    ]);
    expect(await writerChangeFeed(db, projectId, { writerId: 'p2', decided: false }, after, 1, 2)).toEqual({
      items: [],
      nextCursor: String(after),
      readOn: false,
    });
    // over HTTP, without holding: the plane reads on to the writer's first entries
    expect((await writerFeed('p2', `&after=${start}`)).items.map((x) => x.executionId)).toEqual(['p1-3', 'p1-4']);
  });

  it("a writer's long poll is not answered by others' changes, and is by one to a run it touched", async () => {
    const cursor = (await wholeFeed()).nextCursor;
    await ingest('q1', async (s) => {
      await s.put(step('q1-a', 0));
    });
    await recordRestorer(plane.database.db, projectId, 'q1-a', 'q2');
    const start = (await wholeFeed()).nextCursor;
    let answered: ChangeFeed | null = null;
    const held = writerFeed('q2', `&after=${start}&wait=20`).then((p) => (answered = p));
    await until('the poll waits', () => waitersOf(plane.database.db, 'changes').polls === 1);
    await ingest('q3', async (s) => {
      await s.put(step('q3-a', 0));
    });
    // the other writer's change woke the poll, which read it, found nothing of q2's, and waits on
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBeNull();
    expect(waitersOf(plane.database.db, 'changes').polls).toBe(1);
    await ingest('q1', async (s) => {
      await s.put(step('q1-a', 1));
    });
    const page = await held;
    expect(page.items.map((i) => [i.executionId, i.lastWriterId])).toEqual([['q1-a', 'q1']]);
    expect(Number(page.nextCursor)).toBeGreaterThan(Number(cursor));
  });

  it('bad input is refused: no writer, the plane’s own writer id, a writer given twice', async () => {
    for (const q of ['', '?writerId=', '?writerId=plane', '?writerId=a&writerId=b', '?writerId=a&after=x']) {
      const r = await call(`${plane.url}/v1/writer-changes${q}`, { key });
      expect(r.status, q).toBe(400);
    }
  });
});

describe.skipIf(!pg)("a writer's change feed on postgres", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_writer_changes');
  });
  afterAll(async () => tdb?.drop());

  it('concurrent ingests: a writer paging its feed while they commit sees every change to the runs it restored', async () => {
    const a = await openTestPlaneDatabase({ url: tdb.url });
    const b = await openTestPlaneDatabase({ url: tdb.url });
    try {
      const p = await createKey(a.db, { project: 'concurrent', scopes: ['ingest'], createProject: true });
      const runs = 24;
      // each run's three rows; its first row is on the plane before the watcher restores it
      const batches = await Promise.all(
        Array.from({ length: runs }, (_, i) =>
          eventsOf(async (s) => {
            for (let seq = 0; seq < 3; seq++) await s.put(step(`run-${i}`, seq));
          }, `w${i}`),
        ),
      );
      for (let i = 0; i < runs; i++) await ingestBatch(a.db, p.projectId, `w${i}`, undefined, batches[i].slice(0, 1));
      // the watcher restored the even runs
      for (let i = 0; i < runs; i += 2) await recordRestorer(a.db, p.projectId, `run-${i}`, 'watcher');
      let cursor = Number(
        (await writerChangeFeed(a.db, p.projectId, { writerId: 'nobody', decided: false }, 0, 1000)).nextCursor,
      );
      const newest = new Map<string, number>();
      let writing = true;
      const read = async () => {
        const page = await writerChangeFeed(a.db, p.projectId, { writerId: 'watcher', decided: false }, cursor, 3, 4);
        for (const i of page.items) {
          expect(i.changeSeq).toBeGreaterThan(cursor);
          newest.set(i.executionId, i.lastSeq ?? -1);
        }
        cursor = Number(page.nextCursor);
        return page.items.length || page.readOn;
      };
      const follower = (async () => {
        while (writing) await read();
      })();
      await Promise.all(
        batches.map((rows, i) => ingestBatch(i % 2 ? a.db : b.db, p.projectId, `w${i}`, undefined, rows.slice(1))),
      );
      writing = false;
      await follower;
      while (await read());
      const even = Array.from({ length: runs / 2 }, (_, k) => `run-${2 * k}`);
      expect([...newest.keys()].sort()).toEqual([...even].sort());
      for (const id of even) expect(newest.get(id), id).toBe(2);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
