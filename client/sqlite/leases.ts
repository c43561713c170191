/**
 * The SQLite store's lease statements, judged by this process's clock (the
 * processes sharing a file share a machine). Each runs inside the caller's
 * IMMEDIATE transaction; a cancelled run is named (RUN_CANCELLED) before any
 * lease decision, because a cancel clears the holder.
 */
import type { Checkpoint } from '../../shared/rows.js';
import type { Lease, LeaseInfo, LeaseRequest } from '../checkpointer.js';
import { RunInProgress } from '../errors.js';
import { runCancelled } from '../store/cancel.js';
import { fromColumns, type CheckpointColumns } from '../store/columns.js';
import { leaseInfoOf, leaseLost, type LeaseColumns } from '../store/lease.js';
import { isoTime } from '../../support/time.js';
import type { Statements } from './statements.js';

/** The lease statements (see statements.ts). */
export const leaseStatements = {
  getLease: `SELECT * FROM leases WHERE execution_id = ?`,
  upsertLease: `INSERT INTO leases (execution_id, holder, epoch, expires_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (execution_id) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch, expires_at = excluded.expires_at`,
  renewLease: `UPDATE leases SET expires_at = ? WHERE execution_id = ? AND holder = ? AND epoch = ?`,
  releaseLease: `UPDATE leases SET holder = NULL, expires_at = 0 WHERE execution_id = ? AND holder = ? AND epoch = ?`,
  clearLease: `UPDATE leases SET holder = NULL, expires_at = 0 WHERE execution_id = ?`,
  cancelledMarker: `SELECT c.* FROM executions e JOIN checkpoints c ON c.id = e.last_id
     WHERE e.execution_id = ? AND e.last_step = 'run_end' AND e.last_status = 'cancelled'`,
};

/** An execution's lease as stored, `live` judged by this process's clock. */
export function leaseInfo(st: Statements, executionId: string): LeaseInfo | null {
  const row = st.getLease.get(executionId) as LeaseColumns | undefined;
  return row ? leaseInfoOf(row, Date.now()) : null;
}

/** The cancel marker when the execution's newest row is one (inside the caller's transaction). */
export function cancelledMarker(st: Statements, executionId: string): Checkpoint | null {
  const row = st.cancelledMarker.get(executionId) as CheckpointColumns | undefined;
  return row ? fromColumns.checkpoint(row) : null;
}

/** Inside the caller's IMMEDIATE transaction: take the lease if free or expired, else RunInProgress (RunCancelled for a cancelled run). */
export function takeLease(st: Statements, executionId: string, request: LeaseRequest): Lease {
  const marker = cancelledMarker(st, executionId);
  if (marker) throw runCancelled(marker);
  const now = Date.now();
  const row = st.getLease.get(executionId) as LeaseColumns | undefined;
  if (row && row.holder !== null && Number(row.expires_at) > now) {
    throw new RunInProgress(executionId, row.holder, isoTime(Number(row.expires_at)));
  }
  const epoch = (row ? Number(row.epoch) : 0) + 1;
  st.upsertLease.run(executionId, request.holder, epoch, now + request.ttlMs);
  return { executionId, holder: request.holder, ttlMs: request.ttlMs, epoch, expiresAt: isoTime(now + request.ttlMs) };
}

/** Inside the caller's IMMEDIATE transaction: the lease is still this one; renew (or release) it, else LeaseLost. */
export function fence(st: Statements, lease: Lease, release: boolean): Lease {
  return { ...lease, expiresAt: isoTime(fenceWrite(st, lease, release)) };
}

/** `fence` for a write that needs no renewed lease back (a put or a pause): the same check and renewal; answers the new expiry (ms). */
export function fenceWrite(st: Statements, lease: Lease, release: boolean): number {
  const now = Date.now();
  const info = release
    ? st.releaseLease.run(lease.executionId, lease.holder, lease.epoch)
    : st.renewLease.run(now + lease.ttlMs, lease.executionId, lease.holder, lease.epoch);
  if (info.changes !== 1) {
    // a cancel clears the holder: the runner is told why it must stop
    const marker = cancelledMarker(st, lease.executionId);
    throw marker ? runCancelled(marker) : leaseLost(lease, leaseInfo(st, lease.executionId));
  }
  return release ? now : now + lease.ttlMs;
}
