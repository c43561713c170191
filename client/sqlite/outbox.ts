/**
 * The SQLite store's outbox: the events the drain sends, the plane's answers
 * applied (synced, or quarantined with a reason), its stats and the
 * quarantined entries, paged by place. Events are queued by the writes
 * themselves, in their transactions.
 *
 * A checkpoint is its own event (migration 0007): its `event_seq` is its
 * place in the drain's order while it waits, negated once the plane holds the
 * row, NULL when never queued or quarantined. Every other event is a row of
 * `outbox_entries` (the outbox, renamed so that an older waymark cannot use
 * it), as are the quarantine's reasons and the acknowledgements and restores
 * recorded before that migration. Both draw their place from one count
 * (`NEXT_EVENT`, inside the write's transaction, which holds the file), so the
 * drain reads the two tables merged in the order the events were written.
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
import { checkpointInsert } from './executions.js';
import type { Statements } from './statements.js';

/**
 * The next event's place: past every waiting checkpoint and every outbox row, each read from its index's end, so
 * a write costs the same however many events wait. A place acknowledged may be drawn again: only the waiting ones
 * are ordered by it, and a quarantine's reason takes the place of an event still waiting, which no outbox row has.
 */
const NEXT_EVENT = `(SELECT max(
    coalesce((SELECT event_seq FROM checkpoints WHERE event_seq > 0 ORDER BY event_seq DESC LIMIT 1), 0),
    coalesce((SELECT seq FROM outbox_entries ORDER BY seq DESC LIMIT 1), 0)) + 1)`;

/** The outbox's fixed statements (see statements.ts). */
export const outboxStatements = {
  insertOutbox: `INSERT INTO outbox_entries (seq, id, kind, execution_id, payload, bytes, created_at) VALUES (${NEXT_EVENT}, ?, ?, ?, ?, ?, ?)`,
  // a checkpoint with its event waiting: checkpointValues, then the event's size
  insertQueuedCheckpoint: checkpointInsert({ event_seq: NEXT_EVENT, event_bytes: '?' }),
  // a row restored from a plane: held there, never queued
  insertRestoredCheckpoint: checkpointInsert({ event_seq: '-1' }),
  // a batch's acknowledged ids (a JSON array) in each table; negating a place seldom changes the integer's stored
  // size, so SQLite mostly rewrites the record where it lies
  markSynced: `UPDATE outbox_entries SET synced = 1 WHERE id IN (SELECT value FROM json_each(?)) AND synced = 0`,
  markCheckpointsSynced: `UPDATE checkpoints SET event_seq = -event_seq WHERE id IN (SELECT value FROM json_each(?)) AND event_seq > 0`,
  markQuarantined: `UPDATE outbox_entries SET synced = 1, sync_error = ? WHERE id = ? AND synced = 0`,
  // a refused checkpoint: the reason at its event's place, for the operator's list, and the row no longer waiting
  recordCheckpointQuarantined: `INSERT INTO outbox_entries (seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error)
     SELECT event_seq, id, 'checkpoint', execution_id, NULL, event_bytes, created_at, 1, ? FROM checkpoints WHERE id = ? AND event_seq > 0`,
  unqueueCheckpoint: `UPDATE checkpoints SET event_seq = NULL WHERE id = ? AND event_seq > 0`,
  // acknowledged or restored checkpoints (before migration 0007 marked as outbox rows), or a run named by the batch in
  // flight when the drain last posted (noteSending)
  heldByPlane: `SELECT EXISTS (SELECT 1 FROM checkpoints c INDEXED BY checkpoints_held WHERE c.execution_id = ? AND c.event_seq < 0)
         OR EXISTS (SELECT 1 FROM checkpoints c JOIN outbox_entries o ON o.id = c.id AND o.synced = 1 AND o.sync_error IS NULL
                    WHERE c.execution_id = ?)
         OR EXISTS (SELECT 1 FROM waymark_meta m, json_each(m.value) j WHERE m.key = ? AND j.value = ?) AS held`,
  // the first `limit` waiting places of each table, each from its index (a place and a rowid: no row read), merged
  // and cut to `limit`; then the chosen events' rows, each found by its rowid, and the checkpoint of an outbox row
  // that names one (an event queued before migration 0007 whose row is gone: none is found)
  unsynced: `WITH w AS (
       SELECT * FROM (SELECT seq AS place, seq AS rid, 0 AS on_row FROM outbox_entries WHERE synced = 0 ORDER BY seq LIMIT ?)
       UNION ALL
       SELECT * FROM (SELECT event_seq, rowid, 1 FROM checkpoints WHERE event_seq > 0 ORDER BY event_seq LIMIT ?)
       ORDER BY place LIMIT ?)
     SELECT w.place AS o_seq, o.id AS o_id, o.kind AS o_kind, o.execution_id AS o_execution_id, o.payload AS o_payload,
       o.bytes AS o_bytes, o.created_at AS o_created_at, c.*
     FROM w JOIN outbox_entries o ON o.seq = w.rid LEFT JOIN checkpoints c ON o.kind = 'checkpoint' AND c.id = o.id
     WHERE w.on_row = 0
     UNION ALL
     SELECT w.place, c.id, 'checkpoint', c.execution_id, NULL, c.event_bytes, c.created_at, c.*
     FROM w JOIN checkpoints c ON c.rowid = w.rid
     WHERE w.on_row = 1
     ORDER BY o_seq`,
  // the checkpoints' part from their index alone
  pendingStats: `SELECT sum(n) AS n, coalesce(sum(bytes), 0) AS bytes, min(oldest) AS oldest FROM (
       SELECT count(*) AS n, sum(bytes) AS bytes, min(created_at) AS oldest FROM outbox_entries WHERE synced = 0
       UNION ALL
       SELECT count(*), sum(event_bytes), min(created_at) FROM checkpoints WHERE event_seq > 0)`,
  quarantinedCount: `SELECT count(*) AS n FROM outbox_entries WHERE sync_error IS NOT NULL`,
  lastQuarantined: `SELECT sync_error FROM outbox_entries WHERE sync_error IS NOT NULL ORDER BY seq DESC LIMIT 1`,
  outboxSeq: `SELECT seq FROM outbox_entries WHERE id = ?`,
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
      `SELECT id, kind, execution_id, sync_error, created_at FROM outbox_entries
       WHERE sync_error IS NOT NULL AND seq > ? ${options.ids ? 'AND id IN (SELECT value FROM json_each(?))' : ''}
       ORDER BY seq ${options.limit ? 'LIMIT ?' : ''}`,
    )
    .all(
      ...[after, ...(options.ids ? [JSON.stringify(options.ids)] : []), ...(options.limit ? [options.limit] : [])],
    ) as QuarantinedColumns[];
  return rows.map(quarantinedFromColumns);
}
