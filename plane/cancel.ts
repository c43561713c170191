/**
 * Cancel at the plane (POST /v1/executions/:id/cancel): a change of the run's
 * owner to "nobody, cancelled" (owners.ts), and the cancel marker that ends
 * its history here.
 */
import { and, eq, sql } from 'drizzle-orm';
import { chainBase, decodeChain, encodeState } from '../shared/codec.js';
import { ErrorCode, issueProblems } from '../shared/errors.js';
import { uuidv7 } from '../shared/ids.js';
import { CancelRequest, givenReason } from '../shared/protocol.js';
import { cancelMarkerFields, type Checkpoint, type EncodedState, ExecutionId } from '../shared/rows.js';
import type { PlaneDb } from './db/open.js';
import { checkpoints, claims, executions, pendingInterrupts, runOwners } from './db/schema.js';
import { announceChanges } from './changes.js';
import { executionNotFound, refusal } from './http/errors.js';
import { hashOf } from './ingest-item.js';
import { cancelReasonOf, newestRows, runFacts } from './reads/newest-rows.js';
import { refreshExecutions } from './run-summary.js';
import { fenceWriter, lockedOwner, PLANE_WRITER, setOwner } from './owners.js';

/**
 * Every problem of a cancel's body (CancelRequest: an optional reason, within LIMITS.reasonLength, that the
 * database can store: no U+0000, no lone surrogate; an unknown field named), the one rule of the API's body and the
 * inspector's Cancel form's.
 */
export function cancelBodyProblems(body: unknown): string[] {
  const r = CancelRequest.safeParse(body);
  return r.success ? [] : issueProblems(r.error, 'the body');
}

/** 400 INVALID_REQUEST naming every problem of a cancel's body (`details.problems`); nothing was cancelled. */
export function refuseBadCancelBody(body: unknown): void {
  const problems = cancelBodyProblems(body);
  if (problems.length)
    throw refusal(ErrorCode.INVALID_REQUEST, `the run was not cancelled: ${problems.join('; ')}`, {
      details: { problems },
    });
}

/** Who asks for a cancel: the key's project, its id and its name (null: none kept). */
export interface Canceller {
  projectId: string;
  keyId: string;
  keyName: string | null;
}

/**
 * Cancel run `executionId` as `caller` asks with `body` (a good CancelRequest: its reason trimmed, a blank one no
 * reason), the one rule of the API's cancel and the inspector's Cancel form. A run not here (or an id no run can
 * have) is refused EXECUTION_NOT_FOUND, a completed run ALREADY_FINISHED (thrown); else the run is cancelled
 * (`alreadyCancelled`: it was, and the reason was not recorded).
 */
export async function cancelAsked(
  db: PlaneDb,
  executionId: string,
  body: CancelRequest,
  caller: Canceller,
): Promise<Extract<CancelOutcome, { outcome: 'cancelled' }>> {
  // a path no run id can be names no run: not found, never a database error
  if (!ExecutionId.safeParse(executionId).success) throw executionNotFound(executionId);
  const r = await cancelAtPlane(db, caller.projectId, executionId, {
    reason: givenReason(body.reason),
    by: `key:${caller.keyId}`,
    byName: caller.keyName,
  });
  if (r.outcome === 'not_found') throw executionNotFound(executionId);
  if (r.outcome === 'finished')
    throw refusal(ErrorCode.ALREADY_FINISHED, `execution '${executionId}' already completed; nothing was cancelled`, {
      details: { executionId, checkpointId: r.checkpointId },
    });
  return r;
}

/** The reason a cancelled run's marker gives (null: none given, or the run is not cancelled). */
export async function cancelReasonAt(db: PlaneDb, projectId: string, executionId: string): Promise<string | null> {
  const run = await runFacts(db, projectId, executionId);
  return run ? (cancelReasonOf(run, await newestRows(db, projectId, [run])) ?? null) : null;
}

export type CancelOutcome =
  | {
      outcome: 'cancelled';
      checkpointId: string;
      seq: number;
      alreadyCancelled: boolean;
      closedPause: string | null;
      takenFrom: string | null;
    }
  | { outcome: 'not_found' }
  | { outcome: 'finished'; checkpointId: string };

/** Why and by whom a run is cancelled: the marker's reason (null: none given), the key's id and its name. */
export interface CancelAsk {
  reason: string | null;
  /** Who asked, as the marker says it (`key:<id>`); null: nobody named. */
  by?: string | null;
  /** The asking key's name, kept with the run's owner for its cancel card; null: none kept. */
  byName?: string | null;
}

