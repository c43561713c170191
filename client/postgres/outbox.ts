/**
 * The Postgres store's outbox statements: the events the drain sends (in
 * outbox seq order, each checkpoint event joined to its row), the plane's
 * answers applied (synced, or quarantined with a reason), its stats and the
 * quarantined entries, paged by outbox seq. Events are queued by the writes
 * themselves, in their transactions (see the store's `queueEvent`).
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
import { textList, type Sql, type Tables, type Tx } from './tables.js';

export async function fetchUnsynced(
  sql: Sql,
  t: Tables,
  options: { limit: number; maxBytes: number },
): Promise<C.OutboxEntry[]> {
  const rows = await sql<OutboxJoinRow[]>`
    SELECT o.seq AS o_seq, o.id AS o_id, o.kind AS o_kind, o.execution_id AS o_execution_id,
           o.payload AS o_payload, o.bytes AS o_bytes, o.created_at AS o_created_at, c.*
    FROM ${t.outbox} o LEFT JOIN ${t.checkpoints} c ON o.kind = 'checkpoint' AND c.id = o.id
    WHERE NOT o.synced ORDER BY o.seq LIMIT ${Math.max(1, options.limit)}`;
  return takeByBytes(rows.map(entryFromJoin), options.maxBytes);
}

/** Inside the caller's transaction: mark events synced, or synced with the plane's reason for refusing them. */
export async function applyResults(
  tx: Tx,
  t: Tables,
  synced: string[],
  quarantined: [string, string][],
): Promise<void> {
  if (synced.length) {
    await tx`UPDATE ${t.outbox} SET synced = true
      WHERE id IN ${textList(tx, synced)} AND NOT synced`;
  }
  for (const [id, reason] of quarantined) {
    await tx`UPDATE ${t.outbox} SET synced = true, sync_error = ${reason} WHERE id = ${id} AND NOT synced`;
  }
}

/** `heldByPlane`: a checkpoint of the run acknowledged or restored, or the run named by the batch in flight (`noteSending`). */
export async function heldByPlane(sql: Sql, t: Tables, executionId: string): Promise<boolean> {
  const [r] = await sql<{ held: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM ${t.checkpoints} c JOIN ${t.outbox} o ON o.id = c.id AND o.synced AND o.sync_error IS NULL
                   WHERE c.execution_id = ${executionId})
        OR coalesce((SELECT value FROM ${t.meta} WHERE key = ${SENDING_KEY})::jsonb ? ${executionId}, false) AS held`;
  return r.held;
}

/** `noteSending`: the runs of the batch a drain is about to post, replacing the last batch's. */
export async function noteSending(sql: Sql, t: Tables, executionIds: readonly string[]): Promise<void> {
  await sql`INSERT INTO ${t.meta} (key, value) VALUES (${SENDING_KEY}, ${sendingNote(executionIds)})
    ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
}

export async function outboxStats(sql: Sql, t: Tables): Promise<C.OutboxStats> {
  const [p] = await sql<{ n: string; bytes: string; oldest: string | null }[]>`
    SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes, min(created_at) AS oldest
    FROM ${t.outbox} WHERE NOT synced`;
  const [q] = await sql<{ n: string }[]>`SELECT count(*) AS n FROM ${t.outbox} WHERE sync_error IS NOT NULL`;
  const [last] = await sql<{ sync_error: string }[]>`
    SELECT sync_error FROM ${t.outbox} WHERE sync_error IS NOT NULL ORDER BY seq DESC LIMIT 1`;
  return outboxStatsOf(p, q.n, last?.sync_error ?? null);
}

export async function listQuarantined(
  sql: Sql,
  t: Tables,
  options: C.QuarantineListOptions,
): Promise<C.QuarantinedEntry[]> {
  let after = '0';
  if (options.afterId) {
    const [r] = await sql<{ seq: string }[]>`SELECT seq FROM ${t.outbox} WHERE id = ${options.afterId}`;
    after = r?.seq ?? '0';
  }
  const rows = await sql<QuarantinedColumns[]>`
    SELECT id, kind, execution_id, sync_error, created_at FROM ${t.outbox}
    WHERE sync_error IS NOT NULL AND seq > ${after} ${options.ids ? sql`AND id IN ${textList(sql, [...options.ids])}` : sql``}
    ORDER BY seq
    ${options.limit ? sql`LIMIT ${options.limit}` : sql``}`;
  return rows.map(quarantinedFromColumns);
}
