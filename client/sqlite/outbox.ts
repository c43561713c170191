/**
 * The SQLite store's outbox statements: the events the drain sends, the
 * plane's answers applied (synced, or quarantined with a reason), its stats
 * and the quarantined entries, paged by outbox seq. Events are queued by the
 * writes themselves, in their transactions (see the store's `queue`).
 *
 * A checkpoint is its own event (migration 0007): its `event_seq` is its
 * place in the drain's order while it waits, negated once the plane holds
 * the row, NULL when never queued or quarantined. Every other event is an
 * `outbox` row. Both draw their place from one count (`NEXT_EVENT`, inside
 * the write's transaction, which holds the file), so the drain reads the two
 * tables merged in the order the events were written.
 */
import type * as C from '../checkpointer.js';
import {
  entryFromJoin,
  outboxStatsOf,
  quarantinedFromColumns,
  SENDING_KEY,
  sendingNote,
  takeByBytes,
  type OutboxJoinRow,
  type QuarantinedColumns,
} from '../store/outbox.js';
import { CHECKPOINT_COLUMNS } from '../store/columns.js';
import type { Statements } from './statements.js';

/**
 * The next event's place: past every waiting checkpoint event and every outbox row (each read from its
 * index's end). A place once acknowledged may be drawn again; only the order of the waiting ones matters.
 */
const NEXT_EVENT = `(SELECT max(
    coalesce((SELECT event_seq FROM checkpoints WHERE event_seq > 0 ORDER BY event_seq DESC LIMIT 1), 0),
    coalesce((SELECT seq FROM outbox ORDER BY seq DESC LIMIT 1), 0)) + 1)`;

/** The columns of one waiting event, as `OutboxJoinRow` names them (`c.*`: its checkpoint, for a checkpoint event). */
const OUTBOX_EVENT = `o.seq AS o_seq, o.id AS o_id, o.kind AS o_kind, o.execution_id AS o_execution_id,
       o.payload AS o_payload, o.bytes AS o_bytes, o.created_at AS o_created_at, c.*`;
const CHECKPOINT_EVENT = `c.event_seq AS o_seq, c.id AS o_id, 'checkpoint' AS o_kind, c.execution_id AS o_execution_id,
       NULL AS o_payload, c.event_bytes AS o_bytes, c.created_at AS o_created_at, c.*`;

/** The outbox's fixed statements (see statements.ts). */
export const outboxStatements = {
  insertOutbox: `INSERT INTO outbox (seq, id, kind, execution_id, payload, bytes, created_at) VALUES (${NEXT_EVENT}, ?, ?, ?, ?, ?, ?)`,
  // a checkpoint with its event waiting: checkpointValues, then the event's size
  insertQueuedCheckpoint: `INSERT INTO checkpoints (${CHECKPOINT_COLUMNS.join(', ')}, event_seq, event_bytes)
     VALUES (${CHECKPOINT_COLUMNS.map(() => '?').join(', ')}, ${NEXT_EVENT}, ?)`,
  // the acknowledged ids of a batch (a JSON array), in each table; a checkpoint's place is negated: the same size of
  // integer, so its row is rewritten where it lies
  markSynced: `UPDATE outbox SET synced = 1 WHERE id IN (SELECT value FROM json_each(?)) AND synced = 0`,
  markCheckpointsSynced: `UPDATE checkpoints SET event_seq = -event_seq WHERE id IN (SELECT value FROM json_each(?)) AND event_seq > 0`,
  markQuarantined: `UPDATE outbox SET synced = 1, sync_error = ? WHERE id = ? AND synced = 0`,
  // a refused checkpoint event: its reason kept as an outbox row at the event's place, the row no longer waiting
  recordCheckpointQuarantined: `INSERT INTO outbox (seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error)
     SELECT event_seq, id, 'checkpoint', execution_id, NULL, event_bytes, created_at, 1, ? FROM checkpoints WHERE id = ? AND event_seq > 0`,
  unqueueCheckpoint: `UPDATE checkpoints SET event_seq = NULL WHERE id = ? AND event_seq > 0`,
  // a row restored from a plane: held there (never queued, and it marks the run as held)
  markRestored: `UPDATE checkpoints SET event_seq = -1 WHERE id = ? AND event_seq IS NULL`,
  // acknowledged or restored checkpoints (an older waymark writing this file marks them in the outbox), or a run
  // named by the batch in flight when the drain last posted (noteSending)
  heldByPlane: `SELECT EXISTS (SELECT 1 FROM checkpoints c WHERE c.execution_id = ? AND c.event_seq < 0)
         OR EXISTS (SELECT 1 FROM checkpoints c JOIN outbox o ON o.id = c.id AND o.synced = 1 AND o.sync_error IS NULL
                    WHERE c.execution_id = ?)
         OR EXISTS (SELECT 1 FROM waymark_meta m, json_each(m.value) j WHERE m.key = ? AND j.value = ?) AS held`,
  // the first `limit` of each table's waiting events (each from its index), merged
  unsynced: `SELECT * FROM (SELECT ${OUTBOX_EVENT} FROM outbox o LEFT JOIN checkpoints c ON o.kind = 'checkpoint' AND c.id = o.id
       WHERE o.synced = 0 ORDER BY o.seq LIMIT ?)
     UNION ALL
     SELECT * FROM (SELECT ${CHECKPOINT_EVENT} FROM checkpoints c WHERE c.event_seq > 0 ORDER BY c.event_seq LIMIT ?)
     ORDER BY o_seq LIMIT ?`,
  pendingStats: `SELECT sum(n) AS n, coalesce(sum(bytes), 0) AS bytes, min(oldest) AS oldest FROM (
       SELECT count(*) AS n, sum(bytes) AS bytes, min(created_at) AS oldest FROM outbox WHERE synced = 0
       UNION ALL
       SELECT count(*), sum(event_bytes), min(created_at) FROM checkpoints WHERE event_seq > 0)`,
  quarantinedCount: `SELECT count(*) AS n FROM outbox WHERE sync_error IS NOT NULL`,
  lastQuarantined: `SELECT sync_error FROM outbox WHERE sync_error IS NOT NULL ORDER BY seq DESC LIMIT 1`,
  outboxSeq: `SELECT seq FROM outbox WHERE id = ?`,
};

