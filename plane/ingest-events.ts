/**
 * Ingest's per-kind event handlers: each stores one outbox event (not a
 * checkpoint: those go in sets, ingest.ts storeCheckpoints) inside its batch's
 * transaction (its savepoint, when the transaction holds other batches), after recording the event's id (deduped: a repeat with the same
 * payload is a duplicate, with another a conflict). A handler refuses its event
 * by `reject` (the batch quarantines it); it never throws for bad input.
 */
import { and, eq } from 'drizzle-orm';
import { ErrorCode } from '../shared/errors.js';
import type { OutboxEvent } from '../shared/rows.js';
import {
  checkpoints,
  claimConflicts,
  claims,
  events,
  executions,
  holes,
  idempotency,
  pendingInterrupts,
  runContacts,
  runOwners,
  runRequests,
  runTakeovers,
} from './db/schema.js';
import { drawKeys, stampKeys } from './clocks.js';
import { storeIngestedDecision } from './decisions.js';
import type { Tx } from './db/open.js';
import { hashOf, type Item, reject } from './ingest-item.js';

async function recordEvent(tx: Tx, projectId: string, writerId: string, item: Item): Promise<boolean> {
  const e = item.event!;
  const got = await tx
    .insert(events)
    .values({
      projectId,
      id: e.id,
      kind: e.kind,
      executionId: item.executionId!,
      writerId,
      hash: item.hash!,
      key: e.kind === 'idempotency' ? e.row.key : null,
    })
    .onConflictDoNothing()
    .returning({ id: events.id });
  if (got.length) return true;
  const [prev] = await tx
    .select({ hash: events.hash })
    .from(events)
    .where(and(eq(events.projectId, projectId), eq(events.id, e.id)));
  if (prev?.hash === item.hash) item.result = { id: e.id, status: 'duplicate' };
  else reject(item, 'conflict', `event ${e.id} already stored with a different payload`);
  return false;
}

/**
 * The execution a checkpoint id is known under in this project: its row, the
 * pause it opened, or a claim of it (a pause claimed before its rows arrived).
 * Null when the plane knows nothing of it yet.
 */
async function ownerOf(tx: Tx, projectId: string, checkpointId: string): Promise<string | null> {
  const lookups = [
    () =>
      tx
        .select({ executionId: checkpoints.executionId })
        .from(checkpoints)
        .where(and(eq(checkpoints.projectId, projectId), eq(checkpoints.id, checkpointId))),
    () =>
      tx
        .select({ executionId: pendingInterrupts.executionId })
        .from(pendingInterrupts)
        .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.checkpointId, checkpointId))),
    () =>
      tx
        .select({ executionId: claims.executionId })
        .from(claims)
        .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, checkpointId))),
  ];
  for (const query of lookups) {
    const [hit] = await query().limit(1);
    if (hit) return hit.executionId;
  }
  return null;
}

/**
 * Refuse (invalid) a pause event naming a checkpoint the plane knows under
 * another execution: it would open, claim or close that run's pause, or take
 * its pause's key. `path` names the field in the refusal. True when refused.
 */
async function namesOtherRun(
  c: EventContext,
  path: string,
  checkpointId: string,
  executionId: string,
): Promise<boolean> {
  const owner = await ownerOf(c.tx, c.projectId, checkpointId);
  if (owner === null || owner === executionId) return false;
  reject(
    c.item,
    'invalid',
    `${path}: checkpoint ${checkpointId} belongs to execution '${owner}', not '${executionId}'`,
  );
  return true;
}

/** What an event's handler stores it with: the transaction and the batch's writer, the item, the executions to refresh. */
interface EventContext {
  tx: Tx;
  projectId: string;
  writerId: string;
  item: Item;
  touched: Set<string>;
  /** Executions the transaction's batches deleted → the deleting batch's writer (the change feed's tombstones). */
  deleted: Map<string, string>;
  /** What the transaction stamps or records as its last steps. */
  last: LastSteps;
}

/** A claim conflict an event showed: recorded at the transaction's end (recordClaimConflicts), with its id. */
export type ClaimConflict = Omit<typeof claimConflicts.$inferInsert, 'id' | 'projectId' | 'at'>;

/**
 * What the events of a transaction's batches leave for its last steps, whose keys are drawn from the project's clocks
 * in commit order (clocks.ts): the runs whose pause they opened, in the batches' order (stampOpenedPauses), and the
 * claim conflicts they found (recordClaimConflicts).
 */
export interface LastSteps {
  opened: Set<string>;
  conflicts: ClaimConflict[];
}

type StoredKind = Exclude<OutboxEvent['kind'], 'checkpoint'>;
type EventOf<K extends StoredKind> = Extract<OutboxEvent, { kind: K }>;

/** Record the event itself (its id, deduped); false when it was a duplicate or a conflict (answered on the item). */
async function recorded(c: EventContext): Promise<boolean> {
  if (!(await recordEvent(c.tx, c.projectId, c.writerId, c.item))) return false;
  c.touched.add(c.item.executionId!);
  return true;
}

