import type { OutboxEvent, OutboxKind } from '../../shared/rows.js';
import type { OutboxEntry } from '../checkpointer.js';
import { rowFromColumns, type CheckpointColumns } from './rows.js';

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
