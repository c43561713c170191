/**
 * The change feed of executions (GET /v1/changes): a connected store follows
 * it to learn when a run it holds moved on elsewhere (claimed, decided,
 * cancelled, finished, deleted), and pulls what it needs of that run.
 *
 * Order is a DB sequence, never a clock: every path that changes a run's
 * summary goes through `refreshExecutions` (ingest, claims, releases), which
 * stamps the run with `nextval` of `executions.change_seq`'s sequence; a
 * deletion leaves a tombstone stamped from the same sequence. The stamps are
 * drawn under a per-project transaction lock (`lockChanges`) taken as the
 * transaction's last step and held to commit, so seqs commit in order: a
 * reader that has seen seq n never later finds a smaller seq committed behind
 * it. The lock is taken after the transaction's row locks and touches only
 * rows it already holds, so it cannot deadlock with them. A transaction that
 * takes the decision feed's lock takes it first (decisions.ts), so the two
 * are always taken in one order.
 *
 * The same lock orders the keys two listings page by: a quarantine record's
 * id (GET /v1/quarantine) and a pause's `opened_seq` (GET /v1/pauses). The
 * ingest draws them again under it, after stamping the changes, in place of
 * the placeholders its inserts drew mid-transaction (ingest.ts
 * stampQuarantine, ingest-events.ts stampOpenedPauses): a reader paging a
 * listing never later finds an entry committed behind its cursor. The lock
 * is project-wide, not per feed: it is taken only at a transaction's end,
 * held for a few updates.
 *
 * One entry per run: a run changed many times since the cursor appears once,
 * at its newest seq, with where it stands now.
 */
import { sql } from 'drizzle-orm';
import type { ExecutionChange } from '../shared/protocol.js';
import { type PlaneDb, rowsOf, type Tx } from './db/open.js';
import { announce, seqCursor, waitForFeed, type Feed } from './long-poll.js';

const SEQUENCE = sql.raw(`pg_get_serial_sequence('executions', 'change_seq')`);

/** Serialize the drawing of change seqs, quarantine ids and pause opened seqs of one project until the transaction ends (take it last: see above). */
export async function lockChanges(tx: Tx, projectId: string): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`waymark.changes:${projectId}`}))`);
}

/**
 * Stamp the changed runs with new change seqs, under the project's lock:
 * first the deletions' tombstones (executionId → the deleting batch's
 * writer), then the summaries that exist (a run deleted and started again in
 * one batch shows its deletion first).
 */
export async function stampChanges(
  tx: Tx,
  projectId: string,
  executionIds: string[],
  deleted: ReadonlyMap<string, string>,
): Promise<void> {
  if (!executionIds.length && !deleted.size) return;
  await lockChanges(tx, projectId);
  if (deleted.size) {
    const rows = JSON.stringify([...deleted].map(([execution_id, writer_id]) => ({ execution_id, writer_id })));
    await tx.execute(sql`
      INSERT INTO execution_tombstones (project_id, execution_id, writer_id, change_seq)
      SELECT ${projectId}, r.execution_id, r.writer_id, nextval(${SEQUENCE})
      FROM jsonb_to_recordset(${rows}::jsonb) AS r(execution_id text, writer_id text)
      ON CONFLICT (project_id, execution_id) DO UPDATE SET
        writer_id = excluded.writer_id, change_seq = excluded.change_seq, deleted_at = now()`);
  }
  if (executionIds.length) {
    const ids = sql.join(
      executionIds.map((id) => sql`${id}`),
      sql`, `,
    );
    await tx.execute(
      sql`UPDATE executions SET change_seq = nextval(${SEQUENCE}) WHERE project_id = ${projectId} AND execution_id IN (${ids})`,
    );
  }
}

/** Wake this process's change-feed polls of a project (after the transaction that stamped changes committed). */
export function announceChanges(db: PlaneDb, projectId: string): void {
  announce(db, 'changes', projectId);
}

/** The change feed's cursor: the last change seq seen, as a decimal string ('' or absent: from the start). */
export const changeCursor = (after: string | undefined): number => seqCursor(after, '/v1/changes');

interface ChangeRow {
  execution_id: string;
  change_seq: string | number;
  deleted: boolean;
  status: ExecutionChange['status'];
  last_seq: number | null;
  last_writer_id: string | null;
  pause_state: ExecutionChange['pauseState'];
  pause_checkpoint_id: string | null;
  claimed_by: string | null;
}

/** Runs changed after change seq `after`, oldest change first, each where it stands now; `nextCursor` is the last one's seq (or `after`). */
export async function changeFeed(
  db: PlaneDb,
  projectId: string,
  after: number,
  limit: number,
): Promise<{ items: ExecutionChange[]; nextCursor: string }> {
  // each side reads by its (project_id, change_seq) index; the merge keeps the first `limit`
  const got = await db.execute(sql`
    SELECT * FROM (
      (SELECT e.execution_id, e.change_seq, false AS deleted, e.status, e.last_seq, e.writer_id AS last_writer_id,
              p.state AS pause_state, p.checkpoint_id AS pause_checkpoint_id, p.claimed_by
       FROM executions e
       LEFT JOIN pending_interrupts p ON p.project_id = e.project_id AND p.execution_id = e.execution_id
       WHERE e.project_id = ${projectId} AND e.change_seq > ${after}
       ORDER BY e.change_seq LIMIT ${limit})
      UNION ALL
      (SELECT t.execution_id, t.change_seq, true, NULL, NULL, t.writer_id, NULL, NULL, NULL
       FROM execution_tombstones t
       WHERE t.project_id = ${projectId} AND t.change_seq > ${after}
       ORDER BY t.change_seq LIMIT ${limit})
    ) c ORDER BY c.change_seq LIMIT ${limit}`);
  const items = rowsOf<ChangeRow>(got).map(
    (r): ExecutionChange => ({
      executionId: r.execution_id,
      changeSeq: Number(r.change_seq),
      deleted: r.deleted,
      status: r.status,
      lastSeq: r.last_seq,
      lastWriterId: r.last_writer_id,
      pauseState: r.pause_state,
      pauseCheckpointId: r.pause_checkpoint_id,
      claimedBy: r.claimed_by,
    }),
  );
  return { items, nextCursor: String(items.length ? items[items.length - 1].changeSeq : after) };
}

/** The change feed, for the shared long poll (long-poll.ts). */
const CHANGES: Feed<Awaited<ReturnType<typeof changeFeed>>> = {
  name: 'changes',
  page: changeFeed,
  async newest(db, projectId) {
    const got = await db.execute(sql`
      SELECT greatest(
        (SELECT max(change_seq) FROM executions WHERE project_id = ${projectId}),
        (SELECT max(change_seq) FROM execution_tombstones WHERE project_id = ${projectId})) AS max`);
    const max = rowsOf<{ max: string | number | null }>(got)[0]?.max;
    return max == null ? null : Number(max);
  },
};

/** The long poll of the change feed: at once when runs changed after `after`, else up to `waitMs` for one (see long-poll.ts). */
export function waitForChanges(
  db: PlaneDb,
  projectId: string,
  after: number,
  limit: number,
  waitMs: number,
  signal?: AbortSignal,
) {
  return waitForFeed(db, CHANGES, projectId, after, limit, waitMs, signal);
}
