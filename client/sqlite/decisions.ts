/**
 * The SQLite store's decision statements: recording a decision,
 * listing decisions with their derived state, and the local claim record.
 * Each function takes the store's statements and prepares its own texts
 * once per connection (`st.variant`); the write ones run inside the caller's
 * IMMEDIATE transaction (one writer at a time across processes).
 * The rules they apply are in client/store/decisions.ts.
 */
import type { Decision } from '../../shared/rows.js';
import type { DecisionPage, RecordDecisionResult, StoredDecision } from '../checkpointer.js';
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
import type { Statements } from './statements.js';

const JOINED = `SELECT d.*, ${DECISION_STATE} AS state, c.writer_id AS claim_writer, c.claimed_at AS claim_at, k.id IS NOT NULL AS held
  FROM decisions d
  LEFT JOIN claims c ON c.checkpoint_id = d.checkpoint_id AND c.execution_id = d.execution_id
  LEFT JOIN pending_interrupts p ON p.execution_id = d.execution_id AND p.checkpoint_id = d.checkpoint_id
  LEFT JOIN checkpoints k ON k.id = d.checkpoint_id AND k.execution_id = d.execution_id`;

/**
 * Inside the caller's IMMEDIATE transaction: record `d` unless its pause has
 * a decision; a local one needs the pause open and queues its event.
 */
export function insertDecision(st: Statements, d: Decision, queue: (e: QueuedEvent) => void): RecordDecisionResult {
  const prev = st
    .variant(`SELECT * FROM decisions WHERE checkpoint_id = ? OR decision_id = ?`)
    .get(d.checkpointId, d.decisionId) as DecisionColumns | undefined;
  let replaced: Decision | undefined;
  if (prev && d.source === 'plane') {
    const first = decisionFromColumns(prev);
    if (!planeDecisionReplaces(d, first, pauseIsOpen(st, d))) return { recorded: false, existing: first };
    st.variant(`DELETE FROM decisions WHERE decision_id = ?`).run(first.decisionId);
    replaced = first;
  }
  // a local decision naming another run's checkpoint (or decision id) is judged by its own run's pause first: PAUSE_NOT_FOUND when that pause is not open here
  if (prev && d.source === 'local' && prev.execution_id === d.executionId)
    return { recorded: false, existing: decisionFromColumns(prev) };
  if (d.source === 'local') {
    const open = pauseIsOpen(st, d);
    const row = st
      .variant(`SELECT execution_id AS executionId, status FROM checkpoints WHERE id = ?`)
      .get(d.checkpointId) as { executionId: string; status: string } | undefined;
    const claim = st.variant(`SELECT * FROM claims WHERE checkpoint_id = ?`).get(d.checkpointId) as
      | ClaimColumns
      | undefined;
    checkPauseOpen(d, { open, row: row ?? null, claim: claim ?? null });
    if (prev) return { recorded: false, existing: decisionFromColumns(prev) };
  }
  const c = decisionColumns(d);
  st.variant(`INSERT INTO decisions (checkpoint_id, execution_id, decision_id, approved, metadata, decided_by, source, decided_at)
     VALUES (@checkpoint_id, @execution_id, @decision_id, @approved, @metadata, @decided_by, @source, @decided_at)`).run(
    { ...c, approved: c.approved ? 1 : 0 },
  );
  if (d.source === 'local') queue(decisionRecorded(d));
  return replaced ? { recorded: true, replaced } : { recorded: true };
}

function pauseIsOpen(st: Statements, d: Decision): boolean {
  return (
    st
      .variant(`SELECT 1 FROM pending_interrupts WHERE execution_id = ? AND checkpoint_id = ?`)
      .get(d.executionId, d.checkpointId) !== undefined
  );
}

