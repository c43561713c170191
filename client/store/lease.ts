/** Lease helpers both adapters share: input checks and the row ↔ contract mapping. */
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { Lease, LeaseInfo, LeaseRequest } from '../checkpointer.js';
import { ExecutionGoneError, LeaseLost } from '../errors.js';
import { isoTime } from '../../support/time.js';
import { durationProblem, integerProblem, lengthProblem } from '../../support/validate.js';

/** A lease request or held lease that cannot be stored; nothing was written. Names every problem. */
export function checkLease(executionId: string, lease: LeaseRequest | Lease): void {
  const found = [
    lengthProblem('holder', lease?.holder, 1, 512),
    lease?.ttlMs === undefined ? 'ttlMs: required' : durationProblem('ttlMs', lease.ttlMs, 1, 2 ** 31),
  ];
  if (lease && 'epoch' in lease) {
    found.push(lease.epoch === undefined ? 'epoch: required' : integerProblem('epoch', lease.epoch, 1));
    if (lease.executionId !== executionId)
      found.push(`the lease is for execution '${lease.executionId}', not '${executionId}'`);
  }
  found.push(lengthProblem('executionId', executionId, 1));
  const problems = found.filter((p): p is string => p !== null);
  if (problems.length) {
    throw new WaymarkError(ErrorCode.INVALID_LEASE, `invalid lease: ${problems.join('; ')}`, { details: { problems } });
  }
}

export const isHeld = (lease: LeaseRequest | Lease | undefined): lease is Lease => !!lease && 'epoch' in lease;

export interface LeaseColumns {
  execution_id: string;
  holder: string | null;
  epoch: number | string;
  expires_at: number | string;
}

export function leaseInfoOf(r: LeaseColumns, nowMs: number): LeaseInfo {
  const expires = Number(r.expires_at);
  return {
    executionId: r.execution_id,
    holder: r.holder,
    epoch: Number(r.epoch),
    expiresAt: r.holder === null ? null : isoTime(expires),
    live: r.holder !== null && expires > nowMs,
  };
}

export function leaseLost(lease: Lease, current: LeaseInfo | null): LeaseLost {
  return new LeaseLost(lease.executionId, {
    epoch: lease.epoch,
    holder: lease.holder,
    current: current ? { holder: current.holder, epoch: current.epoch, expiresAt: current.expiresAt } : null,
  });
}

/**
 * What a failed fenced write says: a lease row that is gone altogether went
 * with its execution (deleted or pruned meanwhile), which is EXECUTION_GONE
 * for a write that names the row it follows; anything else stands.
 */
export function fencedWriteError(e: unknown, input: { executionId: string; prevId?: string | null }): unknown {
  if (e instanceof LeaseLost && (e.details as { current?: unknown }).current === null && input.prevId)
    return new ExecutionGoneError(input.executionId, input.prevId);
  return e;
}

/**
 * When this store last extended each lease it fenced a write with, by this
 * process's clock: a fenced write renews the lease only once a third of its
 * ttl has passed since (the runner's timer renews on the same beat), and
 * otherwise only checks holder and epoch in the statement that advances the
 * execution, so the expiry is at least two thirds of the ttl ahead of every
 * write. A clock that went back, or a shorter ttl asked than the one renewed,
 * counts as stale (renewed at the next write); a record left by a rolled-back
 * renewal only delays the next one: the check stays in every write.
 */
export class Renewals {
  private readonly at = new Map<string, { holder: string; epoch: number; ttlMs: number; at: number }>();
  constructor(private readonly max = 512) {}

  /** The lease was extended to `ttlMs` from `at` (epoch ms): acquired, renewed, or renewed by a write. */
  noted(lease: Pick<Lease, 'executionId' | 'holder' | 'epoch' | 'ttlMs'>, at: number): void {
    this.at.delete(lease.executionId);
    this.at.set(lease.executionId, { holder: lease.holder, epoch: lease.epoch, ttlMs: lease.ttlMs, at });
    if (this.at.size > this.max) this.at.delete(this.at.keys().next().value as string);
  }

  /** `noted` for a lease whose `expiresAt` this process's clock set (a store that judges leases by its own clock). */
  notedExpiry(lease: Lease): void {
    this.noted(lease, Date.parse(lease.expiresAt) - lease.ttlMs);
  }

  /** Extended by this store less than a third of its ttl ago: a write may fence without renewing. */
  fresh(lease: Lease, now = Date.now()): boolean {
    const r = this.at.get(lease.executionId);
    if (!r || r.holder !== lease.holder || r.epoch !== lease.epoch) return false;
    const since = now - r.at;
    return since >= 0 && since < Math.min(r.ttlMs, lease.ttlMs) / 3;
  }

  forget(executionId: string): void {
    this.at.delete(executionId);
  }
}