/** One handler per event kind (checkpoints go in sets: storeCheckpoints). */
const STORE_EVENT: { [K in StoredKind]: (c: EventContext, e: EventOf<K>) => Promise<void> } = {
  async idempotency({ tx, projectId, writerId, item }, e) {
    const [prev] = await tx
      .select({ hash: idempotency.hash })
      .from(idempotency)
      .where(
        and(
          eq(idempotency.projectId, projectId),
          eq(idempotency.executionId, e.row.executionId),
          eq(idempotency.key, e.row.key),
        ),
      );
    const entryHash = hashOf(e.row.result);
    if (prev && prev.hash !== entryHash) {
      reject(item, 'conflict', `idempotency key '${e.row.key}' already holds a different result`);
      return;
    }
    // an entry does not change its execution's summary: recorded, not touched
    if (!(await recordEvent(tx, projectId, writerId, item))) return;
    if (!prev)
      await tx
        .insert(idempotency)
        .values({ projectId, executionId: e.row.executionId, key: e.row.key, row: e.row, hash: entryHash, writerId })
        .onConflictDoNothing();
  },

  async interrupt_opened(c, e) {
    if (await namesOtherRun(c, 'row.checkpointId', e.row.checkpointId, e.row.executionId)) return;
    if (!(await recorded(c))) return;
    const { tx, projectId } = c;
    const [claimed] = await tx
      .select({ writerId: claims.writerId, at: claims.claimedAt })
      .from(claims)
      .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, e.row.checkpointId)));
    const values = {
      projectId,
      executionId: e.row.executionId,
      checkpointId: e.row.checkpointId,
      row: e.row,
      state: claimed ? 'claimed' : 'open',
      claimedBy: claimed?.writerId ?? null,
      claimedAt: claimed?.at ?? null,
      openedSeq: 0,
    };
    // the run's next pause replaces the row: a new entry of the inbox, whose opened_seq (0 here, a placeholder) is
    // drawn in commit order at the end of the transaction (stampOpenedPauses)
    await tx
      .insert(pendingInterrupts)
      .values(values)
      .onConflictDoUpdate({ target: [pendingInterrupts.projectId, pendingInterrupts.executionId], set: values });
    c.last.opened.add(e.row.executionId);
  },

  async interrupt_claimed(c, e) {
    if (await namesOtherRun(c, 'checkpointId', e.checkpointId, e.executionId)) return;
    if (!(await recorded(c))) return;
    const { tx, projectId } = c;
    // the event is the writer's local claim itself: applied from the start, or applying the claim it held
    const won = await tx
      .insert(claims)
      .values({
        projectId,
        checkpointId: e.checkpointId,
        executionId: e.executionId,
        writerId: e.writerId,
        source: 'ingest',
        claimedAt: new Date(e.claimedAt),
        appliedAt: new Date(e.claimedAt),
        decisionId: e.decisionId ?? null,
      })
      .onConflictDoNothing()
      .returning({ writerId: claims.writerId });
    let winner = e.writerId;
    if (!won.length) {
      const [held] = await tx
        .select({ writerId: claims.writerId, appliedAt: claims.appliedAt, decisionId: claims.decisionId })
        .from(claims)
        .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, e.checkpointId)));
      winner = held.writerId;
      if (winner === e.writerId && !held.appliedAt) {
        await tx
          .update(claims)
          .set({ appliedAt: new Date(e.claimedAt), decisionId: held.decisionId ?? e.decisionId ?? null })
          .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, e.checkpointId)));
      }
      if (winner !== e.writerId) {
        c.last.conflicts.push({
          executionId: e.executionId,
          checkpointId: e.checkpointId,
          winnerWriterId: winner,
          loserWriterId: e.writerId,
          source: 'ingest',
        });
      }
    }
    await tx
      .update(pendingInterrupts)
      .set({ state: 'claimed', claimedBy: winner, claimedAt: new Date(e.claimedAt) })
      .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.checkpointId, e.checkpointId)));
  },

  async interrupt_closed(c, e) {
    if (await namesOtherRun(c, 'checkpointId', e.checkpointId, e.executionId)) return;
    if (!(await recorded(c))) return;
    const { tx, projectId } = c;
    // a cancelled run's pause: closed for good. A claims row in the canceller's name refuses any later
    // claim of it at the plane; a writer that already claimed it meanwhile is recorded as a claim conflict
    const won = await tx
      .insert(claims)
      .values({
        projectId,
        checkpointId: e.checkpointId,
        executionId: e.executionId,
        writerId: e.writerId,
        source: 'cancel',
        claimedAt: new Date(e.closedAt),
        appliedAt: new Date(e.closedAt),
      })
      .onConflictDoNothing()
      .returning({ writerId: claims.writerId });
    if (!won.length) {
      const [held] = await tx
        .select({ writerId: claims.writerId })
        .from(claims)
        .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, e.checkpointId)));
      if (held && held.writerId !== e.writerId) {
        c.last.conflicts.push({
          executionId: e.executionId,
          checkpointId: e.checkpointId,
          winnerWriterId: held.writerId,
          loserWriterId: e.writerId,
          source: 'cancel',
        });
      }
    }
    await tx
      .delete(pendingInterrupts)
      .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.checkpointId, e.checkpointId)));
  },

  async decision_recorded(c, e) {
    // only a local store's decisions travel by the outbox; the plane's own are never sent back
    if (e.row.source !== 'local')
      return reject(
        c.item,
        'invalid',
        "row.source: a decision_recorded event carries a decision recorded in a local store ('local')",
      );
    // a decision naming a pause the plane knows as another run's would take that pause's key from its own decision
    if (await namesOtherRun(c, 'row.checkpointId', e.row.checkpointId, e.row.executionId)) return;
    if (!(await recordEvent(c.tx, c.projectId, c.writerId, c.item))) return;
    c.item.decision = await storeIngestedDecision(c.tx, c.projectId, c.writerId, e.row);
  },

  async execution_deleted(c, e) {
    if (!(await recorded(c))) return;
    const { tx, projectId } = c;
    // its open pause is closed for good, like a cancel's: a decision recorded for it is superseded, never applied
    const [open] = await tx
      .select({ checkpointId: pendingInterrupts.checkpointId })
      .from(pendingInterrupts)
      .where(
        and(
          eq(pendingInterrupts.projectId, projectId),
          eq(pendingInterrupts.executionId, e.executionId),
          eq(pendingInterrupts.state, 'open'),
        ),
      );
    if (open) {
      const at = new Date(e.deletedAt);
      await tx
        .insert(claims)
        .values({
          projectId,
          checkpointId: open.checkpointId,
          executionId: e.executionId,
          writerId: c.writerId,
          source: 'delete',
          claimedAt: at,
          appliedAt: at,
        })
        .onConflictDoNothing();
    }
    const where = <T extends { projectId: unknown; executionId: unknown }>(t: T) =>
      and(eq(t.projectId as never, projectId), eq(t.executionId as never, e.executionId));
    await tx.delete(checkpoints).where(where(checkpoints));
    await tx.delete(pendingInterrupts).where(where(pendingInterrupts));
    await tx.delete(idempotency).where(where(idempotency));
    await tx.delete(holes).where(where(holes));
    await tx.delete(runContacts).where(where(runContacts));
    await tx.delete(runTakeovers).where(where(runTakeovers));
    await tx.delete(runOwners).where(where(runOwners));
    await tx.delete(executions).where(where(executions));
    // a request waiting for the application has no run to act on any more: settled, never applied
    await tx
      .update(runRequests)
      .set({
        state: 'superseded',
        settledBy: c.writerId,
        settledAt: new Date(),
        outcomeCode: ErrorCode.EXECUTION_GONE,
        outcomeMessage: 'the run was deleted',
      })
      .where(and(where(runRequests), eq(runRequests.state, 'open')));
    c.touched.delete(e.executionId);
    c.deleted.set(e.executionId, c.writerId);
  },
};

