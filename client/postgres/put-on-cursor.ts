/**
 * The Postgres store's fast path for a put: when this store wrote the
 * execution's newest row itself, the next row is built from the cached
 * cursor and written by one statement (no BEGIN, lock or COMMIT round trips).
 * The store falls back to its locked path when this answers null.
 */
import type { CodecCursor } from '../../shared/codec.js';
import type * as C from '../checkpointer.js';
import { DuplicateIdError } from '../errors.js';
import { buildRow, canonicalTime, type RowText } from '../store/rows.js';
import { SQLSTATE } from '../../support/db-errors.js';
import { constraintOf, pgCode } from './executions.js';
import type { Sql, Tables } from './tables.js';

/**
 * One round trip instead of four (BEGIN, lock, writes, COMMIT) when this
 * store wrote the execution's newest row itself: the row is built from the
 * cached cursor and written by one statement that advances the execution
 * only if it is still at that row (compare-and-set under the row lock), and
 * inserts the checkpoint and its outbox event only then. A lease is renewed
 * in the statement, or with `renew` false only checked (see `Renewals`).
 * Returns null when another writer got there first or the lease is not this
 * one; the caller takes the locked path.
 */
export async function putOnCursor(
  sql: Sql,
  t: Tables,
  store: { writerId: string; outbox: boolean },
  input: C.CheckpointInput & { id: string },
  prev: CodecCursor,
  lease?: C.Lease,
  renew = true,
): Promise<RowText | null> {
  const seq = prev.seq + 1;
  const rt = buildRow(input, seq, prev, store.writerId);
  const r = rt.row;
  try {
    // fenced: the row is written only while the lease is this one, the lease renewed (`renew`) or share-locked
    // until the commit, so an acquisition waits for the row or the row sees it; a lost lease writes nothing
    // here and the locked path names it (a renewal without the row, on a stale cursor, is harmless)
    const done = await sql<{ n: number }[]>`
      WITH ${
        lease
          ? renew
            ? sql`l AS (
        UPDATE ${t.leases} SET expires_at = (extract(epoch from clock_timestamp()) * 1000)::bigint + ${lease.ttlMs}
        WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
        RETURNING 1
      ), `
            : sql`l AS (
        SELECT 1 FROM ${t.leases}
        WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
        FOR SHARE
      ), `
          : sql``
      }ex AS (
        UPDATE ${t.executions} SET next_seq = ${seq + 1}, last_id = ${r.id}, last_node_id = ${r.nodeId},
          last_step = ${r.step}, last_status = ${r.status}, updated_at = ${r.createdAt}
        WHERE execution_id = ${r.executionId} AND next_seq = ${seq} AND last_id = ${prev.id}
          ${lease ? sql`AND EXISTS (SELECT 1 FROM l)` : sql``}
        ${typeof input.prevId === 'string' && input.prevId !== prev.id ? sql`AND EXISTS (SELECT 1 FROM ${t.checkpoints} WHERE id = ${input.prevId} AND execution_id = ${r.executionId})` : sql``}
        RETURNING 1
      ), c AS (
        INSERT INTO ${t.checkpoints} (id, execution_id, seq, node_id, turn, step, status, agent_path, parent_id,
          state, node_input, node_output, interrupt_reason, interrupt_context, created_at, writer_id)
        SELECT ${r.id}, ${r.executionId}, ${seq}, ${r.nodeId}, ${r.turn}, ${r.step}, ${r.status}, ${r.agentPath},
          ${r.parentId}, ${rt.stateText}, ${rt.nodeInput}, ${rt.nodeOutput}, ${r.interruptReason},
          ${rt.interruptContext}, ${r.createdAt}, ${r.writerId}
        FROM ex
        RETURNING id
      )${
        store.outbox
          ? sql`, o AS (
        INSERT INTO ${t.outbox} (id, kind, execution_id, payload, bytes, created_at)
        SELECT id, 'checkpoint', ${r.executionId}, NULL, ${rt.bytes}, ${canonicalTime()} FROM c
        RETURNING 1
      )`
          : sql``
      }
      SELECT count(*)::int AS n FROM c`;
    return done[0].n === 1 ? rt : null;
  } catch (e) {
    if (pgCode(e) === SQLSTATE.uniqueViolation && constraintOf(e) === 'checkpoints_pkey')
      throw new DuplicateIdError(r.id);
    throw e;
  }
}

/** One put of a batch for `putManyOnCursor`: as `putOnCursor` takes it. */
export interface CursorPut {
  input: C.CheckpointInput & { id: string };
  prev: CodecCursor;
  lease?: C.Lease;
  renew: boolean;
}

/**
 * `putOnCursor` for puts of several executions (at most one each) in one
 * statement, so one commit: each row is written only under the same
 * conditions as alone (the execution still at the cached row, the lease its
 * writer's), and the answer is per put: its row text, null for the locked
 * path, or the error building it threw (too large, not JSON). A statement
 * refused as a whole (a duplicate id, a value the server refuses) throws, and
 * the caller sends each put alone; a lost connection throws as it is.
 */
