/**
 * A writer's change feed (GET /v1/writer-changes?writerId=…): the entries of
 * the project's change feed (changes.ts) that a connected store of that
 * writer acts on, in the same order and with the same cursor. A writer
 * following it is served entries for the runs it holds, not for every run of
 * its project, so what a fleet is served grows with its writers, not with
 * their square.
 *
 * An entry is the writer's when it is not the writer's own change (its newest
 * row is the writer's and its pause unclaimed or claimed by the writer: the
 * store has it already) and one of:
 * - the writer touched the run: it delivered rows of it, or restored it from
 *   the plane (`run_contacts`; a restore that names its writer records it
 *   before the run's rows are read), or it owns the run (`run_owners`);
 * - a deletion (its run's contacts and owner go with the run);
 * - asked for (`decided`): the run has a decision recorded at the plane. A
 *   store that follows its project's whole decision feed (a decision
 *   worker's default) keeps decisions of runs it never touched and forgets
 *   them when their pause closes, which it learns here. A store that follows
 *   only its own decisions (GET /v1/writer-decisions) does not ask: every
 *   decision it keeps is of a run it touched.
 *
 * A page reads the project's feed after the cursor through its
 * (project_id, change_seq) indexes, at most WRITER_SCAN entries, and keeps the
 * writer's. The cursor moves past the entries read, the writer's or not: the
 * feed's seqs commit in order (changes.ts), so every entry at or below the
 * last seq read was committed and read in the same statement, and none
 * commits behind it later. A page that read WRITER_SCAN entries without
 * finding one of the writer's says `readOn`: the next page is asked at once.
 *
 * A run counts as touched from the moment its contact or owner row commits:
 * its later changes carry later seqs. What it held before came with the rows
 * (a delivery, or a restore that read them after recording the contact).
 */
import { type SQL, sql } from 'drizzle-orm';
import type { ExecutionChange } from '../shared/protocol.js';
import { type ChangeRow, changeOf, newestChange } from './changes.js';
import { type PlaneDb, rowsOf } from './db/open.js';
import { runContacts } from './db/schema.js';
import { type Feed, pageOn, waitForFeed } from './long-poll.js';
import { touchedBy, touchingWriters } from './reads/touched.js';
import { concernedOf, WATCH_SCAN, type WakeSource, wakeWriter } from './writer-wakes.js';

/**
 * A restore of `executionId` by `writerId` (its first page): the run counts as
 * touched by the writer from now on. Committed on its own before the restore
 * reads the run, so a change the writer's feed passed over before this commit
 * is in the rows the restore reads. A contact the writer has (it delivered
 * rows) is kept as it is: takeovers read its time (claims.ts).
 */
export async function recordRestorer(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  writerId: string,
): Promise<void> {
  await db.insert(runContacts).values({ projectId, executionId, writerId }).onConflictDoNothing();
}

/** The project's feed entries one writer's page reads at most (the page then says `readOn`). */
export const WRITER_SCAN = 1000;

/** A writer's page: the entries it acts on, the cursor past everything read, and whether to ask again at once. */
export interface WriterChangePage {
  items: ExecutionChange[];
  nextCursor: string;
  /** The scan bound's worth of entries was read and none was the writer's: more may follow, ask again at once. */
  readOn: boolean;
}

/** A row of the page's statement: the window's bounds, and one of the writer's entries (all null when it has none). */
type Row = { scanned_to: string | number | null; scanned: string | number } & (
  | ChangeRow
  | { [K in keyof ChangeRow]: null }
);

/** Which writer's entries a page holds: those of the runs it acts on, and, with `decided`, of runs with a decision (see above). */
export interface WriterFeedOf {
  writerId: string;
  decided: boolean;
}

