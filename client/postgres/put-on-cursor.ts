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
 * inserts the checkpoint and its outbox event only then. Returns null when
 * another writer got there first; the caller takes the locked path.
 */
export async function putOnCursor(
  sql: Sql,
  t: Tables,
  store: { writerId: string; outbox: boolean },
  input: C.CheckpointInput & { id: string },
  prev: CodecCursor,
  lease?: C.Lease,
): Promise<RowText | null> {
  const seq = prev.seq + 1;
  const rt = buildRow(input, seq, prev, store.writerId);
  const r = rt.row;
  try {
    // fenced: the lease is renewed and the row written only while the lease is this one; a lost lease
    // writes nothing here and the locked path names it (a renewal without the row, on a stale cursor, is harmless)
    const done = await sql<{ n: number }[]>`
      WITH ${
        lease
          ? sql`l AS (
        UPDATE ${t.leases} SET expires_at = (extract(epoch from clock_timestamp()) * 1000)::bigint + ${lease.ttlMs}
        WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
        RETURNING 1
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
