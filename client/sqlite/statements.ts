/**
 * The SQLite store's fixed statements, prepared once at open (after the
 * migrations made the tables). Statements whose text depends on a call's
 * options are prepared on first use by the store (`variant`).
 */
import type Database from 'better-sqlite3';
import { CHECKPOINT_COLUMNS, EXECUTION_COLUMNS } from '../store/columns.js';
import { PRUNE_CHUNK } from '../store/prune.js';

/** A prepared statement, under a name this module's declarations can write out. */
export interface SqliteStatement extends Database.Statement {}

const placeholders = (columns: readonly string[]) => columns.map(() => '?').join(', ');

/** Every fixed statement of the store, by name. */
export type Statements = ReturnType<typeof prepareStatements>;

/** Prepare every fixed statement on `db`. */
export function prepareStatements(db: Database.Database) {
  // typed by a name of this module, so the declaration of this function's result can be written out
  const prepare = (sql: string): SqliteStatement => db.prepare(sql);
  return {
    getMeta: prepare(`SELECT value FROM waymark_meta WHERE key = ?`),
    insertMeta: prepare(`INSERT INTO waymark_meta (key, value) VALUES (?, ?)`),
    setMeta: prepare(
      `INSERT INTO waymark_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    ),
    getExec: prepare(`SELECT next_seq, last_id FROM executions WHERE execution_id = ?`),
    // bound positionally with executionValues / checkpointValues (store/columns.ts), in their columns' order
    upsertExec: prepare(
      `INSERT INTO executions (${EXECUTION_COLUMNS.join(', ')}) VALUES (${placeholders(EXECUTION_COLUMNS)})
       ON CONFLICT (execution_id) DO UPDATE SET
         next_seq = excluded.next_seq, last_id = excluded.last_id, last_node_id = excluded.last_node_id,
         last_step = excluded.last_step, last_status = excluded.last_status, updated_at = excluded.updated_at
       WHERE excluded.next_seq > executions.next_seq`,
    ),
    insertCheckpoint: prepare(
      `INSERT INTO checkpoints (${CHECKPOINT_COLUMNS.join(', ')}) VALUES (${placeholders(CHECKPOINT_COLUMNS)})`,
    ),
    insertOutbox: prepare(
      `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    getById: prepare(`SELECT * FROM checkpoints WHERE id = ?`),
    getBySeq: prepare(`SELECT * FROM checkpoints WHERE execution_id = ? AND seq = ?`),
    latest: prepare(`SELECT * FROM checkpoints WHERE execution_id = ? ORDER BY seq DESC LIMIT 1`),
    chain: prepare(
      `SELECT id, seq, state FROM checkpoints WHERE execution_id = ? AND seq >= ? AND seq <= ? ORDER BY seq`,
    ),
    // the usage arrays of the rows that carry one, of the runs a JSON array of ids names (see store/usage.ts)
    usageRows: prepare(
      `SELECT id, execution_id, json_extract(node_output, '$.usage') AS usage FROM checkpoints
       WHERE execution_id IN (SELECT value FROM json_each(?)) AND json_type(node_output, '$.usage') = 'array'`,
    ),
    // after usageRows failed on a row's text: the first row of those runs whose node_output is not JSON
    corruptOutput: prepare(
      `SELECT id FROM checkpoints
       WHERE execution_id IN (SELECT value FROM json_each(?)) AND node_output IS NOT NULL AND NOT json_valid(node_output) LIMIT 1`,
    ),
    insertPending: prepare(
      `INSERT INTO pending_interrupts (execution_id, checkpoint_id, node_id, reason, context, agent_path, created_at)
       VALUES (@execution_id, @checkpoint_id, @node_id, @reason, @context, @agent_path, @created_at)`,
    ),
    claimPending: prepare(`DELETE FROM pending_interrupts WHERE execution_id = ? AND checkpoint_id = ? RETURNING *`),
    getPending: prepare(`SELECT * FROM pending_interrupts WHERE execution_id = ?`),
    getIdem: prepare(`SELECT * FROM idempotency WHERE execution_id = ? AND key = ?`),
    insertIdem: prepare(
      `INSERT INTO idempotency (execution_id, key, result, created_at) VALUES (@execution_id, @key, @result, @created_at)
       ON CONFLICT (execution_id, key) DO NOTHING`,
    ),
    listIdem: prepare(`SELECT * FROM idempotency WHERE execution_id = ? ORDER BY created_at, key`),
    markSynced: prepare(`UPDATE outbox SET synced = 1 WHERE id = ? AND synced = 0`),
    markQuarantined: prepare(`UPDATE outbox SET synced = 1, sync_error = ? WHERE id = ? AND synced = 0`),
    // a row restored from a plane: an event the plane already holds (never queued, and it marks the run as held there)
    markRestored: prepare(
      `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at, synced) VALUES (?, 'checkpoint', ?, NULL, 0, ?, 1)
       ON CONFLICT (id) DO NOTHING`,
    ),
    // acknowledged or restored checkpoints, or a run named by the batch in flight when the drain last posted (noteSending)
    heldByPlane: prepare(
      `SELECT EXISTS (SELECT 1 FROM checkpoints c JOIN outbox o ON o.id = c.id AND o.synced = 1 AND o.sync_error IS NULL
                      WHERE c.execution_id = ?)
           OR EXISTS (SELECT 1 FROM waymark_meta m, json_each(m.value) j WHERE m.key = ? AND j.value = ?) AS held`,
    ),
    getLease: prepare(`SELECT * FROM leases WHERE execution_id = ?`),
    upsertLease: prepare(
      `INSERT INTO leases (execution_id, holder, epoch, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (execution_id) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch, expires_at = excluded.expires_at`,
    ),
    renewLease: prepare(`UPDATE leases SET expires_at = ? WHERE execution_id = ? AND holder = ? AND epoch = ?`),
    releaseLease: prepare(
      `UPDATE leases SET holder = NULL, expires_at = 0 WHERE execution_id = ? AND holder = ? AND epoch = ?`,
    ),
    clearLease: prepare(`UPDATE leases SET holder = NULL, expires_at = 0 WHERE execution_id = ?`),
    cancelledMarker: prepare(
      `SELECT c.* FROM executions e JOIN checkpoints c ON c.id = e.last_id
       WHERE e.execution_id = ? AND e.last_step = 'run_end' AND e.last_status = 'cancelled'`,
    ),
    // an execution's outbox events: checkpoint events through the checkpoints' index, the other kinds through their own
    dropCheckpointEvents: prepare(`DELETE FROM outbox WHERE id IN (SELECT id FROM checkpoints WHERE execution_id = ?)`),
    dropOtherEvents: prepare(`DELETE FROM outbox WHERE execution_id = ? AND kind <> 'checkpoint'`),
    dropUnsentCheckpointEvents: prepare(
      `DELETE FROM outbox WHERE id IN (SELECT id FROM checkpoints WHERE execution_id = ?) AND synced = 0`,
    ),
    dropUnsentOtherEvents: prepare(`DELETE FROM outbox WHERE execution_id = ? AND kind <> 'checkpoint' AND synced = 0`),
    // a local-only delete keeps a deletion of the run queued earlier: the plane must still hear of it
    dropUnsentOtherEventsButDeletions: prepare(
      `DELETE FROM outbox WHERE execution_id = ? AND kind NOT IN ('checkpoint', 'execution_deleted') AND synced = 0`,
    ),
    deleteCheckpoints: prepare(`DELETE FROM checkpoints WHERE execution_id = ?`),
    deletePending: prepare(`DELETE FROM pending_interrupts WHERE execution_id = ?`),
    deleteIdem: prepare(`DELETE FROM idempotency WHERE execution_id = ?`),
    deleteExec: prepare(`DELETE FROM executions WHERE execution_id = ?`),
    deleteLease: prepare(`DELETE FROM leases WHERE execution_id = ?`),
    prunable: prepare(
      `SELECT e.execution_id,
              (EXISTS (SELECT 1 FROM checkpoints c JOIN outbox o ON o.id = c.id AND o.synced = 0 WHERE c.execution_id = e.execution_id)
               OR EXISTS (SELECT 1 FROM outbox o WHERE o.execution_id = e.execution_id AND o.kind <> 'checkpoint' AND o.synced = 0)) AS unsynced
       FROM executions e
       WHERE e.last_step = 'run_end' AND e.last_status IN ('completed', 'failed', 'cancelled') AND e.updated_at < ?
         AND NOT EXISTS (SELECT 1 FROM pending_interrupts p WHERE p.execution_id = e.execution_id)
         AND e.execution_id > ?
       ORDER BY e.execution_id LIMIT ${PRUNE_CHUNK}`,
    ),
    unsynced: prepare(
      `SELECT o.seq AS o_seq, o.id AS o_id, o.kind AS o_kind, o.execution_id AS o_execution_id,
              o.payload AS o_payload, o.bytes AS o_bytes, o.created_at AS o_created_at, c.*
       FROM outbox o LEFT JOIN checkpoints c ON o.kind = 'checkpoint' AND c.id = o.id
       WHERE o.synced = 0 ORDER BY o.seq LIMIT ?`,
    ),
    pendingStats: prepare(
      `SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes, min(created_at) AS oldest FROM outbox WHERE synced = 0`,
    ),
    quarantinedCount: prepare(`SELECT count(*) AS n FROM outbox WHERE sync_error IS NOT NULL`),
    lastQuarantined: prepare(`SELECT sync_error FROM outbox WHERE sync_error IS NOT NULL ORDER BY seq DESC LIMIT 1`),
    outboxSeq: prepare(`SELECT seq FROM outbox WHERE id = ?`),
  };
}
