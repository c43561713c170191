/**
 * The one owner of each run at the plane (DESIGN §5b): one record per run,
 * whatever made the change of owner (the run's first row, a pause's claim,
 * the takeover of a crashed run, a cancel). The epoch counts the changes of
 * owner; the fencing itself is by holder (renewals), by store instance (a
 * copied store) and by writer and seq (rows): a writer that lost the run is
 * fenced (its later rows refused) until it acquires the run again with a copy
 * that holds what the plane holds.
 *
 * Glossary
 *   owner     (writer, holder, instance, epoch, state, expiresAt) per run
 *   holder    one acquisition of a run by one process (`<writer>#<process>/<n>`)
 *   instance  one store (a copied store file is another instance under one writer id)
 *   fence     a `run_takeovers` row: the loser's rows after `fromSeq` are refused
 *
 * States
 *   held       a runner owns it until `expiresAt` (renewed by its heartbeat and rows)
 *   released   paused (or its runner gave it up): the next claim or takeover acquires it
 *   ended      a completed or failed run-end marker arrived
 *   cancelled  cancelled: nobody owns it again
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import { type Checkpoint, type IdempotencyEntry, isCancelMarker } from '../shared/rows.js';
import { type PlaneDb, rowsOf, type Tx } from './db/open.js';
import { executions, idempotency, runOwners, runTakeovers } from './db/schema.js';

/** The writer id the plane's own rows carry (a cancel marker written here). */
export const PLANE_WRITER = 'plane';

/** Who asks to own a run: a writer's acquisition, from one store instance. */
export interface Asker {
  writerId: string;
  /** The acquisition (a lease holder); an older client sends none and its writer id stands for it. */
  holder: string;
  /** The store instance; null from an older client (no copy detection). */
  instance: string | null;
  /** How long the ownership lasts without a renewal. */
  ttlMs: number;
}

export type OwnerRow = typeof runOwners.$inferSelect;

/**
 * Lock the owner records of these runs, in the order of their ids, before any
 * other row of them: every transaction that reads or changes who owns a run
 * (ingest, a claim, a takeover, a renewal, a cancel) takes this lock first, so
 * they serialise per run and never deadlock on each other. A run with no
 * record yet locks nothing (its first row creates the record).
 */
export async function lockOwners(tx: Tx, projectId: string, executionIds: readonly string[]): Promise<void> {
  const ids = [...new Set(executionIds)].sort();
  if (!ids.length) return;
  await tx
    .select({ id: runOwners.executionId })
    .from(runOwners)
    .where(and(eq(runOwners.projectId, projectId), inArray(runOwners.executionId, ids)))
    .orderBy(runOwners.executionId)
    .for('update');
}

/**
 * Lock, as `lockOwners` does, the owner records of these runs that no other
 * transaction holds, without waiting for the others: the runs whose records
 * another transaction holds are returned (a group of ingest batches sends the
 * batches of those runs on their own way rather than wait with all the rest).
 */
export async function lockFreeOwners(tx: Tx, projectId: string, executionIds: readonly string[]): Promise<Set<string>> {
  const ids = [...new Set(executionIds)];
  if (!ids.length) return new Set();
  const list = sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );
  // one statement: each record of these runs, and whether it could be locked here (SKIP LOCKED never waits, so the
  // order it locks in does not matter)
  const got = await tx.execute(sql`
    SELECT o.execution_id AS id, l.execution_id IS NULL AS held
    FROM run_owners o
    LEFT JOIN (
      SELECT execution_id FROM run_owners
      WHERE project_id = ${projectId} AND execution_id IN (${list})
      FOR UPDATE SKIP LOCKED
    ) l ON l.execution_id = o.execution_id
    WHERE o.project_id = ${projectId} AND o.execution_id IN (${list})`);
  return new Set(rowsOf<{ id: string; held: boolean }>(got).flatMap((r) => (r.held ? [r.id] : [])));
}

/** The run's owner record, locked to the end of the transaction; null when the run has none yet. */
export async function lockedOwner(tx: Tx, projectId: string, executionId: string): Promise<OwnerRow | null> {
  const [o] = await tx
    .select()
    .from(runOwners)
    .where(and(eq(runOwners.projectId, projectId), eq(runOwners.executionId, executionId)))
    .for('update');
  return o ?? null;
}