export async function putManyOnCursor(
  sql: Sql,
  t: Tables,
  store: { writerId: string; outbox: boolean },
  puts: readonly CursorPut[],
): Promise<(RowText | null | { error: unknown })[]> {
  const built = puts.map((p) => {
    try {
      return buildRow(p.input, p.prev.seq + 1, p.prev, store.writerId);
    } catch (error) {
      return { error };
    }
  });
  const rows = puts.flatMap((p, k) => {
    const rt = built[k];
    if ('error' in rt) return [];
    const r = rt.row;
    return [
      {
        id: r.id,
        execution_id: r.executionId,
        seq: r.seq,
        prev_id: p.prev.id,
        // a put naming another row than the cached newest: that row must be this execution's
        check_prev: typeof p.input.prevId === 'string' && p.input.prevId !== p.prev.id ? p.input.prevId : null,
        node_id: r.nodeId,
        turn: r.turn,
        step: r.step,
        status: r.status,
        agent_path: r.agentPath,
        parent_id: r.parentId,
        state: rt.stateText,
        node_input: rt.nodeInput,
        node_output: rt.nodeOutput,
        interrupt_reason: r.interruptReason,
        interrupt_context: rt.interruptContext,
        created_at: r.createdAt,
        writer_id: r.writerId,
        bytes: rt.bytes,
        holder: p.lease?.holder ?? null,
        epoch: p.lease?.epoch ?? null,
        ttl_ms: p.lease?.ttlMs ?? null,
        renew: p.renew,
      },
    ];
  });
  const done = new Set<string>();
  if (rows.length > 0) {
    const at = canonicalTime();
    // lease, then execution, per put (each execution's row is updated only once its lease row is locked)
    const ids = await sql<{ id: string }[]>`
      WITH i AS (
        SELECT * FROM json_to_recordset((${JSON.stringify(rows)}::text)::json) AS i(id text, execution_id text, seq integer,
          prev_id text, check_prev text, node_id text, turn integer, step text, status text, agent_path text,
          parent_id text, state text, node_input text, node_output text, interrupt_reason text, interrupt_context text,
          created_at text, writer_id text, bytes integer, holder text, epoch integer, ttl_ms integer, renew boolean)
      ), renewed AS (
        UPDATE ${t.leases} l SET expires_at = (extract(epoch from clock_timestamp()) * 1000)::bigint + i.ttl_ms
        FROM i WHERE i.renew AND l.execution_id = i.execution_id AND l.holder = i.holder AND l.epoch = i.epoch
        RETURNING l.execution_id
      ), checked AS (
        SELECT l.execution_id FROM ${t.leases} l JOIN i ON l.execution_id = i.execution_id
        WHERE i.holder IS NOT NULL AND NOT i.renew AND l.holder = i.holder AND l.epoch = i.epoch
        FOR SHARE OF l
      ), ex AS (
        UPDATE ${t.executions} e SET next_seq = i.seq + 1, last_id = i.id, last_node_id = i.node_id,
          last_step = i.step, last_status = i.status, updated_at = i.created_at
        FROM i
        WHERE e.execution_id = i.execution_id AND e.next_seq = i.seq AND e.last_id = i.prev_id
          AND (i.holder IS NULL
            OR EXISTS (SELECT 1 FROM renewed WHERE renewed.execution_id = i.execution_id)
            OR EXISTS (SELECT 1 FROM checked WHERE checked.execution_id = i.execution_id))
          AND (i.check_prev IS NULL
            OR EXISTS (SELECT 1 FROM ${t.checkpoints} p WHERE p.id = i.check_prev AND p.execution_id = i.execution_id))
        RETURNING e.execution_id
      ), c AS (
        INSERT INTO ${t.checkpoints} (id, execution_id, seq, node_id, turn, step, status, agent_path, parent_id,
          state, node_input, node_output, interrupt_reason, interrupt_context, created_at, writer_id)
        SELECT i.id, i.execution_id, i.seq, i.node_id, i.turn, i.step, i.status, i.agent_path, i.parent_id,
          i.state, i.node_input, i.node_output, i.interrupt_reason, i.interrupt_context, i.created_at, i.writer_id
        FROM i JOIN ex ON ex.execution_id = i.execution_id
        RETURNING id, execution_id
      )${
        store.outbox
          ? sql`, o AS (
        INSERT INTO ${t.outbox} (id, kind, execution_id, payload, bytes, created_at)
        SELECT c.id, 'checkpoint', c.execution_id, NULL, i.bytes, ${at} FROM c JOIN i ON i.id = c.id
        RETURNING 1
      )`
          : sql``
      }
      SELECT id FROM c`;
    for (const { id } of ids) done.add(id);
  }
  return built.map((rt) => ('error' in rt ? rt : done.has(rt.row.id) ? rt : null));
}
