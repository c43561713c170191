/** Reading the outbox, alike on both backends: the drain's batch, the operator's stats and quarantine list. */
import type { OutboxEvent, OutboxKind } from '../../shared/rows.js';
import type { OutboxEntry, OutboxStats, QuarantinedEntry } from '../checkpointer.js';
import { rowFromColumns, type CheckpointColumns } from './columns.js';

export interface OutboxJoinRow extends Partial<CheckpointColumns> {
  o_seq: number | string;
  o_id: string;
  o_kind: OutboxKind;
  o_execution_id: string;
  o_payload: string | null;
  o_bytes: number | string;
  o_created_at: string;
}

/** Build the event of one outbox row; a row that cannot be built says why instead. */
export function entryFromJoin(r: OutboxJoinRow): OutboxEntry {
  const base = {
    id: r.o_id,
    kind: r.o_kind,
    executionId: r.o_execution_id,
    bytes: Number(r.o_bytes),
    createdAt: r.o_created_at,
  };
  try {
    if (r.o_kind === 'checkpoint') {
      if (!r.id) return { ...base, event: null, problem: `checkpoint ${r.o_id} no longer exists locally` };
      return { ...base, event: { kind: 'checkpoint', id: r.o_id, row: rowFromColumns(r as CheckpointColumns) } };
    }
    return { ...base, event: JSON.parse(r.o_payload ?? 'null') as OutboxEvent };
  } catch (e) {
    return { ...base, event: null, problem: (e as Error).message };
  }
}

/** Oldest first, up to `maxBytes` (always at least one entry). */
export function takeByBytes(entries: OutboxEntry[], maxBytes: number): OutboxEntry[] {
  const out: OutboxEntry[] = [];
  let bytes = 0;
  for (const e of entries) {
    if (out.length > 0 && bytes + e.bytes > maxBytes) break;
    out.push(e);
    bytes += e.bytes;
  }
  return out;
}

/** An outbox row (`outbox_entries` on SQLite) as listed for an operator. */
export interface QuarantinedColumns {
  id: string;
  kind: OutboxKind;
  execution_id: string;
  sync_error: string;
  created_at: string;
}

export function quarantinedFromColumns(r: QuarantinedColumns): QuarantinedEntry {
  return { id: r.id, kind: r.kind, executionId: r.execution_id, reason: r.sync_error, createdAt: r.created_at };
}

/** What `outboxStats` reports from the three counts both backends select. */
export function outboxStatsOf(
  pending: { n: number | string; bytes: number | string; oldest: string | null },
  quarantined: number | string,
  lastReason: string | null,
): OutboxStats {
  return {
    pendingCount: Number(pending.n),
    pendingBytes: Number(pending.bytes),
    oldestPendingAt: pending.oldest,
    oldestPendingAgeMs: pending.oldest ? Math.max(0, Date.now() - Date.parse(pending.oldest)) : null,
    quarantinedCount: Number(quarantined),
    lastQuarantineReason: lastReason,
  };
}

/**
 * The store's record of the batch a drain is posting (`noteSending`): the runs
 * it names, kept under this meta key until the next batch replaces it. A
 * plane may hold those rows though no answer came back (a crash after the
 * plane committed), so `heldByPlane` counts them.
 */
export const SENDING_KEY = 'drain_sending';

/** The note's text: the batch's distinct execution ids, as a JSON array (both backends read it with their JSON functions). */
export function sendingNote(executionIds: readonly string[]): string {
  return JSON.stringify([...new Set(executionIds)]);
}
