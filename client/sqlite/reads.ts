/**
 * The SQLite store's reads: rows, chains, pauses, executions, idempotency
 * entries and notes. Each is one statement (two for a corrupt usage row) on
 * the prepared statements it is given; a listing's text depends on its
 * options and is prepared once per variant (`st.variant`).
 */
import type { ChainRow } from '../../shared/codec.js';
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import type * as C from '../checkpointer.js';
import { CorruptRowError } from '../errors.js';
import {
  fromColumns,
  type ChainColumns,
  type CheckpointColumns,
  type IdempotencyColumns,
  type PendingColumns,
} from '../store/columns.js';
import { stateCondition, summaryFromRow, type ExecRow } from '../store/summary.js';
import type { UsageColumns } from '../store/usage.js';
import type { Statements } from './statements.js';

/** The reads' fixed statements (see statements.ts). */
export const readStatements = {
  getById: `SELECT * FROM checkpoints WHERE id = ?`,
  getBySeq: `SELECT * FROM checkpoints WHERE execution_id = ? AND seq = ?`,
  latest: `SELECT * FROM checkpoints WHERE execution_id = ? ORDER BY seq DESC LIMIT 1`,
  chain: `SELECT id, seq, state FROM checkpoints WHERE execution_id = ? AND seq >= ? AND seq <= ? ORDER BY seq`,
  // the usage arrays of the rows that carry one, of the runs a JSON array of ids names (see store/usage.ts)
  usageRows: `SELECT id, execution_id, json_extract(node_output, '$.usage') AS usage FROM checkpoints
     WHERE execution_id IN (SELECT value FROM json_each(?)) AND json_type(node_output, '$.usage') = 'array'`,
  // after usageRows failed on a row's text: the first row of those runs whose node_output is not JSON
  corruptOutput: `SELECT id FROM checkpoints
     WHERE execution_id IN (SELECT value FROM json_each(?)) AND node_output IS NOT NULL AND NOT json_valid(node_output) LIMIT 1`,
  getPending: `SELECT * FROM pending_interrupts WHERE execution_id = ?`,
  getIdem: `SELECT * FROM idempotency WHERE execution_id = ? AND key = ?`,
  listIdem: `SELECT * FROM idempotency WHERE execution_id = ? ORDER BY created_at, key`,
};

/** Rows base..seq of an execution, as the codec needs them (id, seq, state only). */
export function readChain(st: Statements, executionId: string, base: number, seq: number): ChainRow[] {
  return (st.chain.all(executionId, base, seq) as ChainColumns[]).map(fromColumns.chain);
}

export function readPending(st: Statements, executionId: string): PendingInterrupt | null {
  const row = st.getPending.get(executionId) as PendingColumns | undefined;
  return row ? fromColumns.pending(row) : null;
}

// Listings page by execution id in byte order (SQLite's BINARY collation), as the Postgres store's do by COLLATE "C"
export function listPending(
  st: Statements,
  options: { afterExecutionId?: string; limit?: number },
): PendingInterrupt[] {
  const rows = st
    .variant(
      `SELECT * FROM pending_interrupts WHERE execution_id > ? ORDER BY execution_id ${options.limit ? 'LIMIT ?' : ''}`,
    )
    .all(...[options.afterExecutionId ?? '', ...(options.limit ? [options.limit] : [])]) as PendingColumns[];
  return rows.map(fromColumns.pending);
}

export function readLatest(st: Statements, executionId: string): Checkpoint | null {
  const row = st.latest.get(executionId) as CheckpointColumns | undefined;
  return row ? fromColumns.checkpoint(row) : null;
}

export function readById(st: Statements, id: string): Checkpoint | null {
  const row = st.getById.get(id) as CheckpointColumns | undefined;
  return row ? fromColumns.checkpoint(row) : null;
}

export function listRows(st: Statements, executionId: string, options: C.ListOptions): Checkpoint[] {
  const where = ['execution_id = ?'];
  const args: unknown[] = [executionId];
  if (options.afterSeq !== undefined) {
    where.push('seq > ?');
    args.push(options.afterSeq);
  }
  if (options.beforeSeq !== undefined) {
    where.push('seq < ?');
    args.push(options.beforeSeq);
  }
  if (options.step !== undefined) {
    where.push('step = ?');
    args.push(options.step);
  }
  let sql = `SELECT * FROM checkpoints WHERE ${where.join(' AND ')} ORDER BY seq ${options.order === 'desc' ? 'DESC' : 'ASC'}`;
  if (options.limit !== undefined) {
    sql += ' LIMIT ?';
    args.push(options.limit);
  }
  return (st.variant(sql).all(...args) as CheckpointColumns[]).map(fromColumns.checkpoint);
}

/** Executions in id order with their state, judged (lease liveness included) by this process's clock. */
export function listExecutionSummaries(
  st: Statements,
  options: { afterExecutionId?: string; limit?: number; state?: C.ExecutionState },
): C.ExecutionSummary[] {
  const rows = st
    .variant(
      `SELECT e.*, p.execution_id IS NOT NULL AS paused,
              l.holder AS lease_holder, l.epoch AS lease_epoch, l.expires_at AS lease_expires_at
       FROM executions e
       LEFT JOIN pending_interrupts p ON p.execution_id = e.execution_id
       LEFT JOIN leases l ON l.execution_id = e.execution_id
       WHERE e.execution_id > ? ${options.state ? `AND ${stateCondition(options.state)}` : ''}
       ORDER BY e.execution_id ${options.limit ? 'LIMIT ?' : ''}`,
    )
    .all(...[options.afterExecutionId ?? '', ...(options.limit ? [options.limit] : [])]) as ExecRow[];
  const now = Date.now();
  return rows.map((r) => summaryFromRow(r, now));
}

export function readIdempotent(st: Statements, executionId: string, key: string): C.IdempotentLookup {
  const row = st.getIdem.get(executionId, key) as IdempotencyColumns | undefined;
  return row ? { hit: true, result: fromColumns.idempotency(row).result } : { hit: false };
}

export function listIdempotency(st: Statements, executionId: string): IdempotencyEntry[] {
  return (st.listIdem.all(executionId) as IdempotencyColumns[]).map(fromColumns.idempotency);
}

/** A note set by `setMeta` (stored under `note:` so it never meets the store's own keys). */
export function readNote(st: Statements, key: string): string | null {
  const row = st.getMeta.get(`note:${key}`) as { value: string } | undefined;
  return row?.value ?? null;
}

/** The usage arrays of the rows that carry one, of these runs (see store/usage.ts). */
export function listUsageRows(st: Statements, executionIds: readonly string[]): UsageColumns[] {
  const ids = JSON.stringify(executionIds);
  try {
    return st.usageRows.all(ids) as UsageColumns[];
  } catch (e) {
    // json_extract on a row whose text is not JSON fails the statement: name that row, as list() does
    const bad = st.corruptOutput.get(ids) as { id: string } | undefined;
    if (bad) throw new CorruptRowError(bad.id, 'column node_output is not JSON', e);
    throw e;
  }
}
