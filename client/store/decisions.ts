/**
 * Decisions in a store, alike on both backends: checking a
 * decision before it is recorded, its columns both ways, its derived state,
 * the listing cursor.
 *
 * Glossary
 * - decision: a person's answer (a Resume value) to one pause, recorded by a
 *   screen or an API call for the application's worker to apply through the
 *   claim. At most one per pause (its `checkpointId`).
 * - local claim: the `claims` row every `claimInterrupt` writes in its
 *   transaction (the pending row itself is deleted by the claim): who claimed
 *   the pause, when, and which decision it applied (null: a resume from code).
 * - state (derived, never stored, so it cannot drift from the claim):
 *   `applied` when the pause's local claim carries this decision; `superseded`
 *   when it was claimed without it, or the pause is no longer open although
 *   this store holds its row (the run was cancelled or moved on); `pending`
 *   while the pause is open here, or while this store does not hold the
 *   pause's run at all (a decision from the plane for a run that restore may
 *   bring; `held` says which).
 */
import { ErrorCode, issueProblems, WaymarkError } from '../../shared/errors.js';
import { integerProblem, lengthProblem, oneOfProblem, refuse } from '../../support/validate.js';
import type { Json } from '../../shared/json.js';
import type { DecisionState } from '../../shared/protocol.js';
import { Decision, Uuidv7 } from '../../shared/rows.js';
import type { ListDecisionsOptions, StoredDecision } from '../checkpointer.js';
import { AlreadyDecided, CorruptRowError } from '../errors.js';

/** The stored columns of `decisions`, the same names on both backends. */
export interface DecisionColumns {
  seq: number | string;
  checkpoint_id: string;
  execution_id: string;
  decision_id: string;
  approved: number | boolean;
  metadata: string;
  decided_by: string;
  source: string;
  decided_at: string;
}

/** A decision's columns joined with what its state is derived from (see `DECISION_STATE`). */
export interface DecisionJoinColumns extends DecisionColumns {
  state: string;
  claim_writer: string | null;
  claim_at: string | null;
  held: number | boolean;
}

/** The stored columns of `claims`. */
export interface ClaimColumns {
  checkpoint_id: string;
  execution_id: string;
  writer_id: string;
  decision_id: string | null;
  claimed_at: string;
}

/**
 * The derived state as a SQL expression over the aliases `d` (decisions), `c`
 * (claims), `p` (pending_interrupts) and `k` (checkpoints), each left-joined by
 * the decision's checkpoint id and execution id: a row of another run never
 * settles a decision naming its checkpoint. The same text on SQLite and
 * Postgres.
 */
export const DECISION_STATE = `CASE
  WHEN c.checkpoint_id IS NOT NULL THEN CASE WHEN c.decision_id = d.decision_id THEN 'applied' ELSE 'superseded' END
  WHEN p.execution_id IS NOT NULL THEN 'pending'
  WHEN k.id IS NOT NULL THEN 'superseded'
  ELSE 'pending' END`;

/** Check a decision before it is recorded: every problem is named (INVALID_DECISION); nothing is written. */
export function checkDecision(value: unknown): Decision {
  const r = Decision.safeParse(value);
  if (r.success) return r.data;
  const problems = issueProblems(r.error, 'the decision');
  throw new WaymarkError(ErrorCode.INVALID_DECISION, `invalid decision, nothing was recorded: ${problems.join('; ')}`, {
    details: { problems },
  });
}

/**
 * Inside a claim's transaction: the decision a claim applies, if this store
 * holds it, must be the decision for the claimed pause. A decision id from
 * another pause is refused (INVALID_DECISION naming both pauses); one this
 * store does not hold while the pause has another decision here (the plane's
 * took its place after the caller read it) is ALREADY_DECIDED naming that
 * one (`details.decision`). Nothing is claimed (the caller's transaction
 * rolls back). `pauseDecision`: the claimed pause's decision here, read only
 * when `held` is absent.
 */
