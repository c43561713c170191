/**
 * Writers' long polls are woken by the runs that changed, not by the project (plane/writer-wakes.ts): a commit of
 * one writer's run makes no other waiting writer, nor itself, read its feed again, unless the run concerns it (it
 * restored the run); a deletion concerns every writer; a commit by another plane process on the same database
 * (Postgres) wakes the concerned polls too. Counted
 * by the pages each writer's feed reads (its statements, traced with their parameters), not timed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { ingestBatch } from '../../plane/ingest.js';
import { waitersOf } from '../../plane/long-poll.js';
import { newestChange } from '../../plane/changes.js';
import { recordRestorer, waitForWriterChanges, type WriterChangePage } from '../../plane/writer-changes.js';
import { writerWakesOf } from '../../plane/writer-wakes.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, step } from '../helpers/rows.js';
import { until } from '../helpers/until.js';

const pg = await pgReady('writer wakes across plane processes on postgres');
const COMMITS = 10;

/** Pages of the writer feed read per writer: the feed's statement names its writer among its parameters. */
const pagesRead = new Map<string, number>();
const trace = {
  logQuery(query: string, params: unknown[]) {
    if (!query.includes('WITH win AS MATERIALIZED')) return;
    // the writer's id is among the statement's parameters (more than once)
    const writer = params.find((p): p is string => typeof p === 'string' && p.startsWith('w-'));
    if (writer) pagesRead.set(writer, (pagesRead.get(writer) ?? 0) + 1);
  },
};

/** One row of `run` (its `seq`-th) from `writerId`, as its drain sends it. */
async function rowOf(run: string, seq: number, writerId: string) {
  const events = await eventsOf(async (s) => {
    for (let i = 0; i <= seq; i++) await s.put(step(run, i));
  }, writerId);
  return events[seq];
}

/** A poll of `writerId`'s feed after `after`, held up to 120 s; `answered()` once it returns. */
function poll(db: PlaneDatabase['db'], projectId: string, writerId: string, after: number) {
  const abort = new AbortController();
  let answer: WriterChangePage | null = null;
  const done = waitForWriterChanges(
    db,
    projectId,
    { writerId, decided: false },
    after,
    100,
    120_000,
    abort.signal,
  ).then((p) => {
    answer = p;
    return p;
  });
  return { done, abort, answered: () => answer };
}

async function writersScenario(a: PlaneDatabase, b: PlaneDatabase, projectId: string) {
  // w-busy's run, which w-touched restored from the plane (so its changes concern w-touched)
  await ingestBatch(a.db, projectId, 'w-busy', undefined, [await rowOf('busy-run', 0, 'w-busy')]);
  await recordRestorer(a.db, projectId, 'busy-run', 'w-touched');
  const start = (await newestChange(a.db, projectId)) ?? 0;
  pagesRead.clear();
  // two writers with nothing of theirs in the project, and the busy writer itself (its own changes are not its feed's)
  const idle = ['w-idle-1', 'w-idle-2', 'w-busy'].map((w) => poll(a.db, projectId, w, start));
  await until('the three polls read their first page', () => pagesRead.size === 3);
  const once = { 'w-idle-1': 1, 'w-idle-2': 1, 'w-busy': 1 };
  expect(Object.fromEntries(pagesRead)).toEqual(once);
  const watcherRead = async () => {
    const newest = (await newestChange(a.db, projectId))!;
    await until(
      "a's watcher read every change",
      async () => ((await writerWakesOf(a.db)).get(projectId) ?? 0) >= newest,
    );
    return newest;
  };
  // w-busy commits its run's rows one batch at a time, through plane process `b`
  for (let seq = 1; seq <= COMMITS; seq++)
    expect(
      (await ingestBatch(b.db, projectId, 'w-busy', undefined, [await rowOf('busy-run', seq, 'w-busy')])).accepted,
    ).toBe(1);
  const newest = await watcherRead();
  // no commit concerned the waiting writers: they read no page again and still wait
  expect(Object.fromEntries(pagesRead)).toEqual(once);
  expect(idle.map((p) => p.answered())).toEqual([null, null, null]);
  // w-touched's poll, from before the next commit, is answered with it
  const touched = poll(a.db, projectId, 'w-touched', newest);
  await until('the touched poll read its first page', () => pagesRead.has('w-touched'));
  await ingestBatch(b.db, projectId, 'w-busy', undefined, [await rowOf('busy-run', COMMITS + 1, 'w-busy')]);
  const page = await touched.done;
  expect(page.items.map((i) => [i.executionId, i.lastWriterId])).toEqual([['busy-run', 'w-busy']]);
  await watcherRead();
  expect(idle.map((p) => p.answered())).toEqual([null, null, null]);
  expect([pagesRead.get('w-idle-1'), pagesRead.get('w-idle-2'), pagesRead.get('w-busy')]).toEqual([1, 1, 1]);
  // a deletion concerns every writer: the idle ones are answered with its tombstone; the deleting writer's own
  // poll is woken too, finds nothing of its feed's and waits on
  const deletion = (
    await eventsOf(async (s) => {
      await s.put(step('busy-run', 0));
      await s.deleteExecution('busy-run');
    }, 'w-busy')
  ).find((e) => e.kind === 'execution_deleted')!;
  await ingestBatch(b.db, projectId, 'w-busy', undefined, [deletion]);
  for (const p of idle.slice(0, 2))
    expect((await p.done).items.map((i) => [i.executionId, i.deleted])).toEqual([['busy-run', true]]);
  await until("the deleting writer's poll read its feed again", () => (pagesRead.get('w-busy') ?? 0) >= 2);
  expect(idle[2].answered()).toBeNull();
  idle[2].abort.abort();
  await idle[2].done;
  expect(waitersOf(a.db, 'changes').polls).toBe(0);
  expect((await writerWakesOf(a.db)).size).toBe(0);
}

describe('writer feed wakes, one plane process (PGlite)', () => {
  let database: PlaneDatabase;
  let projectId = '';
  beforeAll(async () => {
    database = await openTestPlaneDatabase('pglite', trace);
    projectId = (await createKey(database.db, { createProject: true, project: 'wakes', scopes: ['ingest'] })).projectId;
  }, 120_000);
  afterAll(async () => database?.close());

  it(`${COMMITS} commits of a writer's run wake neither the idle writers' polls nor its own; a run a writer restored wakes its; a deletion wakes all`, async () => {
    await writersScenario(database, database, projectId);
  }, 120_000);
});

describe.skipIf(!pg)('writer feed wakes across two plane processes on one database (Postgres)', () => {
  let tdb: TestDatabase;
  let a: PlaneDatabase;
  let b: PlaneDatabase;
  let projectId = '';
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_writer_wakes');
    a = await openTestPlaneDatabase({ url: tdb.url }, trace);
    b = await openTestPlaneDatabase({ url: tdb.url });
    projectId = (await createKey(a.db, { createProject: true, project: 'wakes', scopes: ['ingest'] })).projectId;
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await tdb?.drop();
  });

  it("commits made by the other process: the idle polls read no page again; the restorer's and a deletion's are answered", async () => {
    await writersScenario(a, b, projectId);
  }, 120_000);
});