/** Another store instance under the asker's writer id holds the run: a copied store file (or one writer id given to two stores). */
export function isCopy(
  owner: { writerId: string; instance: string | null; state: string } | null,
  a: Pick<Asker, 'writerId' | 'instance'>,
): boolean {
  return (
    !!owner &&
    owner.state === 'held' &&
    owner.writerId === a.writerId &&
    owner.instance !== null &&
    a.instance !== null &&
    owner.instance !== a.instance
  );
}

/** Over run_owners: a held owner whose hold still runs by the plane's clock (none without an expiry). */
export const ownerIsLive = sql<boolean>`(${runOwners.state} = 'held' AND ${runOwners.expiresAt} > now())`;

/** Whether a held owner's hold still runs by the plane's clock (ownerIsLive). */
export async function isLive(tx: Tx, owner: OwnerRow): Promise<boolean> {
  if (owner.state !== 'held' || !owner.expiresAt) return false;
  const [r] = await tx
    .select({ live: ownerIsLive })
    .from(runOwners)
    .where(and(eq(runOwners.projectId, owner.projectId), eq(runOwners.executionId, owner.executionId)));
  return r?.live === true;
}

const expiry = (ttlMs: number) => sql`now() + make_interval(secs => ${ttlMs / 1000})`;

/**
 * Make `a` the run's owner (a claim or a takeover won): the epoch grows by one,
 * and the asker's own fences of the run are lifted (its copy was checked to
 * hold what the plane holds). Returns the new epoch.
 */
export async function acquireOwner(
  tx: Tx,
  projectId: string,
  executionId: string,
  a: Asker,
  prev: OwnerRow | null,
): Promise<number> {
  const epoch = (prev?.epoch ?? 0) + 1;
  const values = {
    writerId: a.writerId,
    holder: a.holder,
    instance: a.instance,
    epoch,
    state: 'held',
    expiresAt: expiry(a.ttlMs),
    updatedAt: sql`now()`,
  };
  await tx
    .insert(runOwners)
    .values({ projectId, executionId, ...values } as never)
    .onConflictDoUpdate({ target: [runOwners.projectId, runOwners.executionId], set: values as never });
  await tx
    .delete(runTakeovers)
    .where(
      and(
        eq(runTakeovers.projectId, projectId),
        eq(runTakeovers.executionId, executionId),
        eq(runTakeovers.loserWriterId, a.writerId),
      ),
    );
  return epoch;
}

/** Fence `loser` out of the run: its rows after `fromSeq` are refused (taken_over) until it acquires the run again. */
export async function fenceWriter(
  tx: Tx,
  projectId: string,
  executionId: string,
  loser: string,
  winner: string,
  fromSeq: number,
  loserLastContactAt: Date | null = null,
): Promise<void> {
  if (loser === winner || loser === PLANE_WRITER) return;
  await tx
    .insert(runTakeovers)
    .values({ projectId, executionId, fromSeq, winnerWriterId: winner, loserWriterId: loser, loserLastContactAt })
    .onConflictDoNothing();
}

export type RenewOutcome =
  | { outcome: 'held'; epoch: number; expiresAt: string }
  | { outcome: 'released'; released: boolean }
  /** `ownEnd`: the run ended under the asker's own store (its instance, or none recorded) and the asker is not fenced (its outbox may be ahead: a run deleted there and started again under the id). */
  | { outcome: 'lost'; writerId: string; epoch: number; state: string; ownEnd: boolean }
  | { outcome: 'cancelled'; epoch: number }
  | { outcome: 'copy'; writerId: string }
  | { outcome: 'not_found' };

/**
 * The owner's heartbeat (or its release): the hold of `a` is extended by its
 * ttl (at least `floorMs`), or given up with `release`. A run the plane
 * holds with no owner record (its first row never came here) is acquired by
 * the asker; a run it does not hold is `not_found` (its first row acquires it). Another holder,
 * an ended run or a fence of the asker is `lost`; a cancel is `cancelled`.
 */