export function fetchUnsynced(st: Statements, options: { limit: number; maxBytes: number }): C.OutboxEntry[] {
  const limit = Math.max(1, options.limit);
  const rows = st.unsynced.all(limit, limit, limit) as OutboxJoinRow[];
  return takeByBytes(rows.map(entryFromJoin), options.maxBytes);
}

/** Inside the caller's transaction: mark events synced, or synced with the plane's reason for refusing them. */
export function applyResults(st: Statements, synced: string[], quarantined: [string, string][]): void {
  if (synced.length > 0) {
    const ids = JSON.stringify(synced);
    st.markCheckpointsSynced.run(ids);
    st.markSynced.run(ids);
  }
  for (const [id, reason] of quarantined) {
    if (st.recordCheckpointQuarantined.run(reason, id).changes > 0) st.unqueueCheckpoint.run(id);
    else st.markQuarantined.run(reason, id);
  }
}

/** `heldByPlane`: a checkpoint of the run acknowledged or restored, or the run named by the batch in flight (`noteSending`). */
export function heldByPlane(st: Statements, executionId: string): boolean {
  return (st.heldByPlane.get(executionId, executionId, SENDING_KEY, executionId) as { held: number }).held === 1;
}

/** `noteSending`: the runs of the batch a drain is about to post, replacing the last batch's. */
export function noteSending(st: Statements, executionIds: readonly string[]): void {
  st.setMeta.run(SENDING_KEY, sendingNote(executionIds));
}

export function outboxStats(st: Statements): C.OutboxStats {
  const p = st.pendingStats.get() as { n: number; bytes: number; oldest: string | null };
  const q = st.quarantinedCount.get() as { n: number };
  const last = st.lastQuarantined.get() as { sync_error: string } | undefined;
  return outboxStatsOf(p, q.n, last?.sync_error ?? null);
}

export function listQuarantined(st: Statements, options: C.QuarantineListOptions): C.QuarantinedEntry[] {
  const after = options.afterId ? ((st.outboxSeq.get(options.afterId) as { seq: number } | undefined)?.seq ?? 0) : 0;
  const rows = st
    .variant(
      `SELECT id, kind, execution_id, sync_error, created_at FROM outbox
       WHERE sync_error IS NOT NULL AND seq > ? ${options.ids ? 'AND id IN (SELECT value FROM json_each(?))' : ''}
       ORDER BY seq ${options.limit ? 'LIMIT ?' : ''}`,
    )
    .all(
      ...[after, ...(options.ids ? [JSON.stringify(options.ids)] : []), ...(options.limit ? [options.limit] : [])],
    ) as QuarantinedColumns[];
  return rows.map(quarantinedFromColumns);
}
