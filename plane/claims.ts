/**
 * The plane's arbitration writes: a pause's claim (exactly one writer wins),
 * its release, and the takeover of a run whose writer died mid-run. Each is one
 * transaction; the read side (reads/) only lists what they recorded.
 */
import { and, eq, isNull, lt, ne, sql } from 'drizzle-orm';
import type { PlaneDb, Tx } from './db/open.js';
import {
  checkpoints,
  claims,
  decisions,
  executions,
  idempotency,
  pendingInterrupts,
  runContacts,
  runTakeovers,
} from './db/schema.js';
import { acquireOwner, type Asker, fenceWriter, isCopy, isLive, lockedOwner, setOwner } from './owners.js';
import { announceChanges } from './changes.js';
import { decisionOf, decisionView } from './decisions.js';
import type { DecisionView } from '../shared/protocol.js';
import { refreshExecutions } from './run-summary.js';

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
 * A won claim makes the claimer the run's owner (owners.ts: the epoch grows);
 * a claim by another store instance under the claimer's writer id (a copied
 * store file) is refused (`copy`), whether the claim it repeats is held or applied.
 */
export async function claimPause(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  checkpointId: string,
  who: string | Asker,
  releaseAfterMs = 0,
  decisionId: string | null = null,
) {
  // a bare writer id: an older client's claim, its writer standing for its holder
  const a: Asker =
    typeof who === 'string' ? { writerId: who, holder: who, instance: null, ttlMs: DEFAULT_CLAIM_TTL_MS } : who;
  const r = await claimInTx(db, projectId, executionId, checkpointId, a, releaseAfterMs, decisionId);
  // a won claim changed the run's pause: connected stores following the change feed hear of it
  if (r.won) announceChanges(db, projectId);
  return r;
}

/** Thrown inside a claim's transaction to roll its claim back: another store instance under the claimer's writer id owns the run. */
class CopyOfWriter extends Error {}

/** How long a claim from a client that names no ttl makes its claimer the owner. */
const DEFAULT_CLAIM_TTL_MS = 30_000;

/** Thrown inside a claim's transaction to roll its claim back: a decision other than the claim's was recorded first meanwhile. */
class DecidedMeanwhile extends Error {
  constructor(readonly first: DecisionView) {
    super('the pause was decided first with another decision');
  }
}

async function claimInTx(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  checkpointId: string,
  a: Asker,
  releaseAfterMs: number,
  decisionId: string | null,
) {
  try {
    return await claimOnce(db, projectId, executionId, checkpointId, a, releaseAfterMs, decisionId);
  } catch (e) {
    if (e instanceof DecidedMeanwhile) return { won: false as const, decided: e.first, writerId: '', claimedAt: '' };
    if (e instanceof CopyOfWriter)
      return { won: false as const, copy: true as const, writerId: a.writerId, claimedAt: '' };
    throw e;
  }
}