export async function renewOwner(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  a: Asker & { release: boolean },
  floorMs: number,
): Promise<RenewOutcome> {
  return db.transaction(async (tx) => {
    const o = await lockedOwner(tx, projectId, executionId);
    if (o?.state === 'cancelled') return { outcome: 'cancelled' as const, epoch: o.epoch };
    if (isCopy(o, a)) return { outcome: 'copy' as const, writerId: a.writerId };
    // any holder of the owner's store: its processes take turns by the store's own lease (a restarted one renews)
    const mine = !!o && o.writerId === a.writerId && !isCopy(o, a);
    if (a.release) {
      if (!o || !mine || o.state !== 'held') return { outcome: 'released' as const, released: false };
      await tx
        .update(runOwners)
        .set({ state: 'released', holder: null, expiresAt: null, updatedAt: sql`now()` as never })
        .where(and(eq(runOwners.projectId, projectId), eq(runOwners.executionId, executionId)));
      return { outcome: 'released' as const, released: true };
    }
    if (!o) {
      // a run whose first row the plane never saw (an older plane's run) is acquired here; an unknown one is not
      const [known] = await tx
        .select({ id: executions.executionId })
        .from(executions)
        .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)));
      if (!known) return { outcome: 'not_found' as const };
      if (await isFenced(tx, projectId, executionId, a.writerId))
        return { outcome: 'lost' as const, writerId: '', epoch: 0, state: 'fenced', ownEnd: false };
      const epoch = await acquireOwner(tx, projectId, executionId, { ...a, ttlMs: Math.max(a.ttlMs, floorMs) }, null);
      return { outcome: 'held' as const, epoch, expiresAt: await expiresOf(tx, projectId, executionId) };
    }
    if (
      o.state === 'released' &&
      o.writerId === a.writerId &&
      !(await isFenced(tx, projectId, executionId, a.writerId))
    ) {
      // its own pause, claimed offline (the claim's event is on its way), or its own failed run resumed: never a run
      // another writer released after taking it from this one (that writer is the last owner, or this one is fenced)
      const epoch = await acquireOwner(tx, projectId, executionId, { ...a, ttlMs: Math.max(a.ttlMs, floorMs) }, o);
      return { outcome: 'held' as const, epoch, expiresAt: await expiresOf(tx, projectId, executionId) };
    }
    if (!mine || o.state !== 'held') {
      // (an owner record without an instance, acquired by ingest and never renewed, cannot tell a copy from this store)
      const ownEnd =
        mine &&
        o.state === 'ended' &&
        (o.instance === null || o.instance === (a.instance ?? null)) &&
        !(await isFenced(tx, projectId, executionId, a.writerId));
      return { outcome: 'lost' as const, writerId: o.writerId, epoch: o.epoch, state: o.state, ownEnd };
    }
    await tx
      .update(runOwners)
      .set({
        holder: a.holder,
        instance: a.instance ?? o.instance,
        expiresAt: expiry(Math.max(a.ttlMs, floorMs)) as never,
        updatedAt: sql`now()` as never,
      })
      .where(and(eq(runOwners.projectId, projectId), eq(runOwners.executionId, executionId)));
    return { outcome: 'held' as const, epoch: o.epoch, expiresAt: await expiresOf(tx, projectId, executionId) };
  });
}

/**
 * The plane's record of one effect of the run (null: none). The holder asks
 * before starting it: a runner that lost the run may have recorded it after
 * the takeover, and its record, once here, is the effect's result.
 */
export async function recordedEffect(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  key: string,
): Promise<IdempotencyEntry | null> {
  const [r] = await db
    .select({ row: idempotency.row })
    .from(idempotency)
    .where(
      and(eq(idempotency.projectId, projectId), eq(idempotency.executionId, executionId), eq(idempotency.key, key)),
    );
  return (r?.row as IdempotencyEntry | undefined) ?? null;
}

/** Whether `writerId` lost this run and has not acquired it since (a fence of it stands). */
async function isFenced(tx: Tx, projectId: string, executionId: string, writerId: string): Promise<boolean> {
  const [f] = await tx
    .select({ fromSeq: runTakeovers.fromSeq })
    .from(runTakeovers)
    .where(
      and(
        eq(runTakeovers.projectId, projectId),
        eq(runTakeovers.executionId, executionId),
        eq(runTakeovers.loserWriterId, writerId),
      ),
    )
    .limit(1);
  return !!f;
}

