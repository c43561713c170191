/**
 * What a store's outbox holds, as the store reports it and the pages show it:
 * one type for client/ (which reads it) and inspector/ (which may not import
 * client/).
 */
export interface OutboxStats {
  pendingCount: number;
  pendingBytes: number;
  oldestPendingAt: string | null;
  oldestPendingAgeMs: number | null;
  quarantinedCount: number;
  lastQuarantineReason: string | null;
}