function claimOnce(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  checkpointId: string,
  a: Asker,
  releaseAfterMs: number,
  decisionId: string | null,
) {
  const writerId = a.writerId;
  return db.transaction(async (tx) => {
    // the run's owner first: the lock every transaction about who owns the run takes before any other of its rows
    await lockedOwner(tx, projectId, executionId);
    const [known] = await tx
      .select({ id: checkpoints.id })
      .from(checkpoints)
      // only a pause's checkpoint (status interrupted) is claimable: a claim of any other row would be a claims row for nothing
      .where(
        and(
          eq(checkpoints.projectId, projectId),
          eq(checkpoints.id, checkpointId),
          eq(checkpoints.executionId, executionId),
          eq(checkpoints.status, 'interrupted'),
        ),
      );
    if (!known) {
      // a run deleted (or cancelled) on the plane keeps a claim row on its pause though its checkpoints are gone:
      // the asker lost it for good (409, never a 404 a worker retries forever)
      const [closed] = await tx
        .select()
        .from(claims)
        .where(
          and(
            eq(claims.projectId, projectId),
            eq(claims.checkpointId, checkpointId),
            eq(claims.executionId, executionId),
          ),
        );
      if (closed && (closed.source === 'delete' || closed.source === 'cancel')) {
        return {
          won: false as const,
          closed: closed.source,
          writerId: closed.writerId,
          claimedAt: closed.claimedAt.toISOString(),
          decisionId: null,
        };
      }
      return { won: false as const, notFound: true as const, writerId: '', claimedAt: '' };
    }
    if (decisionId) {
      // The pause's first decision is the one recorded here: a claim applying another one (recorded in a
      // store that had not heard of the first yet) is refused, nothing claimed; the asker applies the first.
      const first = await decisionOf(tx, projectId, executionId, checkpointId);
      // pending, or claimed (held, not applied) by a claim naming it: neither a new claim nor a stale claim's takeover may apply another
      if (first && (first.state === 'pending' || first.state === 'claimed') && first.decisionId !== decisionId)
        return { won: false as const, decided: first, writerId: '', claimedAt: '' };
    }
    const won = await tx
      .insert(claims)
      .values({ projectId, checkpointId, executionId, writerId, source: 'api', decisionId, instance: a.instance })
      .onConflictDoNothing()
      .returning();
    const [c] = won.length
      ? won
      : await tx
          .select()
          .from(claims)
          .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId)));
    if (c.executionId !== executionId)
      return {
        won: false as const,
        mismatch: true as const,
        writerId: c.writerId,
        claimedAt: c.claimedAt.toISOString(),
      };
    // closed by a cancel or a deletion while its checkpoint stayed: closed for good, never a claim to take over
    if (!won.length && (c.source === 'cancel' || c.source === 'delete'))
      return {
        won: false as const,
        closed: c.source,
        writerId: c.writerId,
        claimedAt: c.claimedAt.toISOString(),
        decisionId: null,
      };
    let takenFrom: string | null = null;
    if (!won.length && c.writerId !== writerId) {
      const taken =
        releaseAfterMs > 0 ? await takeOverStale(tx, projectId, checkpointId, a, releaseAfterMs, decisionId) : null;
      // the winner's decision (null: a resume from code): a losing decision worker tells 'applied elsewhere' from 'superseded'
      if (!taken)
        return {
          won: false as const,
          writerId: c.writerId,
          claimedAt: c.claimedAt.toISOString(),
          decisionId: c.decisionId ?? null,
          applied: c.appliedAt != null,
        };
      takenFrom = c.writerId;
      won.push(taken);
    }
    if (!won.length && c.writerId === writerId && c.source !== 'delete' && c.source !== 'cancel') {
      // the same writer id from another store (a copied file): never a second win of one pause
      const owner = await lockedOwner(tx, projectId, executionId);
      // the claims row names the claim's store, held or applied: another instance under its writer id is a copy
      if (isCopy({ writerId: c.writerId, instance: c.instance, state: 'held' }, a) || isCopy(owner, a))
        return { won: false as const, copy: true as const, writerId, claimedAt: c.claimedAt.toISOString() };
    }
    if (!won.length) {
      // the holder asking again (it crashed between the two claims): a decision it now applies is recorded once
      if (decisionId && !c.decisionId && !c.appliedAt) {
        await tx
          .update(claims)
          .set({ decisionId })
          .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId)));
      }
      const epoch = await acquireOwner(tx, projectId, executionId, a, await lockedOwner(tx, projectId, executionId));
      return { won: true as const, writerId, claimedAt: c.claimedAt.toISOString(), takenFrom, epoch };
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
        .where(
          and(
            eq(decisions.projectId, projectId),
            eq(decisions.executionId, executionId),
            eq(decisions.checkpointId, checkpointId),
            ne(decisions.decisionId, decisionId),
          ),
        );
      if (other) throw new DecidedMeanwhile(decisionView(other, null));
    }
    const owner = await lockedOwner(tx, projectId, executionId);
    if (isCopy(owner, a)) throw new CopyOfWriter();
    const epoch = await acquireOwner(tx, projectId, executionId, a, owner);
    await refreshExecutions(tx, projectId, [executionId]);
    return { won: true as const, writerId, claimedAt: won[0].claimedAt.toISOString(), takenFrom, epoch };
  });
}

/** Move a held (never applied) claim older than `releaseAfterMs` to `writerId`; null when it is not stale. */
async function takeOverStale(
  tx: Tx,
  projectId: string,
  checkpointId: string,
  a: Asker,
  releaseAfterMs: number,
  decisionId: string | null,
) {
  const [taken] = await tx
    .update(claims)
    .set({ writerId: a.writerId, source: 'api', claimedAt: sql`now()`, decisionId, instance: a.instance })
    .where(
      and(
        eq(claims.projectId, projectId),
        eq(claims.checkpointId, checkpointId),
        isNull(claims.appliedAt),
        lt(claims.claimedAt, sql`now() - make_interval(secs => ${releaseAfterMs / 1000})`),
      ),
    )
    .returning();
  return taken ?? null;
}

