/**
 * The Postgres store's fast path for a put: when this store wrote (or read)
 * the execution's newest row, the next row is built from the cached cursor
 * and written by one statement, with no BEGIN, lock or COMMIT round trips;
 * the puts of several runs go in one statement, so one commit. The store
 * falls back to its locked path for a put this answers null.
 */
import type { CodecCursor } from '../../shared/codec.js';
import type * as C from '../checkpointer.js';
import { DuplicateIdError } from '../errors.js';
import { buildRow, canonicalTime, type RowText } from '../store/rows.js';
import { connectionFailed, SQLSTATE } from '../../support/db-errors.js';
import { constraintOf, pgCode } from './executions.js';
import { serverNowMs } from './leases.js';
import type { Sql, Tables } from './tables.js';

/** A put on the cached cursor `prev`: its lease, renewed in the statement (`renew`) or only checked. */
export interface CursorPut {
  input: C.CheckpointInput & { id: string };
  prev: CodecCursor;
  lease?: C.Lease;
  renew?: boolean;
}

/** What became of one put: its row, null for the locked path, or why it failed. */
export type CursorPutResult = RowText | null | { error: unknown };

/** A statement holds at most this many puts, and puts of at most this many bytes of rows beyond its first. */
const STATEMENT_PUTS = 128;
const STATEMENT_BYTES = 8 * 1024 * 1024;

/**
 * Puts of several executions (at most one each), each written only while
 * its execution is still at the cached row (compare-and-set under the row
 * lock), its lease is its writer's (renewed or row-locked to the commit), and
 * a row it names as its predecessor is its execution's; its checkpoint and
 * outbox event are inserted only then. Sent in as few statements as the caps
 * allow, each one commit. A statement refused as a whole (one put's
 * duplicate id, a value the server refuses) is sent again put by put, so each
 * put gets its own answer (DUPLICATE_ID for an id already stored); a lost
 * connection is the answer of the puts of that statement and of those not
 * yet sent (the caller looks for their rows).
 */
export async function putManyOnCursor(
  sql: Sql,
  t: Tables,
  store: { writerId: string; outbox: boolean },
  puts: readonly CursorPut[],
): Promise<CursorPutResult[]> {
  const out: CursorPutResult[] = puts.map(() => null);
  const ready: { k: number; rt: RowText; put: CursorPut }[] = [];
  for (const [k, put] of puts.entries()) {
    try {
      ready.push({ k, rt: buildRow(put.input, put.prev.seq + 1, put.prev, store.writerId), put });
    } catch (error) {
      out[k] = { error };
    }
  }
  let lost: unknown = null;
  /** Send `chunk` and record each put's answer; refused as a whole, each put again alone. */
  const settle = async (chunk: typeof ready): Promise<void> => {
    try {
      const written = await (chunk.length === 1 ? sendOne(sql, t, store, chunk[0]) : send(sql, t, store, chunk));
      for (const { k, rt } of chunk) out[k] = written.has(rt.row.id) ? rt : null;
    } catch (e) {
      if (connectionFailed(e)) {
        lost = e;
        for (const { k } of chunk) out[k] = { error: e };
      } else if (chunk.length > 1) {
        // nothing of it committed
        for (const one of chunk) {
          if (lost) out[one.k] = { error: lost };
          else await settle([one]);
        }
      } else {
        const { k, rt } = chunk[0];
        const duplicate = pgCode(e) === SQLSTATE.uniqueViolation && constraintOf(e) === 'checkpoints_pkey';
        out[k] = { error: duplicate ? new DuplicateIdError(rt.row.id) : e };
      }
    }
  };
  for (const chunk of chunked(ready)) {
    if (!lost) await settle(chunk);
    else for (const { k } of chunk) out[k] = { error: lost };
  }
  return out;
}