export function checkClaimDecisionPause(
  decisionId: string | null,
  claimed: { executionId: string; checkpointId: string },
  held: { execution_id: string; checkpoint_id: string } | null | undefined,
  pauseDecision: Decision | null,
): void {
  if (!decisionId) return;
  if (!held) {
    const first = pauseDecision;
    if (first && first.decisionId !== decisionId) {
      throw new AlreadyDecided(
        `the pause at ${claimed.checkpointId} of '${claimed.executionId}' has decision ${first.decisionId} (by '${first.decidedBy}', from the ${first.source === 'plane' ? 'plane' : 'local store'}), not ${decisionId}; nothing was claimed: apply that decision`,
        { decision: first },
      );
    }
    return;
  }
  if (held.checkpoint_id === claimed.checkpointId && held.execution_id === claimed.executionId) return;
  throw new WaymarkError(
    ErrorCode.INVALID_DECISION,
    `decision ${decisionId} answers the pause at checkpoint ${held.checkpoint_id} of execution '${held.execution_id}', not the claimed pause at ${claimed.checkpointId} of '${claimed.executionId}'; nothing was claimed`,
    {
      details: {
        decisionId,
        decisionCheckpointId: held.checkpoint_id,
        decisionExecutionId: held.execution_id,
        checkpointId: claimed.checkpointId,
        executionId: claimed.executionId,
      },
    },
  );
}

/** A claim's `decisionId` option: a UUIDv7, or absent. */
export function checkClaimDecisionId(decisionId: unknown): string | null {
  if (decisionId === undefined || decisionId === null) return null;
  if (!Uuidv7.safeParse(decisionId).success) {
    throw new WaymarkError(
      ErrorCode.INVALID_DECISION,
      `a claim's decisionId must be a UUIDv7 (got ${JSON.stringify(decisionId)}); nothing was claimed`,
      {
        details: { problems: ['decisionId: not a UUIDv7'] },
      },
    );
  }
  return decisionId as string;
}

/** The columns a decision is inserted with (no seq: the store assigns it). */
export function decisionColumns(d: Decision): Omit<DecisionColumns, 'seq' | 'approved'> & { approved: boolean } {
  return {
    checkpoint_id: d.checkpointId,
    execution_id: d.executionId,
    decision_id: d.decisionId,
    approved: d.approved,
    metadata: JSON.stringify(d.metadata),
    decided_by: d.decidedBy,
    source: d.source,
    decided_at: d.decidedAt,
  };
}

