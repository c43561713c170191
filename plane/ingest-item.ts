/**
 * One row of an ingest batch as the batch carries it (ingest.ts, and its
 * parts ingest-events.ts and ingest-owners.ts): what was parsed of it, its
 * hash, and its answer. `reject` refuses it; a refused row is quarantined.
 */
import { createHash } from 'node:crypto';
import { LIMITS } from '../shared/limits.js';
import { stableStringify } from '../shared/json.js';
import type { Decision, OutboxEvent } from '../shared/rows.js';
import type { RejectCode, RowResult } from '../shared/protocol.js';

export interface Item {
  index: number;
  id: string | null;
  raw: unknown;
  text: string;
  event?: OutboxEvent;
  hash?: string;
  executionId?: string | null;
  result?: RowResult;
  /** A decision_recorded event: stored, or the pause's first decision kept (this one dropped). */
  decision?: { stored: true } | { stored: false; first: Decision | null };
}

export const hashOf = (v: unknown) => createHash('sha256').update(stableStringify(v)).digest('hex');

/** Text taken from a refused payload for the quarantine record: Postgres text cannot hold NUL. */
export function clean(s: string, max: number): string {
  return s.slice(0, max).replace(/\u0000/g, '\uFFFD');
}

export function reject(item: Item, code: RejectCode, reason: string): void {
  item.result = { id: item.id, status: 'rejected', code, reason: clean(reason, LIMITS.reasonLength) };
}