/** The entries of `of.writerId` after change seq `after`, oldest first, reading at most `scan` of the project's (see above); `nextCursor` is past every entry read. */
export async function writerChangeFeed(
  db: PlaneDb,
  projectId: string,
  of: WriterFeedOf,
  after: number,
  limit: number,
  scan = WRITER_SCAN,
): Promise<WriterChangePage> {
  const { writerId } = of;
  // every table says project_id = the project: one shard per statement (test/plane/shard-routing.test.ts)
  const got = await db.execute(sql`
    WITH win AS MATERIALIZED (
      SELECT * FROM (
        (SELECT e.execution_id, e.change_seq, false AS deleted, e.status, e.last_seq, e.writer_id AS last_writer_id
         FROM executions e
         WHERE e.project_id = ${projectId} AND e.change_seq > ${after}
         ORDER BY e.change_seq LIMIT ${scan})
        UNION ALL
        (SELECT t.execution_id, t.change_seq, true, NULL, NULL, t.writer_id
         FROM execution_tombstones t
         WHERE t.project_id = ${projectId} AND t.change_seq > ${after}
         ORDER BY t.change_seq LIMIT ${scan})
      ) u ORDER BY u.change_seq LIMIT ${scan}
    ),
    hit AS (
      SELECT w.*, p.state AS pause_state, p.checkpoint_id AS pause_checkpoint_id, p.claimed_by
      FROM win w
      LEFT JOIN pending_interrupts p
        ON NOT w.deleted AND p.project_id = ${projectId} AND p.execution_id = w.execution_id
      WHERE NOT (coalesce(w.last_writer_id = ${writerId}, false) AND coalesce(p.claimed_by, ${writerId}) = ${writerId})
        AND (w.deleted
          OR ${touchedBy(projectId, writerId, sql`w.execution_id`)}
          ${of.decided ? decidedRun(projectId, sql`w.execution_id`) : sql``})
      ORDER BY w.change_seq LIMIT ${limit}
    )
    SELECT s.scanned_to, s.scanned, h.*
    FROM (SELECT max(change_seq) AS scanned_to, count(*) AS scanned FROM win) s
    LEFT JOIN hit h ON true
    ORDER BY h.change_seq`);
  const rows = rowsOf<Row>(got);
  const items = rows.flatMap((r) => (r.execution_id === null ? [] : [changeOf(r as ChangeRow)]));
  const scannedTo = rows[0]?.scanned_to == null ? after : Number(rows[0].scanned_to);
  // a full page may stop before the window's end: the next one starts after its last entry
  const nextCursor = items.length === limit ? items[items.length - 1].changeSeq : scannedTo;
  const readOn = !items.length && Number(rows[0]?.scanned ?? 0) >= scan;
  return { items, nextCursor: String(nextCursor), readOn };
}

/** `OR` the run has a decision recorded at the plane (a page's or a wake's condition). */
function decidedRun(projectId: string, executionId: SQL): SQL {
  return sql`OR EXISTS (SELECT 1 FROM decisions d WHERE d.project_id = ${projectId} AND d.execution_id = ${executionId})`;
}

/** Whom the project's changes after `after` concern (writer-wakes.ts): deletions every writer; otherwise the writers in touch with or owning the run, but its own change's writer; and whether a run has a decision. */
const CHANGE_WAKES: WakeSource = {
  feed: 'changes',
  newest: newestChange,
  async concerned(db, projectId, after) {
    // every table says project_id = the project: one shard per statement (test/plane/shard-routing.test.ts)
    return concernedOf(
      await db.execute(sql`
        WITH ch AS MATERIALIZED (
          SELECT * FROM (
            (SELECT e.execution_id, e.change_seq, false AS deleted, e.writer_id AS last_writer_id, p.claimed_by
             FROM executions e
             LEFT JOIN pending_interrupts p ON p.project_id = ${projectId} AND p.execution_id = e.execution_id
             WHERE e.project_id = ${projectId} AND e.change_seq > ${after}
             ORDER BY e.change_seq LIMIT ${WATCH_SCAN})
            UNION ALL
            (SELECT t.execution_id, t.change_seq, true, NULL, NULL
             FROM execution_tombstones t
             WHERE t.project_id = ${projectId} AND t.change_seq > ${after}
             ORDER BY t.change_seq LIMIT ${WATCH_SCAN})
          ) u ORDER BY change_seq LIMIT ${WATCH_SCAN}
        ),
        touched AS (${touchingWriters(projectId, sql`ch`)})
        SELECT
          (SELECT max(change_seq) FROM ch) AS newest,
          (SELECT count(*) FROM ch) AS scanned,
          (SELECT coalesce(bool_or(ch.deleted), false) FROM ch) AS everyone,
          (SELECT coalesce(bool_or(false ${decidedRun(projectId, sql`ch.execution_id`)}), false) FROM ch) AS decided,
          (SELECT coalesce(json_agg(DISTINCT writer_id), '[]'::json) FROM touched
           WHERE NOT (coalesce(last_writer_id = writer_id, false) AND coalesce(claimed_by, writer_id) = writer_id)) AS writers`),
    );
  },
};

/** One writer's feed, for the shared long poll: woken by changes that concern the writer (writer-wakes.ts). */
function writerFeed(of: WriterFeedOf): Feed<WriterChangePage> {
  return {
    name: 'changes',
    page: (db, projectId, after, limit) => writerChangeFeed(db, projectId, of, after, limit),
    newest: newestChange,
    wakes: (db, projectId, wake) => wakeWriter(db, CHANGE_WAKES, projectId, of.writerId, wake, of.decided),
  };
}

/** The long poll of a writer's feed: at once when it has entries after `after`, else up to `waitMs` for one (long-poll.ts). */
export function waitForWriterChanges(
  db: PlaneDb,
  projectId: string,
  of: WriterFeedOf,
  after: number,
  limit: number,
  waitMs: number,
  signal?: AbortSignal,
): Promise<WriterChangePage> {
  return waitForFeed(db, writerFeed(of), projectId, after, limit, waitMs, signal);
}

/** One answer without holding: pages on while a page read WRITER_SCAN entries, none the writer's. */
export function writerChangesNow(
  db: PlaneDb,
  projectId: string,
  of: WriterFeedOf,
  after: number,
  limit: number,
): Promise<WriterChangePage> {
  return pageOn((from) => writerChangeFeed(db, projectId, of, from, limit), after);
}
