/**
 * A run's pause: whether it is open, its claim, and the decision recorded for
 * it. Project-scoped; nothing here writes (claims are arbitrated in
 * claims.ts, decisions recorded in decisions.ts).
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Json } from '../../shared/json.js';
import type { Checkpoint, Decision, PendingInterrupt } from '../../shared/rows.js';
import { isClaimRow, resumeAnswer } from '../../support/run-words.js';
import type { PlaneDb } from '../db/open.js';
import { checkpoints, claims, decisions, pendingInterrupts } from '../db/schema.js';
import { stateAt } from './rows.js';

export async function openPause(db: PlaneDb, projectId: string, executionId: string): Promise<PendingInterrupt | null> {
  const [p] = await db
    .select()
    .from(pendingInterrupts)
    .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.executionId, executionId)));
  return p && p.state === 'open' ? (p.row as PendingInterrupt) : null;
}

/** The run's pause (null: none) and its claim, in one read. */
export async function pauseState(db: PlaneDb, projectId: string, executionId: string) {
  const [found] = await db
    .select({ p: pendingInterrupts, c: claims })
    .from(pendingInterrupts)
    .leftJoin(
      claims,
      and(eq(claims.projectId, pendingInterrupts.projectId), eq(claims.checkpointId, pendingInterrupts.checkpointId)),
    )
    .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.executionId, executionId)));
  if (!found) return null;
  const { p, c } = found;
  return {
    pending: p.row as PendingInterrupt,
    state: p.state,
    claimedBy: p.claimedBy,
    claimedAt: p.claimedAt?.toISOString() ?? null,
    /** held: claimed at the plane, the holder's local claim not yet reported; applied: reported (final). */
    claim: c
      ? {
          writerId: c.writerId,
          source: c.source,
          claimedAt: c.claimedAt.toISOString(),
          appliedAt: c.appliedAt?.toISOString() ?? null,
          state: c.appliedAt ? ('applied' as const) : ('held' as const),
        }
      : null,
  };
}

/** A stored decision as the wire row. */
export function decisionOfRow(d: typeof decisions.$inferSelect): Decision {
  return {
    decisionId: d.decisionId,
    executionId: d.executionId,
    checkpointId: d.checkpointId,
    approved: d.approved,
    metadata: d.metadata as Decision['metadata'],
    decidedBy: d.decidedBy,
    source: d.source as Decision['source'],
    decidedAt: d.decidedAt,
  };
}

/** The decision recorded for a pause of this execution (by its checkpoint id), as the wire row; null when none. */
export async function pauseDecision(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  checkpointId: string,
): Promise<Decision | null> {
  const [d] = await db
    .select()
    .from(decisions)
    .where(
      and(
        eq(decisions.projectId, projectId),
        eq(decisions.checkpointId, checkpointId),
        eq(decisions.executionId, executionId),
      ),
    );
  return d ? decisionOfRow(d) : null;
}

/**
 * The answer a claimed pause was resumed with: its claim row (the pause's tool row written again, its child, right
 * after it) carries it in its state's `resumes`. Null when that row is not on the plane (yet), or does not decode
 * (a hole before it).
 */
export async function pauseAnswer(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  checkpointId: string,
): Promise<Json | null> {
  const run = and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId));
  const pause = db
    .select({ seq: checkpoints.seq })
    .from(checkpoints)
    .where(and(run, eq(checkpoints.id, checkpointId)));
  // the row right after the pause's (none when the pause's row is not on the plane)
  const [next] = await db
    .select({ seq: checkpoints.seq, row: checkpoints.row })
    .from(checkpoints)
    .where(and(run, sql`${checkpoints.seq} > (${pause})`))
    .orderBy(asc(checkpoints.seq))
    .limit(1);
  const claim = next?.row as Checkpoint | undefined;
  if (!next || !isClaimRow({ id: checkpointId }, claim)) return null;
  try {
    return resumeAnswer(await stateAt(db, projectId, executionId, next.seq)) as Json | null;
  } catch {
    // a chain that does not decode here (the run page says why, from its holes): no answer to show
    return null;
  }
}