/**
 * Cancel a run the plane holds: the owner becomes "nobody, cancelled" (the
 * epoch grows), the writer that held it is fenced (its later rows refused, its
 * renewal answered RUN_CANCELLED, so it stops at its next boundary), an open
 * pause is closed for good, and a cancel marker is written here after the
 * plane's newest row, carrying that row's state and who asked (`by`, the
 * key's id; `byName`, the key's name, kept with the run's owner for its
 * cancel card): every copy restored from the plane ends with it. A completed run is not cancelled (`finished`).
 */
export async function cancelAtPlane(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  { reason, by = null, byName = null }: CancelAsk,
): Promise<CancelOutcome> {
  const r = await db.transaction(async (tx): Promise<CancelOutcome> => {
    // the owner's row first, then the run's: the order ingest, claims and takeovers take them in
    const o = await lockedOwner(tx, projectId, executionId);
    const [ex] = await tx
      .select({ lastSeq: executions.lastSeq })
      .from(executions)
      .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)))
      .for('update');
    if (!ex) return { outcome: 'not_found' };
    const [newest] = await tx
      .select({ row: checkpoints.row })
      .from(checkpoints)
      .where(and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId)))
      .orderBy(sql`${checkpoints.seq} DESC`)
      .limit(1);
    if (!newest) return { outcome: 'not_found' };
    const last = newest.row as Checkpoint;
    if (last.step === 'run_end' && last.status === 'completed') return { outcome: 'finished', checkpointId: last.id };
    if (last.step === 'run_end' && last.status === 'cancelled')
      return {
        outcome: 'cancelled',
        checkpointId: last.id,
        seq: last.seq,
        alreadyCancelled: true,
        closedPause: null,
        takenFrom: null,
      };
    const chain = await tx
      .select({ id: checkpoints.id, seq: checkpoints.seq, row: checkpoints.row })
      .from(checkpoints)
      .where(
        and(
          eq(checkpoints.projectId, projectId),
          eq(checkpoints.executionId, executionId),
          sql`${checkpoints.seq} >= ${chainBase(last)}`,
        ),
      )
      .orderBy(checkpoints.seq);
    const { state, cursor } = decodeChain(
      chain.map((c) => ({ id: c.id, seq: c.seq, state: (c.row as Checkpoint).state as EncodedState })),
    );
    const id = uuidv7();
    const seq = last.seq + 1;
    const marker: Checkpoint = {
      ...cancelMarkerFields(last, reason, by ?? undefined),
      id,
      executionId,
      seq,
      state: encodeState(cursor, state, id, seq).encoded,
      nodeInput: null,
      interruptReason: null,
      interruptContext: null,
      createdAt: new Date().toISOString(),
      writerId: PLANE_WRITER,
    };
    await tx.insert(checkpoints).values({
      projectId,
      id,
      executionId,
      seq,
      nodeId: marker.nodeId,
      step: marker.step,
      status: marker.status,
      agentPath: marker.agentPath,
      writerId: PLANE_WRITER,
      createdAt: marker.createdAt,
      row: marker,
      hash: hashOf({ kind: 'checkpoint', id, row: marker }),
    } as never);
    const [open] = await tx
      .select({ checkpointId: pendingInterrupts.checkpointId })
      .from(pendingInterrupts)
      .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.executionId, executionId)));
    if (open) {
      // closed for good: a claims row in the plane's name refuses any later claim of it (ALREADY_CLAIMED, closed: cancel)
      await tx
        .insert(claims)
        .values({
          projectId,
          checkpointId: open.checkpointId,
          executionId,
          writerId: PLANE_WRITER,
          source: 'cancel',
          appliedAt: new Date(),
        })
        .onConflictDoNothing();
      await tx
        .delete(pendingInterrupts)
        .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.executionId, executionId)));
    }
    const takenFrom = o && o.state === 'held' ? o.writerId : null;
    if (takenFrom) await fenceWriter(tx, projectId, executionId, takenFrom, PLANE_WRITER, last.seq);
    await setOwner(tx, projectId, executionId, o, { writerId: PLANE_WRITER, state: 'cancelled', bump: true });
    if (byName !== null)
      await tx
        .update(runOwners)
        .set({ cancelledBy: byName })
        .where(and(eq(runOwners.projectId, projectId), eq(runOwners.executionId, executionId)));
    await refreshExecutions(tx, projectId, [executionId], { added: new Map([[executionId, 1]]) });
    return {
      outcome: 'cancelled',
      checkpointId: id,
      seq,
      alreadyCancelled: false,
      closedPause: open?.checkpointId ?? null,
      takenFrom,
    };
  });
  if (r.outcome === 'cancelled' && !r.alreadyCancelled) announceChanges(db, projectId);
  return r;
}