/** A stored decision row back to the contract's shape; a column that is not what it should be is a CorruptRowError. */
export function decisionFromColumns(r: DecisionColumns): Decision {
  let metadata: Record<string, Json>;
  try {
    metadata = JSON.parse(r.metadata) as Record<string, Json>;
  } catch (e) {
    throw new CorruptRowError(`decision ${r.decision_id}`, `metadata is not JSON (${(e as Error).message})`, e);
  }
  const parsed = Decision.safeParse({
    decisionId: r.decision_id,
    executionId: r.execution_id,
    checkpointId: r.checkpoint_id,
    approved: r.approved === true || r.approved === 1,
    metadata,
    decidedBy: r.decided_by,
    source: r.source,
    decidedAt: r.decided_at,
  });
  if (!parsed.success)
    throw new CorruptRowError(
      `decision ${r.decision_id}`,
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  return parsed.data;
}

/** A decision with its derived state, from the listing's joined columns. */
export function storedFromColumns(r: DecisionJoinColumns): StoredDecision {
  const state = r.state as DecisionState;
  const claimed = state === 'applied' || (state === 'superseded' && r.claim_writer !== null);
  return {
    ...decisionFromColumns(r),
    state,
    appliedBy: claimed ? r.claim_writer : null,
    appliedAt: claimed ? r.claim_at : null,
    held: r.held === true || r.held === 1,
    seq: Number(r.seq),
  };
}

const LOCAL_STATES: readonly DecisionState[] = ['pending', 'applied', 'superseded'];

/** The listing's options checked: the cursor is the seq of the last decision seen; INVALID_OPTIONS names every problem. */
export function checkListDecisions(o: ListDecisionsOptions): {
  after: number;
  state: DecisionState | null;
  executionId: string | null;
  limit: number | null;
} {
  const problems: string[] = [];
  let after = 0;
  if (o.cursor !== undefined && o.cursor !== null) {
    if (!/^\d{1,15}$/.test(o.cursor)) problems.push(`cursor: '${String(o.cursor)}' is not a cursor this store issued`);
    else after = Number(o.cursor);
  }
  for (const p of [
    oneOfProblem('state', o.state, LOCAL_STATES),
    o.executionId === undefined ? null : lengthProblem('executionId', o.executionId, 1),
    integerProblem('limit', o.limit, 1),
  ])
    if (p) problems.push(p);
  refuse('listDecisions', problems);
  return { after, state: o.state ?? null, executionId: o.executionId ?? null, limit: o.limit ?? null };
}

/** The page of a listing: its next cursor is the last item's seq when the page is full. */
export function pageOf(
  items: StoredDecision[],
  limit: number | null,
): { items: StoredDecision[]; nextCursor: string | null } {
  return { items, nextCursor: limit !== null && items.length === limit ? String(items[items.length - 1].seq) : null };
}

/** What the store found of the pause a local decision answers. */
export interface PauseFacts {
  /** The execution's open pause is this checkpoint. */
  open: boolean;
  /** The checkpoint is a row of the execution here (null: not held). */
  row: { executionId: string; status: string } | null;
  /** The pause's local claim, if any. */
  claim: ClaimColumns | null;
}

/**
 * A plane decision takes the place of `prev`, the decision this store holds
 * for the same pause, when `prev` is another, local one and the pause is still
 * open here (not claimed: a local decision not applied). The plane is where a
 * pause's first decision is settled; `prev` lost there (or will, when its
 * event arrives after the plane's).
 */
export function planeDecisionReplaces(d: Decision, prev: Decision, pauseOpen: boolean): boolean {
  return (
    d.source === 'plane' &&
    prev.source === 'local' &&
    pauseOpen &&
    prev.executionId === d.executionId &&
    prev.checkpointId === d.checkpointId &&
    prev.decisionId !== d.decisionId
  );
}

/**
 * A local decision needs the pause open here: PAUSE_NOT_FOUND when this store
 * has no such pause, PAUSE_CLOSED (naming who claimed it) when it is no longer
 * open. Nothing is recorded in either case.
 */
export function checkPauseOpen(d: Decision, f: PauseFacts): void {
  if (f.open) return;
  const where = { executionId: d.executionId, checkpointId: d.checkpointId };
  if (!f.row || f.row.executionId !== d.executionId || f.row.status !== 'interrupted') {
    throw new WaymarkError(
      ErrorCode.PAUSE_NOT_FOUND,
      `execution '${d.executionId}' has no pause at checkpoint ${d.checkpointId} in this store; nothing was recorded`,
      { details: where },
    );
  }
  const why = f.claim
    ? `it was claimed by writer '${f.claim.writer_id}' at ${f.claim.claimed_at}${f.claim.decision_id ? ` applying decision ${f.claim.decision_id}` : ' (a resume from code)'}`
    : 'it was closed (its run was cancelled or has moved on)';
  throw new WaymarkError(
    ErrorCode.PAUSE_CLOSED,
    `the pause at checkpoint ${d.checkpointId} of execution '${d.executionId}' is no longer open: ${why}; nothing was recorded`,
    {
      details: {
        ...where,
        claimedBy: f.claim?.writer_id ?? null,
        claimedAt: f.claim?.claimed_at ?? null,
        decisionId: f.claim?.decision_id ?? null,
      },
    },
  );
}