/**
 * Give back a held claim: only its holder may, and only while its local claim
 * was never reported (an applied claim is final). The pause is open again.
 */
export async function releaseClaim(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  checkpointId: string,
  writerId: string,
) {
  const r = await releaseInTx(db, projectId, executionId, checkpointId, writerId);
  if (r.released) announceChanges(db, projectId);
  return r;
}

function releaseInTx(db: PlaneDb, projectId: string, executionId: string, checkpointId: string, writerId: string) {
  return db.transaction(async (tx) => {
    const owner = await lockedOwner(tx, projectId, executionId);
    const [pause] = await tx
      .select({ checkpointId: pendingInterrupts.checkpointId })
      .from(pendingInterrupts)
      .where(
        and(
          eq(pendingInterrupts.projectId, projectId),
          eq(pendingInterrupts.executionId, executionId),
          eq(pendingInterrupts.checkpointId, checkpointId),
        ),
      );
    if (!pause) return { released: false as const, notFound: true as const };
    const [c] = await tx
      .select()
      .from(claims)
      .where(
        and(
          eq(claims.projectId, projectId),
          eq(claims.checkpointId, checkpointId),
          eq(claims.executionId, executionId),
        ),
      );
    if (!c) return { released: false as const };
    if (c.writerId !== writerId) return { released: false as const, heldBy: c.writerId };
    if (c.appliedAt) return { released: false as const, appliedAt: c.appliedAt.toISOString() };
    await tx.delete(claims).where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId)));
    // the claim made its writer the owner: the pause is open again, and so is the run to the next claim
    if (owner?.writerId === writerId && owner.state === 'held')
      await setOwner(tx, projectId, executionId, owner, { writerId, state: 'released', bump: false });
    await tx
      .update(pendingInterrupts)
      .set({ state: 'open', claimedBy: null, claimedAt: null })
      .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.checkpointId, checkpointId)));
    await refreshExecutions(tx, projectId, [executionId]);
    return { released: true as const };
  });
}

export type TakeoverOutcome =
  | { outcome: 'won'; fromSeq: number; takenFrom: string | null; epoch: number }
  | { outcome: 'not_found' }
  | { outcome: 'live'; writerId: string; liveUntil: string }
  | { outcome: 'lost'; writerId: string; fromSeq: number; at: string; free: boolean }
  | { outcome: 'stale'; planeSeq: number; missingKeys: string[]; missingCount: number }
  | { outcome: 'not_running'; status: string }
  | { outcome: 'copy'; writerId: string };

/**
 * Arbitrate the takeover of a run that is not paused (its runner died or
 * stalled mid-run) by `a`, whose copy's newest row is `seq`, through the run's
 * one owner record (owners.ts). In order:
 * - another store instance under the asker's writer id owns it: `copy`;
 * - the asker was fenced out of the run (it lost it) and its copy holds rows
 *   past its fence, a branch the plane refused: `lost`, naming the winner,
 *   and `free` when nobody holds the run live (the winner died too): a copy
 *   that takes the plane's branch in place of its own may then take it over;
 * - another machine's hold is live: `live`, with when it may be taken;
 * - the copy lacks what the plane holds: rows (`seq` below the plane's
 *   newest) or an idempotency entry (`keys` given and one missing): `stale`,
 *   with what is missing (an effect the plane recorded is never run again by
 *   a taker that did not know of it);
 * - the run is paused or finished on the plane: `not_running`;
 * - the owner is the asker's own store (a restarted process; the store's own
 *   lease already arbitrated between its processes), or its hold has expired
 *   by the plane's clock, or nobody holds it: `won`, the epoch grows, the
 *   previous owner is fenced from the plane's newest seq.
 * A winner that dies before writing is taken over in turn once its own hold
 * expires: no takeover is permanent.
 */