async function expiresOf(tx: Tx, projectId: string, executionId: string): Promise<string> {
  const [o] = await tx
    .select({ at: runOwners.expiresAt })
    .from(runOwners)
    .where(and(eq(runOwners.projectId, projectId), eq(runOwners.executionId, executionId)));
  return (o?.at ?? new Date()).toISOString();
}

/**
 * At ingest, for each run of the batch whose rows were accepted: the owner
 * record follows what the rows say. A run's first row makes its writer the
 * owner (epoch 1); a pause releases it; a completed or failed marker ends it
 * (a failed run may be resumed: its next acquisition takes it); a cancel marker
 * cancels it and fences the writer that held it; any other row of the owner
 * extends its hold by `floorMs`.
 */
export async function followRows(
  tx: Tx,
  projectId: string,
  writerId: string,
  runs: Map<string, { last: Checkpoint | null; paused: boolean; first: boolean; graph: boolean }>,
  floorMs: number,
): Promise<void> {
  for (const [executionId, r] of [...runs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const o = await lockedOwner(tx, projectId, executionId);
    const last = r.last;
    if (last && isCancelMarker(last)) {
      if (o?.state === 'held' && o.writerId !== last.writerId)
        await fenceWriter(tx, projectId, executionId, o.writerId, last.writerId, last.seq - 1);
      await setOwner(tx, projectId, executionId, o, { writerId: last.writerId, state: 'cancelled', bump: true });
      continue;
    }
    if (last && last.step === 'run_end') {
      await setOwner(tx, projectId, executionId, o, {
        writerId,
        state: last.status === 'completed' ? 'ended' : 'released',
        bump: false,
      });
      continue;
    }
    if (r.paused) {
      await setOwner(tx, projectId, executionId, o, { writerId, state: 'released', bump: false });
      continue;
    }
    if (!last) continue;
    if (!o) {
      // acquired by the run's first row: a row of a run met mid-way (a forger's, a restored copy's) acquires nothing;
      // nor does a LangGraph thread's (its interrupts are not pauses the plane releases; `exclusive` arbitrates it)
      if (!r.first || r.graph) continue;
      await tx
        .insert(runOwners)
        .values({
          projectId,
          executionId,
          writerId,
          holder: null,
          instance: null,
          epoch: 1,
          state: 'held',
          expiresAt: expiry(floorMs) as never,
        })
        .onConflictDoNothing();
    } else if (o.writerId === writerId && o.state === 'held') {
      await tx
        .update(runOwners)
        .set({
          expiresAt: sql`greatest(${runOwners.expiresAt}, now() + make_interval(secs => ${floorMs / 1000}))` as never,
          updatedAt: sql`now()` as never,
        })
        .where(and(eq(runOwners.projectId, projectId), eq(runOwners.executionId, executionId)));
    } else if (o.state === 'held' && o.writerId !== writerId) {
      // accepted only once the owner's hold expired (refuseOffBranch): this writer runs it now, the other is fenced
      await fenceWriter(tx, projectId, executionId, o.writerId, writerId, last.seq);
      await setOwner(tx, projectId, executionId, o, { writerId, state: 'held', bump: true, ttlMs: floorMs });
    } else if (o.state === 'released' || o.state === 'ended') {
      // rows after a pause claimed offline, or after a failed marker stepped over: their writer runs it now
      await setOwner(tx, projectId, executionId, o, { writerId, state: 'held', bump: true, ttlMs: floorMs });
    }
  }
}

/** Set the run's owner to `to` (its instance kept when the writer stays), the epoch grown when `bump` or new. */
export async function setOwner(
  tx: Tx,
  projectId: string,
  executionId: string,
  o: OwnerRow | null,
  to: { writerId: string; state: string; bump: boolean; ttlMs?: number },
): Promise<void> {
  const epoch = (o?.epoch ?? 0) + (to.bump || !o ? 1 : 0);
  const values = {
    writerId: to.writerId,
    holder: null,
    instance: to.writerId === o?.writerId ? (o?.instance ?? null) : null,
    epoch,
    state: to.state,
    expiresAt: to.state === 'held' ? expiry(to.ttlMs ?? 0) : null,
    updatedAt: sql`now()`,
  };
  await tx
    .insert(runOwners)
    .values({ projectId, executionId, ...values } as never)
    .onConflictDoUpdate({ target: [runOwners.projectId, runOwners.executionId], set: values as never });
}
