/**
 * The Postgres store's lease statements, judged by the server's clock (so
 * machines with skewed clocks agree on expiry). Each runs inside the caller's
 * transaction; a cancelled run is named (RUN_CANCELLED) before any lease
 * decision, because a cancel clears the holder.
 */
import type { Checkpoint } from '../../shared/rows.js';
import type { Lease, LeaseInfo, LeaseRequest } from '../checkpointer.js';
import { RunInProgress } from '../errors.js';
import { runCancelled } from '../store/cancel.js';
import { fromColumns, type CheckpointColumns } from '../store/columns.js';
import { leaseInfoOf, leaseLost, type LeaseColumns } from '../store/lease.js';
import { isoTime } from '../../support/time.js';
import type { Sql, Tables, Tx } from './tables.js';

/** The server's clock in epoch milliseconds, as lease expiries are written and judged. */
export const serverNowMs = (sql: Sql | Tx) => sql`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** An execution's lease as stored, `live` judged by the server's clock. */
export async function leaseInfo(sql: Sql | Tx, t: Tables, executionId: string): Promise<LeaseInfo | null> {
  const [row] = await sql<(LeaseColumns & { now_ms: string })[]>`
    SELECT *, ${serverNowMs(sql)} AS now_ms FROM ${t.leases}
    WHERE execution_id = ${executionId}`;
  return row ? leaseInfoOf(row, Number(row.now_ms)) : null;
}

/**
 * The lease an acquisition whose answer was lost had taken, rebuilt from the
 * lease as stored: it is that acquisition's while its holder is the one asked
 * for (a holder is unique per acquisition); null otherwise.
 */
export function heldLease(executionId: string, stored: LeaseInfo | null, request: LeaseRequest): Lease | null {
  return stored && stored.holder === request.holder && stored.expiresAt
    ? { executionId, holder: request.holder, ttlMs: request.ttlMs, epoch: stored.epoch, expiresAt: stored.expiresAt }
    : null;
}

/**
 * Inside the caller's transaction: take the lease if free or expired (by the
 * server's clock), else RunInProgress. The upsert locks the lease row and
 * judges the newest version of it, so of concurrent takers one wins.
 */
export async function takeLease(tx: Tx, t: Tables, executionId: string, request: LeaseRequest): Promise<Lease> {
  const marker = await cancelledMarker(tx, t, executionId);
  if (marker) throw runCancelled(marker);
  for (;;) {
    const [won] = await tx<{ epoch: string; expires_at: string }[]>`
      INSERT INTO ${t.leases} AS l (execution_id, holder, epoch, expires_at)
      VALUES (${executionId}, ${request.holder}, 1, ${serverNowMs(tx)} + ${request.ttlMs})
      ON CONFLICT (execution_id) DO UPDATE SET holder = excluded.holder, epoch = l.epoch + 1, expires_at = excluded.expires_at
      WHERE l.holder IS NULL OR l.expires_at <= ${serverNowMs(tx)}
      RETURNING epoch, expires_at`;
    if (won) {
      return {
        executionId,
        holder: request.holder,
        ttlMs: request.ttlMs,
        epoch: Number(won.epoch),
        expiresAt: isoTime(Number(won.expires_at)),
      };
    }
    const current = await leaseInfo(tx, t, executionId);
    if (current?.live) throw new RunInProgress(executionId, current.holder!, current.expiresAt!);
    // released or expired between the two statements: judge again
  }
}

/** Inside the caller's transaction: the lease is still this one; renew (or release) it, else LeaseLost. */
export async function fence(tx: Tx, t: Tables, lease: Lease, release: boolean): Promise<Lease> {
  const [row] = release
    ? await tx<{ expires_at: string }[]>`
        UPDATE ${t.leases} SET holder = NULL, expires_at = 0
        WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
        RETURNING ${serverNowMs(tx)} AS expires_at`
    : await tx<{ expires_at: string }[]>`
        UPDATE ${t.leases} SET expires_at = ${serverNowMs(tx)} + ${lease.ttlMs}
        WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
        RETURNING expires_at`;
  if (!row) {
    // a cancel clears the holder: the runner is told why it must stop
    const marker = await cancelledMarker(tx, t, lease.executionId);
    throw marker ? runCancelled(marker) : leaseLost(lease, await leaseInfo(tx, t, lease.executionId));
  }
  return { ...lease, expiresAt: isoTime(Number(row.expires_at)) };
}

/** The cancel marker when the execution's newest row is one. */
export async function cancelledMarker(tx: Tx, t: Tables, executionId: string): Promise<Checkpoint | null> {
  const [row] = await tx<CheckpointColumns[]>`
    SELECT c.* FROM ${t.executions} e JOIN ${t.checkpoints} c ON c.id = e.last_id
    WHERE e.execution_id = ${executionId} AND e.last_step = 'run_end' AND e.last_status = 'cancelled'`;
  return row ? fromColumns.checkpoint(row) : null;
}
