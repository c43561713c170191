/**
 * How a row the plane refused is recorded in the outbox's quarantine, and read
 * back: the drain (ingest.ts) stores the plane's code and reason as one text,
 * and every reader (lost runs, `waymark sync status`, the local UI's
 * quarantine page) classifies it by that code.
 */
import type { RejectCode } from '../../shared/protocol.js';

const PREFIX = 'plane: ';

/** The quarantine reason of a row the plane refused: `plane: CODE: why`. */
export const planeReason = (code: RejectCode, reason: string): string => `${PREFIX}${code}: ${reason}`;

/** A quarantine reason as the plane's code and reason; null for one the plane did not give (`planeReason`). */
export function planeRefusal(reason: string): { code: string; reason: string } | null {
  if (!reason.startsWith(PREFIX)) return null;
  const m = /^([A-Za-z0-9_]+): ([\s\S]*)$/.exec(reason.slice(PREFIX.length));
  return m ? { code: m[1], reason: m[2] } : null;
}
