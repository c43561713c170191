/**
 * The plane's arbitration writes: a pause's claim (exactly one writer wins),
 * its release, and the takeover of a run whose writer died mid-run. Each is one
 * transaction; the read side (read.ts) only lists what they recorded.
 */
import { and, eq, isNull, lt, ne, sql } from 'drizzle-orm';
import type { PlaneDb } from './db/open.js';
import { checkpoints, claims, decisions, executions, pendingInterrupts, runContacts, runTakeovers } from './db/schema.js';
import { announceChanges } from './changes.js';
import { decisionOf, decisionView } from './decisions.js';
import type { DecisionView } from '../shared/protocol.js';
import { refreshExecutions } from './ingest.js';

/**
 * Claim a pause for one writer. The claims table's primary key makes exactly
 * one writer win across any number of plane processes; a repeat by the
 * winner is answered as a win (idempotent: a holder that crashed between the
 * plane claim and its local one completes it by resuming again). A claim
 * still only held (its holder's local claim never reported) and older than
 * `releaseAfterMs` (0: never) is taken over by the next writer that asks.
 * A claim applying a decision (`decisionId`) while the pause's first decision
 * here, not yet applied (pending, or held by a claim naming it), is another
 * one is refused (`decided`: that decision), a stale claim's takeover too.
 * Against a decision being recorded at the same time (recordDecision, which
 * locks the pause's row), a claim is ordered wholly before it (the decision is
 * refused PAUSE_CLOSED) or wholly after it: a resume from code still wins (the
 * decision shows superseded), a claim applying another decision is refused.
 */
export async function claimPause(db: PlaneDb, projectId: string, executionId: string, checkpointId: string, writerId: string, releaseAfterMs = 0, decisionId: string | null = null) {
  const r = await claimInTx(db, projectId, executionId, checkpointId, writerId, releaseAfterMs, decisionId);
  // a won claim changed the run's pause: connected stores following the change feed hear of it
  if (r.won) announceChanges(db, projectId);
  return r;
}

/** Thrown inside a claim's transaction to roll its claim back: a decision other than the claim's was recorded first meanwhile. */
class DecidedMeanwhile extends Error {
  constructor(readonly first: DecisionView) {
    super('the pause was decided first with another decision');
  }
}

async function claimInTx(db: PlaneDb, projectId: string, executionId: string, checkpointId: string, writerId: string, releaseAfterMs: number, decisionId: string | null) {
  try {
    return await claimOnce(db, projectId, executionId, checkpointId, writerId, releaseAfterMs, decisionId);
  } catch (e) {
    if (e instanceof DecidedMeanwhile) return { won: false as const, decided: e.first, writerId: '', claimedAt: '' };
    throw e;
  }
}

