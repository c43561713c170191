/**
 * The Postgres store's reads: rows, chains, pauses, executions, idempotency
 * entries and notes. Each is one statement (or two) on the handle it is
 * given; the store runs them through its read retry (a read is safe to try
 * again when the connection was lost under it).
 */
import type { ChainRow } from '../../shared/codec.js';
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import type * as C from '../checkpointer.js';
import {
  fromColumns,
  type ChainColumns,
  type CheckpointColumns,
  type IdempotencyColumns,
  type PendingColumns,
} from '../store/columns.js';
import { stateCondition, summaryFromRow, type ExecRow } from '../store/summary.js';
import { corruptOutputOf, type UsageColumns } from '../store/usage.js';
import { SQLSTATE } from '../../support/db-errors.js';
import { pgCode } from './executions.js';
import { serverNowMs } from './leases.js';
import { textList, type Sql, type Tables, type Tx } from './tables.js';

/** Rows base..seq of an execution, as the codec needs them (id, seq, state only). */
export async function readChain(
  sql: Sql | Tx,
  t: Tables,
  executionId: string,
  base: number,
  seq: number,
): Promise<ChainRow[]> {
  const rows = await sql<ChainColumns[]>`
    SELECT id, seq, state FROM ${t.checkpoints}
    WHERE execution_id = ${executionId} AND seq >= ${base} AND seq <= ${seq} ORDER BY seq`;
  return rows.map(fromColumns.chain);
}

export async function readPending(sql: Sql, t: Tables, executionId: string): Promise<PendingInterrupt | null> {
  const [row] = await sql<PendingColumns[]>`SELECT * FROM ${t.pending} WHERE execution_id = ${executionId}`;
  return row ? fromColumns.pending(row) : null;
}

// Listings page by execution id in byte order (COLLATE "C", as SQLite orders): the cursor's comparison names the
// same collation as the ORDER BY, or a database ordering text by a locale (en_US.UTF-8) would continue a page after
// its cursor in another order than the page was cut in, and skip ids for good (recoverRuns would never see a run).
export async function listPending(
  sql: Sql,
  t: Tables,
  options: { afterExecutionId?: string; limit?: number },
): Promise<PendingInterrupt[]> {
  const rows = await sql<PendingColumns[]>`
    SELECT * FROM ${t.pending} WHERE execution_id COLLATE "C" > ${options.afterExecutionId ?? ''}
    ORDER BY execution_id COLLATE "C" ${options.limit ? sql`LIMIT ${options.limit}` : sql``}`;
  return rows.map(fromColumns.pending);
}

export async function readLatest(sql: Sql, t: Tables, executionId: string): Promise<Checkpoint | null> {
  const [row] = await sql<CheckpointColumns[]>`
    SELECT * FROM ${t.checkpoints} WHERE execution_id = ${executionId} ORDER BY seq DESC LIMIT 1`;
  return row ? fromColumns.checkpoint(row) : null;
}

export async function readById(sql: Sql, t: Tables, id: string): Promise<Checkpoint | null> {
  const [row] = await sql<CheckpointColumns[]>`SELECT * FROM ${t.checkpoints} WHERE id = ${id}`;
  return row ? fromColumns.checkpoint(row) : null;
}

export async function listRows(
  sql: Sql,
  t: Tables,
  executionId: string,
  options: C.ListOptions,
): Promise<Checkpoint[]> {
  const rows = await sql<CheckpointColumns[]>`
    SELECT * FROM ${t.checkpoints} WHERE execution_id = ${executionId}
    ${options.afterSeq !== undefined ? sql`AND seq > ${options.afterSeq}` : sql``}
    ${options.beforeSeq !== undefined ? sql`AND seq < ${options.beforeSeq}` : sql``}
    ${options.step !== undefined ? sql`AND step = ${options.step}` : sql``}
    ORDER BY seq ${options.order === 'desc' ? sql`DESC` : sql`ASC`}
    ${options.limit !== undefined ? sql`LIMIT ${options.limit}` : sql``}`;
  return rows.map(fromColumns.checkpoint);
}

/** Executions in id order with their state, judged (lease liveness included) by the server's clock. */
export async function listExecutionSummaries(
  sql: Sql,
  t: Tables,
  options: { afterExecutionId?: string; limit?: number; state?: C.ExecutionState },
): Promise<C.ExecutionSummary[]> {
  const rows = await sql<(ExecRow & { now_ms: string })[]>`
    SELECT e.*, p.execution_id IS NOT NULL AS paused,
           l.holder AS lease_holder, l.epoch AS lease_epoch, l.expires_at AS lease_expires_at,
           ${serverNowMs(sql)} AS now_ms
    FROM ${t.executions} e
    LEFT JOIN ${t.pending} p ON p.execution_id = e.execution_id
    LEFT JOIN ${t.leases} l ON l.execution_id = e.execution_id
    WHERE e.execution_id COLLATE "C" > ${options.afterExecutionId ?? ''} ${options.state ? sql.unsafe(`AND ${stateCondition(options.state)}`) : sql``}
    ORDER BY e.execution_id COLLATE "C" ${options.limit ? sql`LIMIT ${options.limit}` : sql``}`;
  return rows.map((r) => summaryFromRow(r, Number(r.now_ms)));
}

export async function readIdempotent(
  sql: Sql,
  t: Tables,
  executionId: string,
  key: string,
): Promise<C.IdempotentLookup> {
  const [row] = await sql<IdempotencyColumns[]>`
    SELECT * FROM ${t.idempotency} WHERE execution_id = ${executionId} AND key = ${key}`;
  return row ? { hit: true, result: fromColumns.idempotency(row).result } : { hit: false };
}

export async function listIdempotency(sql: Sql, t: Tables, executionId: string): Promise<IdempotencyEntry[]> {
  const rows = await sql<IdempotencyColumns[]>`
    SELECT * FROM ${t.idempotency} WHERE execution_id = ${executionId} ORDER BY created_at, key`;
  return rows.map(fromColumns.idempotency);
}

/** A note set by `setMeta` (stored under `note:` so it never meets the store's own keys). */
export async function readNote(sql: Sql, t: Tables, key: string): Promise<string | null> {
  const [row] = await sql<{ value: string }[]>`SELECT value FROM ${t.meta} WHERE key = ${`note:${key}`}`;
  return row?.value ?? null;
}

/**
 * The usage arrays of the rows that carry one, of these runs (see
 * store/usage.ts). Cast to `json`, not `jsonb`: the text is only looked into,
 * never stored, so it need not be converted.
 */
export async function listUsageRows(sql: Sql, t: Tables, executionIds: readonly string[]): Promise<UsageColumns[]> {
  try {
    return await sql<UsageColumns[]>`
      SELECT id, execution_id, (node_output::json -> 'usage')::text AS usage FROM ${t.checkpoints}
      WHERE execution_id IN ${textList(sql, [...executionIds])} AND json_typeof(node_output::json -> 'usage') = 'array'`;
  } catch (e) {
    if (pgCode(e) !== SQLSTATE.invalidTextRepresentation) throw e;
    // a row's text is not JSON (the cast failed the statement): name it, as list() does; Postgres 15 has no per-row check
    const rows = await sql<{ id: string; node_output: string | null }[]>`
      SELECT id, node_output FROM ${t.checkpoints} WHERE execution_id IN ${textList(sql, [...executionIds])} ORDER BY execution_id, seq`;
    throw corruptOutputOf(rows, e) ?? e;
  }
}
