/**
 * A writer's decision feed (GET /v1/writer-decisions?writerId=…): the
 * decisions of the project's decision feed (decisions.ts) whose run the
 * writer touched — it delivered rows of it, restored it naming itself
 * (`run_contacts`) — or owns (`run_owners`), in the same order and with the
 * same cursor. A decision worker whose store holds only runs its writer
 * wrote or restored (`serveDecisions({ runs: 'mine' })`: a fleet's laptops)
 * follows it, so what a fleet is served grows with its decisions, not with
 * its decisions times its writers; any other worker, and one that restores
 * runs it never ran, follows the whole feed (GET /v1/decisions).
 *
 * A page reads the project's feed after the cursor, at most WRITER_SCAN
 * decisions, and keeps the writer's; the cursor moves past every decision
 * read, the writer's or not. The feed's seqs commit in order (the decisions
 * clock, clocks.ts), so none commits later below the last seq read. A page
 * that read WRITER_SCAN decisions without one of the writer's says `readOn`.
 *
 * A decision recorded before the writer touched its run is passed over when
 * the page that reads it comes before the contact: a store touches a run
 * with a decision only by restoring it, and a restore reads the run's open
 * pause with its decision after its contact committed (writer-changes.ts
 * recordRestorer), so the decision arrives with the run.
 */
import { sql } from 'drizzle-orm';
import type { DecisionView } from '../shared/protocol.js';
import { type PlaneDb, rowsOf } from './db/open.js';
import { decisionsAt, newestDecision } from './decisions.js';
import { type Feed, pageOn, waitForFeed } from './long-poll.js';
import { touchedBy, touchingWriters } from './reads/touched.js';
import { WRITER_SCAN } from './writer-changes.js';
import { concernedOf, WATCH_SCAN, type WakeSource, wakeWriter } from './writer-wakes.js';

/** A page of a writer's decision feed: its decisions, the cursor past every decision read, and whether to ask again at once. */
export interface WriterDecisionPage {
  items: DecisionView[];
  nextCursor: string;
  /** The scan bound's worth of decisions was read and none was the writer's: more may follow, ask again at once. */
  readOn: boolean;
}

/** The decisions of `writerId` after feed seq `after`, oldest first, reading at most `scan` of the project's (see above). */
export async function writerDecisionFeed(
  db: PlaneDb,
  projectId: string,
  writerId: string,
  after: number,
  limit: number,
  scan = WRITER_SCAN,
): Promise<WriterDecisionPage> {
  // every table says project_id = the project: one shard per statement (test/plane/shard-routing.test.ts)
  const got = await db.execute(sql`
    WITH win AS MATERIALIZED (
      SELECT d.execution_id, d.feed_seq FROM decisions d
      WHERE d.project_id = ${projectId} AND d.feed_seq > ${after}
      ORDER BY d.feed_seq LIMIT ${scan}
    ),
    hit AS (
      SELECT w.feed_seq FROM win w
      WHERE ${touchedBy(projectId, writerId, sql`w.execution_id`)}
      ORDER BY w.feed_seq LIMIT ${limit}
    )
    SELECT (SELECT max(feed_seq) FROM win) AS scanned_to, (SELECT count(*) FROM win) AS scanned,
      coalesce((SELECT json_agg(feed_seq ORDER BY feed_seq) FROM hit), '[]'::json) AS hits`);
  const [row] = rowsOf<{ scanned_to: string | number | null; scanned: string | number; hits: unknown }>(got);
  const hits = (typeof row.hits === 'string' ? JSON.parse(row.hits) : row.hits) as (string | number)[];
  // the decisions as they stand now (their states follow their claims; the rows themselves never change)
  const items = await decisionsAt(db, projectId, hits.map(Number));
  const scannedTo = row.scanned_to == null ? after : Number(row.scanned_to);
  // a full page may stop before the window's end: the next one starts after its last decision
  const nextCursor = hits.length === limit ? Number(hits[hits.length - 1]) : scannedTo;
  return { items, nextCursor: String(nextCursor), readOn: !hits.length && Number(row.scanned) >= scan };
}

/** Whom the project's decisions after `after` concern (writer-wakes.ts): the writers in touch with or owning their runs. */
const DECISION_WAKES: WakeSource = {
  feed: 'decisions',
  newest: newestDecision,
  async concerned(db, projectId, after) {
    return concernedOf(
      await db.execute(sql`
        WITH ds AS MATERIALIZED (
          SELECT d.execution_id, d.feed_seq FROM decisions d
          WHERE d.project_id = ${projectId} AND d.feed_seq > ${after}
          ORDER BY d.feed_seq LIMIT ${WATCH_SCAN}
        ),
        touched AS (${touchingWriters(projectId, sql`ds`)})
        SELECT (SELECT max(feed_seq) FROM ds) AS newest, (SELECT count(*) FROM ds) AS scanned,
          (SELECT coalesce(json_agg(DISTINCT writer_id), '[]'::json) FROM touched) AS writers`),
    );
  },
};

function writerDecisions(writerId: string): Feed<WriterDecisionPage> {
  return {
    name: 'decisions',
    page: (db, projectId, after, limit) => writerDecisionFeed(db, projectId, writerId, after, limit),
    newest: newestDecision,
    wakes: (db, projectId, wake) => wakeWriter(db, DECISION_WAKES, projectId, writerId, wake),
  };
}

/** The long poll of a writer's decision feed: at once when it has decisions after `after`, else up to `waitMs` for one. */
export function waitForWriterDecisions(
  db: PlaneDb,
  projectId: string,
  writerId: string,
  after: number,
  limit: number,
  waitMs: number,
  signal?: AbortSignal,
): Promise<WriterDecisionPage> {
  return waitForFeed(db, writerDecisions(writerId), projectId, after, limit, waitMs, signal);
}

/** One answer without holding: pages on while a page read WRITER_SCAN decisions, none the writer's. */
export function writerDecisionsNow(
  db: PlaneDb,
  projectId: string,
  writerId: string,
  after: number,
  limit: number,
): Promise<WriterDecisionPage> {
  return pageOn((from) => writerDecisionFeed(db, projectId, writerId, from, limit), after);
}
