/**
 * The change feed of executions (GET /v1/changes): a connected store follows
 * it to learn when a run it holds moved on elsewhere (claimed, decided,
 * cancelled, finished, deleted), and pulls what it needs of that run.
 *
 * Order is the project's `changes` clock, never a time: every path that
 * changes a run's summary goes through `refreshExecutions` (ingest, claims,
 * releases), which stamps the run with a key drawn from the clock; a deletion
 * leaves a tombstone stamped from the same clock. The keys are drawn as the
 * transaction's last step, and the clock's row lock is held to commit
 * (clocks.ts), so seqs commit in order: a reader that has seen seq n never
 * later finds a smaller seq committed behind it. The draw comes after the
 * transaction's other row locks and the stamps touch only rows it already
 * holds, so
 * it cannot deadlock with them. A transaction that takes the decision feed's
 * clock takes it first (decisions.ts), so the two are always taken in one
 * order.
 *
 * The ingest draws the keys two listings page by right after these, from
 * their own clocks: a quarantine record's id (GET /v1/quarantine) and a
 * pause's `opened_seq` (GET /v1/pauses), in place of the placeholders its
 * inserts wrote mid-transaction (ingest.ts stampQuarantine, ingest-events.ts
 * stampOpenedPauses): a reader paging a listing never later finds an entry
 * committed behind its cursor.
 *
 * One entry per run: a run changed many times since the cursor appears once,
 * at its newest seq, with where it stands now.
 */
import { sql } from 'drizzle-orm';
import type { ExecutionChange } from '../shared/protocol.js';
import { drawKeys, writeKeys } from './clocks.js';
import { type PlaneDb, rowsOf, type Tx } from './db/open.js';
import { announce, seqCursor, waitForFeed, type Feed } from './long-poll.js';

/**
 * Stamp the changed runs with new change seqs from the project's `changes`
 * clock, as the transaction's last step (see above): first the deletions'
 * tombstones (executionId → the deleting batch's writer), then the summaries
 * that exist (a run deleted and started again in one batch shows its
 * deletion first). A summary inserted by this transaction has no seq until
 * this stamps it.
 */
export async function stampChanges(
  tx: Tx,
  projectId: string,
  executionIds: string[],
  deleted: ReadonlyMap<string, string>,
): Promise<void> {
  if (!executionIds.length && !deleted.size) return;
  const first = await drawKeys(tx, projectId, 'changes', deleted.size + executionIds.length);
  if (deleted.size) {
    const rows = JSON.stringify(
      [...deleted].map(([execution_id, writer_id], i) => ({ execution_id, writer_id, change_seq: first + i })),
    );
    await tx.execute(sql`
      INSERT INTO execution_tombstones (project_id, execution_id, writer_id, change_seq)
      SELECT ${projectId}, r.execution_id, r.writer_id, r.change_seq
      FROM jsonb_to_recordset(${rows}::jsonb) AS r(execution_id text, writer_id text, change_seq bigint)
      ON CONFLICT (project_id, execution_id) DO UPDATE SET
        writer_id = excluded.writer_id, change_seq = excluded.change_seq, deleted_at = now()`);
  }
  await writeKeys(
    tx,
    projectId,
    { table: 'executions', column: 'change_seq', by: 'execution_id' },
    executionIds,
    first + deleted.size,
  );
}

/** Wake this process's change-feed polls of a project (after the transaction that stamped changes committed). */
export function announceChanges(db: PlaneDb, projectId: string): void {
  announce(db, 'changes', projectId);
}

/** The change feed's cursor: the last change seq seen, as a decimal string ('' or absent: from the start). */
export const changeCursor = (after: string | undefined): number => seqCursor(after, '/v1/changes');

/** A change feed entry as the feeds' statements read it (snake_case columns), both this feed's and a writer's. */
export interface ChangeRow {
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

/** The wire's entry of one change feed row. */
export const changeOf = (r: ChangeRow): ExecutionChange => ({
  executionId: r.execution_id,
  changeSeq: Number(r.change_seq),
  deleted: !!r.deleted,
  status: r.status,
  lastSeq: r.last_seq,
  lastWriterId: r.last_writer_id,
  pauseState: r.pause_state,
  pauseCheckpointId: r.pause_checkpoint_id,
  claimedBy: r.claimed_by,
});

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
  const items = rowsOf<ChangeRow>(got).map(changeOf);
  return { items, nextCursor: String(items.length ? items[items.length - 1].changeSeq : after) };
}

/** The change feed, for the shared long poll (long-poll.ts). */
const CHANGES: Feed<Awaited<ReturnType<typeof changeFeed>>> = {
  name: 'changes',
  page: changeFeed,
  newest: newestChange,
};

/** The project's newest change seq, or null when it has none (a writer's feed shares it: writer-changes.ts). */
export async function newestChange(db: PlaneDb, projectId: string): Promise<number | null> {
  const got = await db.execute(sql`
    SELECT greatest(
      (SELECT max(change_seq) FROM executions WHERE project_id = ${projectId}),
      (SELECT max(change_seq) FROM execution_tombstones WHERE project_id = ${projectId})) AS max`);
  const max = rowsOf<{ max: string | number | null }>(got)[0]?.max;
  return max == null ? null : Number(max);
}

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
