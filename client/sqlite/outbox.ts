/**
 * The SQLite store's outbox statements: the events the drain sends (in
 * outbox seq order, each checkpoint event joined to its row), the plane's
 * answers applied (synced, or quarantined with a reason), its stats and the
 * quarantined entries, paged by outbox seq. Events are queued by the writes
 * themselves, in their transactions (see the store's `queue`).
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
import type { Statements } from './statements.js';

/** The outbox's fixed statements (see statements.ts). */
export const outboxStatements = {
  insertOutbox: `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
  markSynced: `UPDATE outbox SET synced = 1 WHERE id = ? AND synced = 0`,
  markQuarantined: `UPDATE outbox SET synced = 1, sync_error = ? WHERE id = ? AND synced = 0`,
  // a row restored from a plane: an event the plane already holds (never queued, and it marks the run as held there)
  markRestored: `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at, synced) VALUES (?, 'checkpoint', ?, NULL, 0, ?, 1)
     ON CONFLICT (id) DO NOTHING`,
  // acknowledged or restored checkpoints, or a run named by the batch in flight when the drain last posted (noteSending)
  heldByPlane: `SELECT EXISTS (SELECT 1 FROM checkpoints c JOIN outbox o ON o.id = c.id AND o.synced = 1 AND o.sync_error IS NULL
                    WHERE c.execution_id = ?)
         OR EXISTS (SELECT 1 FROM waymark_meta m, json_each(m.value) j WHERE m.key = ? AND j.value = ?) AS held`,
  unsynced: `SELECT o.seq AS o_seq, o.id AS o_id, o.kind AS o_kind, o.execution_id AS o_execution_id,
            o.payload AS o_payload, o.bytes AS o_bytes, o.created_at AS o_created_at, c.*
     FROM outbox o LEFT JOIN checkpoints c ON o.kind = 'checkpoint' AND c.id = o.id
     WHERE o.synced = 0 ORDER BY o.seq LIMIT ?`,
  pendingStats: `SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes, min(created_at) AS oldest FROM outbox WHERE synced = 0`,
  quarantinedCount: `SELECT count(*) AS n FROM outbox WHERE sync_error IS NOT NULL`,
  lastQuarantined: `SELECT sync_error FROM outbox WHERE sync_error IS NOT NULL ORDER BY seq DESC LIMIT 1`,
  outboxSeq: `SELECT seq FROM outbox WHERE id = ?`,
};

export function fetchUnsynced(st: Statements, options: { limit: number; maxBytes: number }): C.OutboxEntry[] {
  const rows = st.unsynced.all(Math.max(1, options.limit)) as OutboxJoinRow[];
  return takeByBytes(rows.map(entryFromJoin), options.maxBytes);
}

/** Inside the caller's transaction: mark events synced, or synced with the plane's reason for refusing them. */
export function applyResults(st: Statements, synced: string[], quarantined: [string, string][]): void {
  for (const id of synced) st.markSynced.run(id);
  for (const [id, reason] of quarantined) st.markQuarantined.run(reason, id);
}

/** `heldByPlane`: a checkpoint of the run acknowledged or restored, or the run named by the batch in flight (`noteSending`). */
export function heldByPlane(st: Statements, executionId: string): boolean {
  return (st.heldByPlane.get(executionId, SENDING_KEY, executionId) as { held: number }).held === 1;
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
