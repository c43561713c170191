/**
 * The Postgres store's decision statements: recording a decision,
 * listing decisions with their derived state, and the local claim record.
 * The write ones run inside the caller's transaction. A local decision locks
 * the pause's pending row first, so it is ordered with a concurrent claim: it
 * either lands before the claim, or finds the pause closed (PAUSE_CLOSED).
 * The rules they apply are in client/store/decisions.ts.
 */
import type { Decision } from '../../shared/rows.js';
import type { DecisionPage, ListDecisionsOptions, RecordDecisionResult, StoredDecision } from '../checkpointer.js';
import {
  checkClaimDecisionPause,
  checkListDecisions,
  checkPauseOpen,
  DECISION_STATE,
  decisionColumns,
  decisionFromColumns,
  pageOf,
  planeDecisionReplaces,
  storedFromColumns,
  type ClaimColumns,
  type DecisionColumns,
  type DecisionJoinColumns,
} from '../store/decisions.js';
import { decisionRecorded, type QueuedEvent } from '../store/events.js';
import type { Sql, Tables, Tx } from './tables.js';

/**
 * The advisory lock that orders recordings with `decisionSeq` (its key: the
 * store's schema). A recording holds it shared, taken first in its
 * transaction (before any row lock, so a `decisionSeq` waiting for it and a
 * recording queued behind that never wait on each other), until it commits;
 * `decisionSeq` holds it alone while it reads. Nothing else takes it: a prune
 * or a delete of decisions never stalls a recording or a read of the bound.
 */
export const decisionsLockKey = (schema: string) => `waymark.decisions:${schema}`;

/** Inside the caller's transaction, first in it: record `d` unless its pause has a decision; a local one needs the pause open and queues its event. */
export async function insertDecision(
  tx: Tx,
  t: Tables,
  lockKey: string,
  d: Decision,
  queue: (tx: Tx, e: QueuedEvent) => unknown,
): Promise<RecordDecisionResult> {
  await tx`SELECT pg_advisory_xact_lock_shared(hashtext(${lockKey}))`;
  if (d.source === 'local') {
    const [open] =
      await tx`SELECT 1 AS one FROM ${t.pending} WHERE execution_id = ${d.executionId} AND checkpoint_id = ${d.checkpointId} FOR UPDATE`;
    if (!open) {
      const existing = await existingDecision(tx, t, d);
      // another run's decision under this checkpoint (or decision) id: judged by this run's pause, which is not open here (PAUSE_NOT_FOUND)
      if (existing && existing.executionId === d.executionId) return { recorded: false, existing };
      const [row] = await tx<
        { executionId: string; status: string }[]
      >`SELECT execution_id AS "executionId", status FROM ${t.checkpoints} WHERE id = ${d.checkpointId}`;
      const [claim] = await tx<ClaimColumns[]>`SELECT * FROM ${t.claims} WHERE checkpoint_id = ${d.checkpointId}`;
      checkPauseOpen(d, { open: false, row: row ?? null, claim: claim ?? null });
    }
  }
  let replaced: Decision | undefined;
  if (d.source === 'plane') {
    // the pause's row first, as a local decision and a claim take it: the decision read next is the newest one
    // (a local one recorded meanwhile is seen), and a local claim applying it and this replacement never both happen
    const [open] =
      await tx`SELECT 1 AS one FROM ${t.pending} WHERE execution_id = ${d.executionId} AND checkpoint_id = ${d.checkpointId} FOR UPDATE`;
    const prev = await existingDecision(tx, t, d);
    if (prev && planeDecisionReplaces(d, prev, open !== undefined)) {
      await tx`DELETE FROM ${t.decisions} WHERE decision_id = ${prev.decisionId}`;
      replaced = prev;
    }
  }
  const c = decisionColumns(d);
  const got = await tx`
    INSERT INTO ${t.decisions} (checkpoint_id, execution_id, decision_id, approved, metadata, decided_by, source, decided_at)
    VALUES (${c.checkpoint_id}, ${c.execution_id}, ${c.decision_id}, ${c.approved}, ${c.metadata}, ${c.decided_by}, ${c.source}, ${c.decided_at})
    ON CONFLICT DO NOTHING RETURNING seq`;
  if (!got.length) return { recorded: false, existing: (await existingDecision(tx, t, d))! };
  if (d.source === 'local') await queue(tx, decisionRecorded(d));
  return replaced ? { recorded: true, replaced } : { recorded: true };
}

/** The decision already recorded for `d`'s pause (or under its id). */
export async function existingDecision(sql: Sql | Tx, t: Tables, d: Decision): Promise<Decision | null> {
  const [prev] = await sql<
    DecisionColumns[]
  >`SELECT * FROM ${t.decisions} WHERE checkpoint_id = ${d.checkpointId} OR decision_id = ${d.decisionId} ORDER BY seq LIMIT 1`;
  return prev ? decisionFromColumns(prev) : null;
}

