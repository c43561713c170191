/**
 * Size limits shared by the client and the plane. Both sides check the same
 * numbers, so a row the store accepts is a row the plane accepts.
 */
import { utf8Bytes } from './json.js';

/** The size limits of rows, ids and batches, the same on the client and the plane. */
export const LIMITS = Object.freeze({
  /** Longest `executionId`, in characters. */
  executionIdLength: 200,
  /** Longest `nodeId`, `agentPath`, `writerId`, idempotency key. */
  nodeIdLength: 512,
  agentPathLength: 1024,
  writerIdLength: 200,
  idempotencyKeyLength: 512,
  /** Largest seq and turn: the int4 both databases store. */
  maxSeq: 2_147_483_647,
  /** Longest interrupt reason / error reason text. */
  reasonLength: 2048,
  /** Longest error code a worker reports with a run request's outcome (the registry's are far shorter). */
  errorCodeLength: 100,
  /** Longest run status a worker reports with a run request's outcome (`completed`, `paused`, …). */
  runStatusLength: 40,
  /** Who decided a pause (a key's name, a local user) and the comment a screen sends with a decision. */
  decidedByLength: 200,
  decisionCommentLength: 4096,
  /** Most pauses one bulk approve/decline form of the inbox may name (a page of the inbox is 25). */
  bulkDecisions: 50,
  /** Deepest nesting accepted in any JSON value (state, context, results). */
  jsonDepth: 64,
  /** Largest single row: `eventBytes` of the outbox event that carries it. */
  rowBytes: 1024 * 1024,
  /** Largest ingest batch, by count and by decompressed bytes. */
  batchRows: 1000,
  batchBytes: 8 * 1024 * 1024,
  /**
   * Largest body of a control request (claim, takeover, claim release, the
   * admin routes), after decompression. The largest such body, every string at
   * its longest and each character sent as a `\u` escape, is under 4 KiB;
   * 64 KiB leaves room for any client's formatting and still bounds what one
   * request makes the plane hold to almost nothing.
   */
  controlBodyBytes: 64 * 1024,
  /**
   * Most idempotency keys a takeover request lists, and the bytes (UTF-8 of
   * their JSON) they may take of its body: a run with more is brought up to
   * date from the plane before the takeover instead (see connectPlane).
   */
  takeoverKeys: 2000,
  takeoverKeysBytes: 48 * 1024,
  /** How much of a refused payload the plane keeps in quarantine. */
  quarantinePayloadBytes: 16 * 1024,
});

/**
 * Snapshot codec policy. A delta chain is cut with a full snapshot when
 * replaying it would cost more than `fullReplayRatio` times the full state, or
 * after `maxChainRows` rows, whichever comes first.
 */
export const CODEC = Object.freeze({
  maxChainRows: 1024,
  fullReplayRatio: 2,
});

/**
 * The one size measure of rows, on the client and on the plane: UTF-8 bytes
 * (`utf8Bytes`) of the event's JSON text exactly as sent. A JavaScript
 * string's `length` counts UTF-16 units, which undercounts CJK text three
 * times and emoji twice, so it is never used for a size.
 */
export function eventBytes(event: unknown): number {
  return utf8Bytes(JSON.stringify(event) ?? 'null');
}