/** Decisions in recording order with their derived state (see client/store/decisions.ts). */
export function listDecisions(st: Statements, options: Parameters<typeof checkListDecisions>[0]): DecisionPage {
  const o = checkListDecisions(options);
  const sql = `SELECT * FROM (${JOINED}) WHERE seq > ? ${o.state ? 'AND state = ?' : ''} ${o.executionId ? 'AND execution_id = ?' : ''} ORDER BY seq ${o.limit ? 'LIMIT ?' : ''}`;
  const args: unknown[] = [
    o.after,
    ...(o.state ? [o.state] : []),
    ...(o.executionId ? [o.executionId] : []),
    ...(o.limit ? [o.limit] : []),
  ];
  const rows = st.variant(sql).all(...args) as DecisionJoinColumns[];
  return pageOf(rows.map(storedFromColumns), o.limit);
}

export function getDecision(st: Statements, executionId: string, checkpointId: string): StoredDecision | null {
  const row = st.variant(`${JOINED} WHERE d.checkpoint_id = ? AND d.execution_id = ?`).get(checkpointId, executionId) as
    | DecisionJoinColumns
    | undefined;
  return row ? storedFromColumns(row) : null;
}

/** Inside the caller's claim transaction: the local claim of a pause (a pause claimed again replaces it). */
export function recordClaim(st: Statements, c: ClaimColumns): void {
  if (c.decision_id) {
    const held = st
      .variant(`SELECT execution_id, checkpoint_id FROM decisions WHERE decision_id = ?`)
      .get(c.decision_id) as { execution_id: string; checkpoint_id: string } | undefined;
    const pause = held
      ? undefined
      : (st
          .variant(`SELECT * FROM decisions WHERE checkpoint_id = ? AND execution_id = ?`)
          .get(c.checkpoint_id, c.execution_id) as DecisionColumns | undefined);
    checkClaimDecisionPause(
      c.decision_id,
      { executionId: c.execution_id, checkpointId: c.checkpoint_id },
      held,
      pause ? decisionFromColumns(pause) : null,
    );
  }
  st.variant(`INSERT INTO claims (checkpoint_id, execution_id, writer_id, decision_id, claimed_at) VALUES (@checkpoint_id, @execution_id, @writer_id, @decision_id, @claimed_at)
     ON CONFLICT (checkpoint_id) DO UPDATE SET writer_id = excluded.writer_id, decision_id = excluded.decision_id, claimed_at = excluded.claimed_at`).run(
    c,
  );
}

/** Inside the caller's transaction: an execution's decisions and claims go with its rows (delete, prune). */
export function dropDecisions(st: Statements, executionId: string): void {
  st.variant(`DELETE FROM decisions WHERE execution_id = ?`).run(executionId);
  st.variant(`DELETE FROM claims WHERE execution_id = ?`).run(executionId);
}

/** Decisions of an execution up to a seq whose pause row is not held here, but the kept pause's (see Checkpointer.forgetUnheldDecisions). */
const UNHELD = `FROM decisions WHERE execution_id = ? AND checkpoint_id IS NOT ? AND seq <= ? AND NOT EXISTS (SELECT 1 FROM checkpoints k WHERE k.id = decisions.checkpoint_id AND k.execution_id = decisions.execution_id)`;

/** Whether an execution has decisions to forget: read first, so a run with none costs no write lock. */
export function hasUnheldDecisions(
  st: Statements,
  executionId: string,
  keepCheckpointId: string | null,
  upToSeq: number,
): boolean {
  return st.variant(`SELECT 1 ${UNHELD} LIMIT 1`).get(executionId, keepCheckpointId, upToSeq) !== undefined;
}

/** Inside the caller's IMMEDIATE transaction: forget them; how many. */
export function forgetUnheldDecisions(
  st: Statements,
  executionId: string,
  keepCheckpointId: string | null,
  upToSeq: number,
): number {
  return st.variant(`DELETE ${UNHELD}`).run(executionId, keepCheckpointId, upToSeq).changes;
}

/**
 * The newest decision's seq (0: none). A recording in flight on another
 * connection is not seen, and needs not be: SQLite writes one transaction at a
 * time and AUTOINCREMENT gives a seq above every seq ever given, so a
 * recording still uncommitted now took a seq above all that this read sees
 * and lands above the bound.
 */
export function decisionSeq(st: Statements): number {
  return (st.variant(`SELECT coalesce(max(seq), 0) AS seq FROM decisions`).get() as { seq: number }).seq;
}
