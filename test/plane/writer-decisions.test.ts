/**
 * A writer's decision feed (GET /v1/writer-decisions, plane/writer-decisions.ts): writers on one plane, each with
 * its own paused runs and a decision recorded for each. A writer's feed carries the decisions of the runs it
 * delivered rows of or restored naming itself, none of others'; its cursor is the project feed's and moves past
 * the decisions that are not the writer's, page by page; its long poll is not woken by a decision of another
 * writer's run (counted by the pages its feed reads, traced), and is answered by one of its own. A writer's
 * change feed carries the changes of runs with a decision only when asked (`decided`: a store that follows the
 * whole decision feed), and such a change wakes the long polls that asked, not the others. On PGlite in one process, and on Postgres with the decisions recorded by another plane
 * process on the same database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import { claimPause } from '../../plane/claims.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { decisionFeed, recordDecision } from '../../plane/decisions.js';
import { ingestBatch } from '../../plane/ingest.js';
import { waitersOf } from '../../plane/long-poll.js';
import { newestChange } from '../../plane/changes.js';
import { recordRestorer, waitForWriterChanges, writerChangeFeed } from '../../plane/writer-changes.js';
import { waitForWriterDecisions, type WriterDecisionPage, writerDecisionFeed } from '../../plane/writer-decisions.js';
import { writerWakesOf } from '../../plane/writer-wakes.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { until } from '../helpers/until.js';

const pg = await pgReady("a writer's decision feed across plane processes on postgres");

/** Pages of a writer decision feed read, by writer: its statement names the writer among its parameters. */
const pagesRead = new Map<string, number>();
/** Pages of a writer change feed read without decided runs (its statement has no decisions clause), by writer. */
const undecidedChangePages = new Map<string, number>();
const trace = {
  logQuery(query: string, params: unknown[]) {
    const writer = params.find((p): p is string => typeof p === 'string' && p.startsWith('w-'));
    if (!writer) return;
    const count = (m: Map<string, number>) => m.set(writer, (m.get(writer) ?? 0) + 1);
    if (query.includes('SELECT d.execution_id, d.feed_seq FROM decisions d')) count(pagesRead);
    else if (query.includes('WITH win AS MATERIALIZED') && !query.includes('FROM decisions d'))
      count(undecidedChangePages);
  },
};

/** `writerId` pauses `executionId` and its drain delivers the rows (through `db`): the pause's checkpoint id. */
async function paused(db: PlaneDatabase['db'], projectId: string, executionId: string, writerId: string) {
  let checkpointId = '';
  const rows = await eventsOf(async (s) => {
    await s.put(step(executionId, 0));
    checkpointId = (await s.recordInterrupt(pause(executionId, 1), { reason: 'approve', context: {} })).checkpoint.id;
  }, writerId);
  expect((await ingestBatch(db, projectId, writerId, undefined, rows)).rejected).toBe(0);
  return checkpointId;
}

const decide = (db: PlaneDatabase['db'], projectId: string, executionId: string, checkpointId: string) =>
  recordDecision(db, projectId, executionId, { checkpointId, approved: true }, 'a person', 'plane');

/** A poll of `writerId`'s decision feed after `after`, held up to 120 s; `answered()` once it returns. */
function poll(db: PlaneDatabase['db'], projectId: string, writerId: string, after: number) {
  const abort = new AbortController();
  let answer: WriterDecisionPage | null = null;
  const done = waitForWriterDecisions(db, projectId, writerId, after, 100, 120_000, abort.signal).then((p) => {
    answer = p;
    return p;
  });
  return { done, abort, answered: () => answer };
}