/** `ready` in statements of at most STATEMENT_PUTS puts and STATEMENT_BYTES bytes (a larger row goes alone). */
function* chunked<T extends { rt: RowText }>(ready: readonly T[]): Generator<T[]> {
  let chunk: T[] = [];
  let bytes = 0;
  for (const r of ready) {
    if (chunk.length > 0 && (chunk.length >= STATEMENT_PUTS || bytes + r.rt.bytes > STATEMENT_BYTES)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(r);
    bytes += r.rt.bytes;
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * One statement writing one put, its values inline: a round trip of a lone
 * run's step costs about a fifth less than through `send`'s JSON rows and
 * ordered locks (bench/steps.ts on Postgres, R=5 × T=200), which one
 * execution's rows do not need. The same conditions as `send`'s.
 */
async function sendOne(
  sql: Sql,
  t: Tables,
  store: { outbox: boolean },
  { rt, put }: { rt: RowText; put: CursorPut },
): Promise<Set<string>> {
  const r = rt.row;
  const { lease, prev } = put;
  const ids = await sql<{ id: string }[]>`
    WITH ${
      lease
        ? put.renew
          ? sql`l AS (
      UPDATE ${t.leases} SET expires_at = ${serverNowMs(sql)} + ${lease.ttlMs}
      WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
      RETURNING 1
    ), `
          : sql`l AS (
      SELECT 1 FROM ${t.leases}
      WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
      FOR NO KEY UPDATE
    ), `
        : sql``
    }ex AS (
      UPDATE ${t.executions} SET next_seq = ${r.seq + 1}, last_id = ${r.id}, last_node_id = ${r.nodeId},
        last_step = ${r.step}, last_status = ${r.status}, updated_at = ${r.createdAt}
      WHERE execution_id = ${r.executionId} AND next_seq = ${r.seq} AND last_id = ${prev.id}
        ${lease ? sql`AND EXISTS (SELECT 1 FROM l)` : sql``}
        ${typeof put.input.prevId === 'string' && put.input.prevId !== prev.id ? sql`AND EXISTS (SELECT 1 FROM ${t.checkpoints} WHERE id = ${put.input.prevId} AND execution_id = ${r.executionId})` : sql``}
      RETURNING 1
    ), c AS (
      INSERT INTO ${t.checkpoints} (id, execution_id, seq, node_id, turn, step, status, agent_path, parent_id,
        state, node_input, node_output, interrupt_reason, interrupt_context, created_at, writer_id)
      SELECT ${r.id}, ${r.executionId}, ${r.seq}, ${r.nodeId}, ${r.turn}, ${r.step}, ${r.status}, ${r.agentPath},
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
    SELECT id FROM c`;
  return new Set(ids.map((x) => x.id));
}

/** One statement writing `chunk`; the ids of the rows it wrote. */
async function send(
  sql: Sql,
  t: Tables,
  store: { outbox: boolean },
  chunk: readonly { rt: RowText; put: CursorPut }[],
): Promise<Set<string>> {
  const rows = chunk.map(({ rt, put }) => {
    const r = rt.row;
    return {
      id: r.id,
      execution_id: r.executionId,
      seq: r.seq,
      prev_id: put.prev.id,
      // a put naming another row than the cached newest: that row must be this execution's
      check_prev: typeof put.input.prevId === 'string' && put.input.prevId !== put.prev.id ? put.input.prevId : null,
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
      holder: put.lease?.holder ?? null,
      epoch: put.lease?.epoch ?? null,
      ttl_ms: put.lease?.ttlMs ?? null,
      renew: put.renew ?? false,
    };
  });
  // The store's lock order across the statement: every lease row in execution id order, then every
  // execution row in id order (byte order, COLLATE "C"), as prune and import take them. `fenced` is read whole (the count) before `heads`
  // reads a row, and `heads` sorts before it locks; `ex` and `renewed` update rows already locked.
  const ids = await sql<{ id: string }[]>`
    WITH i AS (
      SELECT * FROM json_to_recordset((${JSON.stringify(rows)}::text)::json) AS i(id text, execution_id text, seq integer,
        prev_id text, check_prev text, node_id text, turn integer, step text, status text, agent_path text,
        parent_id text, state text, node_input text, node_output text, interrupt_reason text, interrupt_context text,
        created_at text, writer_id text, bytes integer, holder text, epoch integer, ttl_ms bigint, renew boolean)
    ), fenced AS (
      SELECT l.execution_id FROM ${t.leases} l JOIN i ON l.execution_id = i.execution_id
      WHERE l.holder = i.holder AND l.epoch = i.epoch
      ORDER BY l.execution_id COLLATE "C"
      FOR NO KEY UPDATE OF l
    ), heads AS (
      SELECT e.execution_id FROM ${t.executions} e JOIN i ON e.execution_id = i.execution_id
      WHERE (SELECT count(*) FROM fenced) >= 0
        AND e.next_seq = i.seq AND e.last_id = i.prev_id
        AND (i.holder IS NULL OR i.execution_id IN (SELECT execution_id FROM fenced))
        AND (i.check_prev IS NULL
          OR EXISTS (SELECT 1 FROM ${t.checkpoints} p WHERE p.id = i.check_prev AND p.execution_id = i.execution_id))
      ORDER BY e.execution_id COLLATE "C"
      FOR NO KEY UPDATE OF e
    ), renewed AS (
      UPDATE ${t.leases} l SET expires_at = ${serverNowMs(sql)} + i.ttl_ms
      FROM i WHERE i.renew AND l.execution_id = i.execution_id AND l.execution_id IN (SELECT execution_id FROM fenced)
    ), ex AS (
      UPDATE ${t.executions} e SET next_seq = i.seq + 1, last_id = i.id, last_node_id = i.node_id,
        last_step = i.step, last_status = i.status, updated_at = i.created_at
      FROM i
      WHERE e.execution_id = i.execution_id AND e.execution_id IN (SELECT execution_id FROM heads)
      RETURNING i.id
    ), c AS (
      INSERT INTO ${t.checkpoints} (id, execution_id, seq, node_id, turn, step, status, agent_path, parent_id,
        state, node_input, node_output, interrupt_reason, interrupt_context, created_at, writer_id)
      SELECT i.id, i.execution_id, i.seq, i.node_id, i.turn, i.step, i.status, i.agent_path, i.parent_id,
        i.state, i.node_input, i.node_output, i.interrupt_reason, i.interrupt_context, i.created_at, i.writer_id
      FROM i JOIN ex ON ex.id = i.id
      RETURNING id
    )${
      store.outbox
        ? sql`, o AS (
      INSERT INTO ${t.outbox} (id, kind, execution_id, payload, bytes, created_at)
      SELECT i.id, 'checkpoint', i.execution_id, NULL, i.bytes, ${canonicalTime()} FROM c JOIN i ON i.id = c.id
      RETURNING 1
    )`
        : sql``
    }
    SELECT id FROM c`;
  return new Set(ids.map((r) => r.id));
}