/**
 * Give the pauses this transaction's batches opened their place in the
 * approvals inbox (GET /v1/pauses pages by `opened_seq`), in the batches'
 * order, from the project's `pauses` clock (clocks.ts): a reader that has
 * paged past seq n never later finds a pause committed behind it. The insert
 * wrote 0, a placeholder: two transactions commit in any order. Call it among
 * the last steps (after refreshExecutions; clocks.ts says the order): it
 * updates only rows the transaction wrote (a pause opened and then closed or
 * deleted in it has no row left to update).
 */
export async function stampOpenedPauses(tx: Tx, projectId: string, opened: ReadonlySet<string>): Promise<void> {
  await stampKeys(tx, projectId, 'pauses', { table: 'pending_interrupts', column: 'opened_seq', by: 'execution_id' }, [
    ...opened,
  ]);
}

/**
 * Record the claim conflicts the transaction's batches found, in their order,
 * with ids from the project's `conflicts` clock (the listing's order), as the
 * transaction's last step: the ids are new to the project, so the insert
 * waits on no other transaction while it holds the clocks.
 */
export async function recordClaimConflicts(tx: Tx, projectId: string, found: ClaimConflict[]): Promise<void> {
  if (!found.length) return;
  const first = await drawKeys(tx, projectId, 'conflicts', found.length);
  await tx.insert(claimConflicts).values(found.map((c, i) => ({ ...c, projectId, id: first + i })));
}

/** Store one event (not a checkpoint) by its kind's handler. */
export async function storeEvent(
  tx: Tx,
  projectId: string,
  writerId: string,
  item: Item,
  touched: Set<string>,
  deleted: Map<string, string>,
  last: LastSteps,
) {
  const e = item.event as EventOf<StoredKind>;
  await (STORE_EVENT[e.kind] as (c: EventContext, e: EventOf<StoredKind>) => Promise<void>)(
    { tx, projectId, writerId, item, touched, deleted, last },
    e,
  );
}