export async function takeOverRun(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  a: Asker,
  seq: number,
  keys: readonly string[] | null,
  lastId: string | null = null,
): Promise<TakeoverOutcome> {
  const r = await db.transaction(async (tx): Promise<TakeoverOutcome> => {
    // the owner's row first, then the run's: the order ingest and claims take them in
    const owner = await lockedOwner(tx, projectId, executionId);
    const [ex] = await tx
      .select({ status: executions.status, lastSeq: executions.lastSeq, writerId: executions.writerId })
      .from(executions)
      .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)))
      .for('update');
    if (!ex) return { outcome: 'not_found' };
    const copy = isCopy(owner, a);
    // a copy of this writer's store while the other instance holds it live: never two runners under one writer id
    if (copy && (await isLive(tx, owner!))) return { outcome: 'copy', writerId: a.writerId };
    const [fence] = await tx
      .select({ fromSeq: runTakeovers.fromSeq, winner: runTakeovers.winnerWriterId, at: runTakeovers.at })
      .from(runTakeovers)
      .where(
        and(
          eq(runTakeovers.projectId, projectId),
          eq(runTakeovers.executionId, executionId),
          eq(runTakeovers.loserWriterId, a.writerId),
        ),
      )
      .orderBy(runTakeovers.fromSeq)
      .limit(1);
    // fenced, with rows past its fence: this copy ran on after it lost the run, on a branch the plane refused, unless
    // its newest row is the plane's own (it took the winner's rows since: it is the plane's copy)
    if (fence && seq > fence.fromSeq && !(await holdsRow(tx, projectId, executionId, seq, lastId))) {
      // free: nobody holds the run live, so this copy, once it takes the plane's branch in place of its own, may take it
      const free = !owner || !(await isLive(tx, owner));
      return { outcome: 'lost', writerId: fence.winner, fromSeq: fence.fromSeq, at: fence.at.toISOString(), free };
    }
    // another machine holds it live: nothing to take, whatever this copy lacks
    const own = !!owner && owner.writerId === a.writerId && !copy;
    if (owner && !own && (await isLive(tx, owner)))
      return { outcome: 'live', writerId: owner.writerId, liveUntil: owner.expiresAt!.toISOString() };
    const missing = keys ? await missingKeys(tx, projectId, executionId, keys) : { keys: [], count: 0 };
    if (seq < ex.lastSeq || missing.count > 0)
      return { outcome: 'stale', planeSeq: ex.lastSeq, missingKeys: missing.keys, missingCount: missing.count };
    if (ex.status !== 'running') return { outcome: 'not_running', status: ex.status };
    const from = owner && !own && owner.state === 'held' ? owner.writerId : null;
    if (from) {
      const [contact] = await tx
        .select({ at: runContacts.lastContactAt })
        .from(runContacts)
        .where(
          and(
            eq(runContacts.projectId, projectId),
            eq(runContacts.executionId, executionId),
            eq(runContacts.writerId, from),
          ),
        );
      await fenceWriter(tx, projectId, executionId, from, a.writerId, ex.lastSeq, contact?.at ?? null);
    }
    const epoch = await acquireOwner(tx, projectId, executionId, a, owner);
    return { outcome: 'won', fromSeq: ex.lastSeq, takenFrom: from, epoch };
  });
  if (r.outcome === 'won' && r.takenFrom) announceChanges(db, projectId);
  return r;
}

/** Whether the plane's row of this run at `seq` is the row `id` (null: not asked). */
async function holdsRow(
  tx: Tx,
  projectId: string,
  executionId: string,
  seq: number,
  id: string | null,
): Promise<boolean> {
  if (!id) return false;
  const [r] = await tx
    .select({ id: checkpoints.id })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.projectId, projectId),
        eq(checkpoints.executionId, executionId),
        eq(checkpoints.seq, seq),
        eq(checkpoints.id, id),
      ),
    );
  return !!r;
}

/** The run's idempotency keys the plane holds and `keys` does not (the first 50), and how many. */
async function missingKeys(
  tx: Tx,
  projectId: string,
  executionId: string,
  keys: readonly string[],
): Promise<{ keys: string[]; count: number }> {
  const held = await tx
    .select({ key: idempotency.key })
    .from(idempotency)
    .where(and(eq(idempotency.projectId, projectId), eq(idempotency.executionId, executionId)));
  const have = new Set(keys);
  const lacking = held.map((h) => h.key).filter((k) => !have.has(k));
  return { keys: lacking.slice(0, 50), count: lacking.length };
}