function claimOnce(db: PlaneDb, projectId: string, executionId: string, checkpointId: string, writerId: string, releaseAfterMs: number, decisionId: string | null) {
  return db.transaction(async (tx) => {
    const [known] = await tx
      .select({ id: checkpoints.id })
      .from(checkpoints)
      // only a pause's checkpoint (status interrupted) is claimable: a claim of any other row would be a claims row for nothing
      .where(and(eq(checkpoints.projectId, projectId), eq(checkpoints.id, checkpointId), eq(checkpoints.executionId, executionId), eq(checkpoints.status, 'interrupted')));
    if (!known) {
      // a run deleted (or cancelled) on the plane keeps a claim row on its pause though its checkpoints are gone:
      // the asker lost it for good (409, never a 404 a worker retries forever)
      const [closed] = await tx
        .select()
        .from(claims)
        .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId), eq(claims.executionId, executionId)));
      if (closed && (closed.source === 'delete' || closed.source === 'cancel')) {
        return { won: false as const, closed: closed.source, writerId: closed.writerId, claimedAt: closed.claimedAt.toISOString(), decisionId: null };
      }
      return { won: false as const, notFound: true as const, writerId: '', claimedAt: '' };
    }
    if (decisionId) {
      // The pause's first decision is the one recorded here: a claim applying another one (recorded in a
      // store that had not heard of the first yet) is refused, nothing claimed; the asker applies the first.
      const first = await decisionOf(tx, projectId, executionId, checkpointId);
      // pending, or claimed (held, not applied) by a claim naming it: neither a new claim nor a stale claim's takeover may apply another
      if (first && (first.state === 'pending' || first.state === 'claimed') && first.decisionId !== decisionId) return { won: false as const, decided: first, writerId: '', claimedAt: '' };
    }
    const won = await tx.insert(claims).values({ projectId, checkpointId, executionId, writerId, source: 'api', decisionId }).onConflictDoNothing().returning();
    const [c] = won.length
      ? won
      : await tx
          .select()
          .from(claims)
          .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId)));
    if (c.executionId !== executionId) return { won: false as const, mismatch: true as const, writerId: c.writerId, claimedAt: c.claimedAt.toISOString() };
    let takenFrom: string | null = null;
    if (!won.length && c.writerId !== writerId) {
      const taken = releaseAfterMs > 0 ? await takeOverStale(tx, projectId, checkpointId, writerId, releaseAfterMs, decisionId) : null;
      // the winner's decision (null: a resume from code): a losing decision worker tells 'applied elsewhere' from 'superseded'
      if (!taken) return { won: false as const, writerId: c.writerId, claimedAt: c.claimedAt.toISOString(), decisionId: c.decisionId ?? null, applied: c.appliedAt != null };
      takenFrom = c.writerId;
      won.push(taken);
    }
    if (!won.length) {
      // the holder asking again (it crashed between the two claims): a decision it now applies is recorded once
      if (decisionId && !c.decisionId && !c.appliedAt) {
        await tx
          .update(claims)
          .set({ decisionId })
          .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId)));
      }
      return { won: true as const, writerId, claimedAt: c.claimedAt.toISOString(), takenFrom };
    }
    // the pause's row, locked by this update (after the claims row, the order every claim and ingest takes them in)
    await tx
      .update(pendingInterrupts)
      .set({ state: 'claimed', claimedBy: writerId, claimedAt: won[0].claimedAt })
      .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.checkpointId, checkpointId)));
    if (decisionId && !takenFrom) {
      // recordDecision holds this row's lock from its checks to its commit: a decision recorded since the check above
      // has committed by now, and one not yet recorded will see this claim (PAUSE_CLOSED). Without a claim before this
      // one, another decision of the pause was pending: it is the first, so this claim is rolled back, as if refused above.
      const [other] = await tx
        .select()
        .from(decisions)
        .where(and(eq(decisions.projectId, projectId), eq(decisions.executionId, executionId), eq(decisions.checkpointId, checkpointId), ne(decisions.decisionId, decisionId)));
      if (other) throw new DecidedMeanwhile(decisionView(other, null));
    }
    await refreshExecutions(tx, projectId, [executionId]);
    return { won: true as const, writerId, claimedAt: won[0].claimedAt.toISOString(), takenFrom };
  });
}

type Tx = Parameters<Parameters<PlaneDb['transaction']>[0]>[0];

/** Move a held (never applied) claim older than `releaseAfterMs` to `writerId`; null when it is not stale. */
async function takeOverStale(tx: Tx, projectId: string, checkpointId: string, writerId: string, releaseAfterMs: number, decisionId: string | null) {
  const [taken] = await tx
    .update(claims)
    .set({ writerId, source: 'api', claimedAt: sql`now()`, decisionId })
    .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId), isNull(claims.appliedAt), lt(claims.claimedAt, sql`now() - make_interval(secs => ${releaseAfterMs / 1000})`)))
    .returning();
  return taken ?? null;
}

/**
 * Give back a held claim: only its holder may, and only while its local claim
 * was never reported (an applied claim is final). The pause is open again.
 */
export async function releaseClaim(db: PlaneDb, projectId: string, executionId: string, checkpointId: string, writerId: string) {
  const r = await releaseInTx(db, projectId, executionId, checkpointId, writerId);
  if (r.released) announceChanges(db, projectId);
  return r;
}

function releaseInTx(db: PlaneDb, projectId: string, executionId: string, checkpointId: string, writerId: string) {
  return db.transaction(async (tx) => {
    const [pause] = await tx
      .select({ checkpointId: pendingInterrupts.checkpointId })
      .from(pendingInterrupts)
      .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.executionId, executionId), eq(pendingInterrupts.checkpointId, checkpointId)));
    if (!pause) return { released: false as const, notFound: true as const };
    const [c] = await tx
      .select()
      .from(claims)
      .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId), eq(claims.executionId, executionId)));
    if (!c) return { released: false as const };
    if (c.writerId !== writerId) return { released: false as const, heldBy: c.writerId };
    if (c.appliedAt) return { released: false as const, appliedAt: c.appliedAt.toISOString() };
    await tx.delete(claims).where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId)));
    await tx
      .update(pendingInterrupts)
      .set({ state: 'open', claimedBy: null, claimedAt: null })
      .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.checkpointId, checkpointId)));
    await refreshExecutions(tx, projectId, [executionId]);
    return { released: true as const };
  });
}