function joined(sql: Sql, t: Tables) {
  return sql`SELECT d.*, ${sql.unsafe(DECISION_STATE)} AS state, c.writer_id AS claim_writer, c.claimed_at AS claim_at, k.id IS NOT NULL AS held
    FROM ${t.decisions} d
    LEFT JOIN ${t.claims} c ON c.checkpoint_id = d.checkpoint_id AND c.execution_id = d.execution_id
    LEFT JOIN ${t.pending} p ON p.execution_id = d.execution_id AND p.checkpoint_id = d.checkpoint_id
    LEFT JOIN ${t.checkpoints} k ON k.id = d.checkpoint_id AND k.execution_id = d.execution_id`;
}

/** Decisions in recording order with their derived state (see client/store/decisions.ts). */
export async function listDecisions(sql: Sql, t: Tables, options: ListDecisionsOptions): Promise<DecisionPage> {
  const o = checkListDecisions(options);
  const rows = await sql<DecisionJoinColumns[]>`
    SELECT * FROM (${joined(sql, t)}) j WHERE seq > ${o.after} ${o.state ? sql`AND state = ${o.state}` : sql``}
      ${o.executionId ? sql`AND execution_id = ${o.executionId}` : sql``}
    ORDER BY seq ${o.limit ? sql`LIMIT ${o.limit}` : sql``}`;
  return pageOf(rows.map(storedFromColumns), o.limit);
}

export async function getDecision(
  sql: Sql,
  t: Tables,
  executionId: string,
  checkpointId: string,
): Promise<StoredDecision | null> {
  const [row] = await sql<
    DecisionJoinColumns[]
  >`${joined(sql, t)} WHERE d.checkpoint_id = ${checkpointId} AND d.execution_id = ${executionId}`;
  return row ? storedFromColumns(row) : null;
}

/** Inside the caller's claim transaction: the local claim of a pause (a pause claimed again replaces it). */
export async function recordClaim(tx: Tx, t: Tables, c: ClaimColumns): Promise<void> {
  if (c.decision_id) {
    const [held] = await tx<
      { execution_id: string; checkpoint_id: string }[]
    >`SELECT execution_id, checkpoint_id FROM ${t.decisions} WHERE decision_id = ${c.decision_id}`;
    const [pause] = held
      ? []
      : await tx<
          DecisionColumns[]
        >`SELECT * FROM ${t.decisions} WHERE checkpoint_id = ${c.checkpoint_id} AND execution_id = ${c.execution_id}`;
    checkClaimDecisionPause(
      c.decision_id,
      { executionId: c.execution_id, checkpointId: c.checkpoint_id },
      held,
      pause ? decisionFromColumns(pause) : null,
    );
  }
  await tx`
    INSERT INTO ${t.claims} (checkpoint_id, execution_id, writer_id, decision_id, claimed_at)
    VALUES (${c.checkpoint_id}, ${c.execution_id}, ${c.writer_id}, ${c.decision_id}, ${c.claimed_at})
    ON CONFLICT (checkpoint_id) DO UPDATE SET writer_id = excluded.writer_id, decision_id = excluded.decision_id, claimed_at = excluded.claimed_at`;
}

/** Inside the caller's transaction: an execution's decisions and claims go with its rows (delete, prune). */
export async function dropDecisions(tx: Tx, t: Tables, executionId: string): Promise<void> {
  await tx`DELETE FROM ${t.decisions} WHERE execution_id = ${executionId}`;
  await tx`DELETE FROM ${t.claims} WHERE execution_id = ${executionId}`;
}

/**
 * Forget an execution's decisions up to `upToSeq` whose pause row is not held
 * here, but the kept pause's (see Checkpointer.forgetUnheldDecisions); how
 * many. One statement, autocommitted: a run with none costs one index probe.
 */
export async function forgetUnheldDecisions(
  sql: Sql,
  t: Tables,
  executionId: string,
  keepCheckpointId: string | null,
  upToSeq: number,
): Promise<number> {
  const gone =
    await sql`DELETE FROM ${t.decisions} d WHERE d.execution_id = ${executionId} AND d.checkpoint_id IS DISTINCT FROM ${keepCheckpointId}
    AND d.seq <= ${upToSeq} AND NOT EXISTS (SELECT 1 FROM ${t.checkpoints} k WHERE k.id = d.checkpoint_id AND k.execution_id = d.execution_id)`;
  return gone.count;
}

/**
 * The newest decision's seq (0: none), read once no recording is in flight. A
 * seq is taken when a decision is inserted but seen only once it commits, so
 * a plain max(seq) could miss an insert holding a lower seq that commits just
 * after, under the bound. The decisions lock taken alone waits for every
 * recording in flight (each holds it shared until it ends; see
 * decisionsLockKey); a seq taken after the read is higher than every seq
 * taken before it.
 */
export async function decisionSeq(sql: Sql, t: Tables, lockKey: string): Promise<number> {
  const seq = await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext(${lockKey}))`;
    const [row] = await tx<{ seq: string }[]>`SELECT coalesce(max(seq), 0)::text AS seq FROM ${t.decisions}`;
    return row.seq;
  });
  return Number(seq);
}
