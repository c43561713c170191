/**
 * The outbox rows both adapters queue, one builder per event kind. A
 * checkpoint event carries no payload: the drain joins the checkpoint row,
 * which the outbox row shares its id with (Postgres; on SQLite the checkpoint
 * row is its own entry, client/sqlite/outbox.ts). Every other kind stores its
 * event as JSON text, with its UTF-8 size for the drain's byte budget.
 */
import { uuidv7 } from '../../shared/ids.js';
import { utf8Bytes } from '../../shared/json.js';
import type { Decision, IdempotencyEntry, OutboxEvent, OutboxKind, PendingInterrupt } from '../../shared/rows.js';
import { canonicalTime, type RowText } from './rows.js';

/** One row of `outbox`, ready for either backend's insert. */
export interface QueuedEvent {
  id: string;
  kind: OutboxKind;
  executionId: string;
  payload: string | null;
  bytes: number;
}

function queued(event: Exclude<OutboxEvent, { kind: 'checkpoint' }>, executionId: string): QueuedEvent {
  const payload = JSON.stringify(event);
  return { id: event.id, kind: event.kind, executionId, payload, bytes: utf8Bytes(payload) };
}

/** The event of a checkpoint just built, for the Postgres outbox: its size is the one `buildRow` measured. */
export function checkpointWritten(rt: RowText): QueuedEvent {
  return { id: rt.row.id, kind: 'checkpoint', executionId: rt.row.executionId, payload: null, bytes: rt.bytes };
}

/** A pause opened (its pending row written with its checkpoint). */
export function interruptOpened(row: PendingInterrupt): QueuedEvent {
  return queued({ kind: 'interrupt_opened', id: uuidv7(), row }, row.executionId);
}

/** A pause claimed by a resumer of this store (applying `decisionId`, when a decision worker claimed it). */
export function interruptClaimed(
  pending: PendingInterrupt,
  writerId: string,
  decisionId: string | null = null,
  claimedAt = canonicalTime(),
): QueuedEvent {
  const { executionId, checkpointId } = pending;
  return queued(
    {
      kind: 'interrupt_claimed',
      id: uuidv7(),
      executionId,
      checkpointId,
      writerId,
      claimedAt,
      ...(decisionId ? { decisionId } : {}),
    },
    executionId,
  );
}

/** A decision recorded in this store (a decision from the plane is never sent back). */
export function decisionRecorded(row: Decision): QueuedEvent {
  return queued({ kind: 'decision_recorded', id: row.decisionId, row }, row.executionId);
}

/** A pause closed without an answer (its run was cancelled). */
export function interruptClosed(pending: PendingInterrupt, writerId: string): QueuedEvent {
  const { executionId, checkpointId } = pending;
  return queued(
    { kind: 'interrupt_closed', id: uuidv7(), executionId, checkpointId, writerId, closedAt: canonicalTime() },
    executionId,
  );
}

/** A side effect's result recorded for the first time. */
export function idempotencyRecorded(row: IdempotencyEntry): QueuedEvent {
  return queued({ kind: 'idempotency', id: uuidv7(), row }, row.executionId);
}

/** An execution deleted here (its unsent events dropped with it). */
export function executionDeleted(executionId: string): QueuedEvent {
  return queued({ kind: 'execution_deleted', id: uuidv7(), executionId, deletedAt: canonicalTime() }, executionId);
}