export type TakeoverOutcome =
  | { outcome: 'won'; fromSeq: number; takenFrom: string | null }
  | { outcome: 'not_found' }
  | { outcome: 'lost'; writerId: string; fromSeq: number; at: string }
  | { outcome: 'live'; writerId: string; lastContactAt: string; liveUntil: string }
  | { outcome: 'stale'; planeSeq: number }
  | { outcome: 'not_running'; status: string };

/**
 * Arbitrate the takeover of a run that is not paused (its writer died mid-run)
 * by `writerId`, whose copy's newest row is `seq`. One winner per (run, seq):
 * the primary key of run_takeovers. In order:
 * - this writer already lost the run to another (a takeover names it the
 *   loser): `lost`, whatever it asks;
 * - the plane holds rows this copy lacks (`seq` below the plane's newest):
 *   `stale` (restore again: the run may have finished or paused meanwhile);
 * - the run is paused or finished on the plane: `not_running` (pauses go
 *   through the claim; the copy here shows the same row);
 * - the newest row is this writer's own: `won`, nothing recorded;
 * - another writer took it over at this seq: `lost`;
 * - the writer of the newest row was heard from (an event of this run) less
 *   than `afterMs` ago by the plane's clock: `live`, with when it may be taken;
 * - else the takeover is recorded: `won`.
 */
export async function takeOverRun(db: PlaneDb, projectId: string, executionId: string, writerId: string, seq: number, afterMs: number): Promise<TakeoverOutcome> {
  return db.transaction(async (tx) => {
    const [ex] = await tx
      .select({ status: executions.status, lastSeq: executions.lastSeq, writerId: executions.writerId })
      .from(executions)
      .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)))
      .for('update');
    if (!ex) return { outcome: 'not_found' as const };
    const [lostBefore] = await tx
      .select()
      .from(runTakeovers)
      .where(and(eq(runTakeovers.projectId, projectId), eq(runTakeovers.executionId, executionId), eq(runTakeovers.loserWriterId, writerId)))
      .orderBy(runTakeovers.fromSeq)
      .limit(1);
    if (lostBefore) return { outcome: 'lost' as const, writerId: lostBefore.winnerWriterId, fromSeq: lostBefore.fromSeq, at: lostBefore.at.toISOString() };
    // a copy behind the plane's first: it may not know the run finished (or paused) meanwhile
    if (seq < ex.lastSeq) return { outcome: 'stale' as const, planeSeq: ex.lastSeq };
    if (ex.status !== 'running') return { outcome: 'not_running' as const, status: ex.status };
    if (ex.writerId === writerId || seq > ex.lastSeq) {
      // its own newest row (on the plane, or rows the plane has not seen yet): nothing to take over
      return { outcome: 'won' as const, fromSeq: ex.lastSeq, takenFrom: null };
    }
    const [already] = await tx
      .select()
      .from(runTakeovers)
      .where(and(eq(runTakeovers.projectId, projectId), eq(runTakeovers.executionId, executionId), eq(runTakeovers.fromSeq, ex.lastSeq)));
    if (already) {
      return already.winnerWriterId === writerId
        ? { outcome: 'won' as const, fromSeq: ex.lastSeq, takenFrom: already.loserWriterId }
        : { outcome: 'lost' as const, writerId: already.winnerWriterId, fromSeq: already.fromSeq, at: already.at.toISOString() };
    }
    const prev = ex.writerId ?? '';
    const [contact] = await tx
      .select({
        at: runContacts.lastContactAt,
        live: sql<boolean>`${runContacts.lastContactAt} > now() - make_interval(secs => ${afterMs / 1000})`,
        until: sql<string>`to_char((${runContacts.lastContactAt} + make_interval(secs => ${afterMs / 1000})) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
      })
      .from(runContacts)
      .where(and(eq(runContacts.projectId, projectId), eq(runContacts.executionId, executionId), eq(runContacts.writerId, prev)));
    if (contact?.live) return { outcome: 'live' as const, writerId: prev, lastContactAt: contact.at.toISOString(), liveUntil: contact.until };
    await tx.insert(runTakeovers).values({ projectId, executionId, fromSeq: ex.lastSeq, winnerWriterId: writerId, loserWriterId: prev, loserLastContactAt: contact?.at ?? null });
    return { outcome: 'won' as const, fromSeq: ex.lastSeq, takenFrom: prev };
  });
}