/** Runs of `a`'s writers, decisions recorded through `b` (the same process, or another on the same database). */
async function scenario(a: PlaneDatabase, b: PlaneDatabase, projectId: string) {
  const runs = { 'a-1': 'w-a', 'b-1': 'w-b', 'a-2': 'w-a' } as const;
  const pauses: Record<string, string> = {};
  for (const [run, writer] of Object.entries(runs)) pauses[run] = await paused(a.db, projectId, run, writer);
  // w-c restored b-1 (naming itself): b-1's decisions are its too
  await recordRestorer(a.db, projectId, 'b-1', 'w-c');
  const mine = async (writerId: string, after = 0, limit = 100, scan?: number) =>
    writerDecisionFeed(a.db, projectId, writerId, after, limit, scan);
  const start = Number((await decisionFeed(a.db, projectId, 0, 1000)).nextCursor);
  const decisionIds: Record<string, string> = {};
  for (const run of Object.keys(runs)) decisionIds[run] = (await decide(b.db, projectId, run, pauses[run])).decisionId;
  const end = Number((await decisionFeed(a.db, projectId, 0, 1000)).nextCursor);

  // each writer's feed: the decisions of the runs it delivered or restored, in the feed's order, cursor at the end
  const ofWriter = async (w: string) => {
    const page = await mine(w, start);
    return [page.items.map((d) => d.executionId), Number(page.nextCursor), page.readOn];
  };
  expect(await ofWriter('w-a')).toEqual([['a-1', 'a-2'], end, false]);
  expect(await ofWriter('w-b')).toEqual([['b-1'], end, false]);
  expect(await ofWriter('w-c')).toEqual([['b-1'], end, false]);
  expect(await ofWriter('w-nobody')).toEqual([[], end, false]);
  // as the whole feed serves them: state and all
  expect((await mine('w-a', start)).items).toEqual(
    (await decisionFeed(a.db, projectId, start, 100)).items.filter(
      (d) => runs[d.executionId as keyof typeof runs] === 'w-a',
    ),
  );

  // one decision of the project read a page: the cursor moves past others' (read on), then the writer's, one a page
  const pages = [];
  let after = start;
  for (let i = 0; i < 3; i++) {
    const page = await mine('w-b', after, 1, 1);
    pages.push([page.items.map((d) => d.executionId), page.readOn]);
    expect(Number(page.nextCursor)).toBeGreaterThan(after);
    after = Number(page.nextCursor);
  }
  expect(pages).toEqual([
    [[], true],
    [['b-1'], false],
    [[], true],
  ]);
  expect(after).toBe(end);

  // a writer's change feed carries a run with a decision only when asked: w-nobody never touched a-1
  const changesFrom = Number(
    (await writerChangeFeed(a.db, projectId, { writerId: 'w-x', decided: true }, 0, 1000)).nextCursor,
  );
  const changed = async (decided: boolean) =>
    (await writerChangeFeed(a.db, projectId, { writerId: 'w-nobody', decided }, changesFrom, 100)).items.map(
      (c) => c.executionId,
    );
  // w-nobody's long polls, one asking for decided runs: w-a claims a-1's pause with its decision (a change of a-1)
  // through the other process; the poll that asked is woken and answered, the other is not woken
  undecidedChangePages.clear();
  const plain = new AbortController();
  let plainAnswer: unknown = null;
  const polls = [
    waitForWriterChanges(a.db, projectId, { writerId: 'w-nobody', decided: true }, changesFrom, 100, 120_000),
    waitForWriterChanges(
      a.db,
      projectId,
      { writerId: 'w-nobody', decided: false },
      changesFrom,
      100,
      120_000,
      plain.signal,
    ).then((p) => (plainAnswer = p)),
  ];
  await until('both change polls wait', () => waitersOf(a.db, 'changes').polls === 2);
  await until('the undecided poll read its first page', () => undecidedChangePages.get('w-nobody') === 1);
  expect((await claimPause(b.db, projectId, 'a-1', pauses['a-1'], 'w-a', 0, decisionIds['a-1'])).won).toBe(true);
  expect((await polls[0]).items.map((c) => c.executionId)).toEqual(['a-1']);
  const claimedAt = (await newestChange(a.db, projectId))!;
  await until(
    "a's change watcher read the claim",
    async () => ((await writerWakesOf(a.db)).get(projectId) ?? 0) >= claimedAt,
  );
  // not woken: it read no page again
  expect(plainAnswer).toBeNull();
  expect(undecidedChangePages.get('w-nobody')).toBe(1);
  plain.abort();
  await polls[1];
  expect(await changed(false)).toEqual([]);
  expect(await changed(true)).toEqual(['a-1']);

  // long polls past the feed's end: a decision of another writer's run wakes neither w-a's nor w-nobody's
  const b2 = await paused(a.db, projectId, 'b-2', 'w-b');
  const a3 = await paused(a.db, projectId, 'a-3', 'w-a');
  pagesRead.clear();
  const waiting = ['w-a', 'w-nobody'].map((w) => poll(a.db, projectId, w, end));
  await until('both polls read their first page', () => pagesRead.size === 2);
  const once = { 'w-a': 1, 'w-nobody': 1 };
  expect(Object.fromEntries(pagesRead)).toEqual(once);
  const watcherRead = async (seq: number) =>
    until(
      "a's watcher read the decision",
      async () => ((await writerWakesOf(a.db, 'decisions')).get(projectId) ?? 0) >= seq,
    );
  const other = await decide(b.db, projectId, 'b-2', b2);
  await watcherRead(other.feedSeq);
  expect(Object.fromEntries(pagesRead)).toEqual(once);
  expect(waiting.map((p) => p.answered())).toEqual([null, null]);
  // one of w-a's runs: its poll is answered with it; w-nobody's is not woken
  const own = await decide(b.db, projectId, 'a-3', a3);
  expect((await waiting[0].done).items.map((d) => [d.executionId, d.checkpointId])).toEqual([['a-3', a3]]);
  await watcherRead(own.feedSeq);
  expect(pagesRead.get('w-nobody')).toBe(1);
  expect(waiting[1].answered()).toBeNull();
  waiting[1].abort.abort();
  await waiting[1].done;
  expect(waitersOf(a.db, 'decisions').polls).toBe(0);
  expect((await writerWakesOf(a.db, 'decisions')).size).toBe(0);
}

describe("a writer's decision feed, one plane process (PGlite)", () => {
  let database: PlaneDatabase;
  let projectId = '';
  beforeAll(async () => {
    database = await openTestPlaneDatabase('pglite', trace);
    projectId = (await createKey(database.db, { createProject: true, project: 'wd', scopes: ['ingest'] })).projectId;
  }, 120_000);
  afterAll(async () => database?.close());

  it("each writer's feed holds its runs' decisions only; the cursor moves past others'; others' decisions wake no poll of it", async () => {
    await scenario(database, database, projectId);
  }, 120_000);
});

describe.skipIf(!pg)("a writer's decision feed across two plane processes on one database (Postgres)", () => {
  let tdb: TestDatabase;
  let a: PlaneDatabase;
  let b: PlaneDatabase;
  let projectId = '';
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_writer_decisions');
    a = await openTestPlaneDatabase({ url: tdb.url }, trace);
    b = await openTestPlaneDatabase({ url: tdb.url });
    projectId = (await createKey(a.db, { createProject: true, project: 'wd', scopes: ['ingest'] })).projectId;
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await tdb?.drop();
  });

  it('decisions recorded by the other process: the same feeds, and the same wakes (through the recheck)', async () => {
    await scenario(a, b, projectId);
  }, 120_000);
});
