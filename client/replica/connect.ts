import {
  AlreadyDecided,
  AlreadyResumed,
  ClaimRefused,
  LeaseLost,
  RunCancelled,
  RunInProgress,
  RunTakenOver,
} from '../errors.js';
import type { Checkpointer, ClaimGuard, PlaneGuard, TakeoverGuard } from '../checkpointer.js';
import { noFaults } from '../faults.js';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { Lease } from '../checkpointer.js';
import { takeoverKeys } from './branch.js';
import { Replica, type ReplicaOptions } from './replica.js';
import type { LeaseAsk } from './plane-calls.js';
import { MAX_TIMER_MS, replicaOptionProblems } from './replica-types.js';
import { integerProblem, oneOfProblem, refuse } from '../../support/validate.js';

export interface ConnectOptions extends ReplicaOptions {
  /** How long a resume waits for the pause to reach the plane before claiming there, integer ms (0: no wait). Default 5 s. */
  claimFlushMs?: number;
  /**
   * When the plane is up but refuses a claim (401/403 for a revoked key, 404
   * for a pause it does not hold, 400…): 'refuse' (default) throws
   * ClaimRefused and nothing is resumed; 'resume_locally' resumes anyway and
   * emits `claim_refused`, giving up the fleet-wide claim for that resume.
   */
  onClaimRefused?: 'refuse' | 'resume_locally';
  /**
   * What a runner does when its hold on a run cannot be renewed at the plane
   * (no answer, 502/503/504): 'continue' (default) runs on offline, and the
   * plane's verdict stands when it is back (a run taken over meanwhile stops,
   * its later rows refused); 'stop' stops the run at its next step (LEASE_LOST),
   * for effects that must never run twice even across a network partition.
   */
  onPlaneUnreachable?: 'continue' | 'stop';
}

/** WRITER_COPY: another store instance under this store's writer id holds the run at the plane. */
function writerCopy(executionId: string, message: string): WaymarkError {
  return new WaymarkError(ErrorCode.WRITER_COPY, `execution '${executionId}': ${message}`, {
    details: { executionId },
  });
}

/**
 * Connect a store to a plane: starts the outbox drain and installs the
 * cross-machine claim. While the plane is reachable, resuming a paused run
 * claims the pause at the plane first, so one machine wins across the fleet
 * (the loser gets AlreadyResumed naming the winner). Offline (a network
 * error, a timeout, 502/503/504), the local claim stands and the plane flags
 * a second claim as a conflict when it arrives. A plane that is up and
 * refuses the claim refuses the resume (ClaimRefused), unless
 * `onClaimRefused: 'resume_locally'` says otherwise. A resume applying a
 * decision the plane holds another, earlier one for is refused with
 * ALREADY_DECIDED (`details.decision`: the plane's), nothing resumed.
 *
 * Fault point 'claim.afterPlaneClaim': the plane claim is won, the local one
 * not yet made (a crash here leaves the plane claim held, unapplied: the same
 * writer completes it by resuming again, or gives it back with releaseClaim).
 *
 * Options are checked first: INVALID_OPTIONS names every problem
 * (`details.problems`), and nothing is started, installed or written.
 */
export function connectPlane(store: Checkpointer, options: ConnectOptions): Replica {
  refuse('connectPlane', connectOptionProblems(options), 'nothing was started');
  const replica = new Replica(store, options);
  replica.guardStore(planeGuard(replica, options));
  return replica;
}

/** What is wrong with connectPlane's options: the replica's, then its own. */
function connectOptionProblems(o: ConnectOptions): string[] {
  const problems = replicaOptionProblems(o);
  if (typeof o !== 'object' || o === null) return problems;
  const own = [
    integerProblem('claimFlushMs', o.claimFlushMs, 0, MAX_TIMER_MS, 'ms'),
    oneOfProblem('onClaimRefused', o.onClaimRefused, ['refuse', 'resume_locally']),
    oneOfProblem('onPlaneUnreachable', o.onPlaneUnreachable, ['continue', 'stop']),
  ];
  return [...problems, ...own.filter((p) => p !== null)];
}

/** The claim and takeover guard of connectPlane: the plane decides first, through `replica`. */
function planeGuard(replica: Replica, options: ConnectOptions): PlaneGuard {
  const claimFlushMs = options.claimFlushMs ?? 5000;
  const fault = options.faults ?? noFaults;
  const claim: ClaimGuard = async ({ executionId, checkpointId, decisionId, holder, ttlMs }) => {
    const flushed = await replica.flush({ timeoutMs: claimFlushMs });
    let r = await replica.claimAtPlane(executionId, checkpointId, decisionId, { holder, ttlMs });
    // The plane came back between a flush that timed out and the claim: the pause is
    // still in this outbox. Send it now that the plane answers, then claim again.
    if (r.outcome === 'refused' && r.code === ErrorCode.PAUSE_NOT_FOUND && flushed.pendingRows > 0) {
      await replica.flush({ timeoutMs: claimFlushMs });
      r = await replica.claimAtPlane(executionId, checkpointId, decisionId, { holder, ttlMs });
    }
    if (r.outcome === 'copy') throw writerCopy(executionId, r.message);
    if (r.outcome === 'closed' && r.by === 'cancel') {
      // this store's copy says cancelled too; the resume is refused as a cancelled run's is
      await replica.adoptCancel(executionId).catch(() => undefined);
      throw new RunCancelled(executionId, { reason: 'cancelled at the plane', checkpointId: null });
    }
    if (r.outcome === 'closed')
      throw new AlreadyResumed(`execution '${executionId}': ${r.message}`, { executionId, checkpointId });
    if (r.outcome === 'lost') {
      throw new AlreadyResumed(
        `execution '${executionId}': the pause was already claimed at the plane by writer '${r.writerId}'`,
        {
          executionId,
          checkpointId,
          claimedBy: r.writerId,
          // the decision the winning claim applied, when the plane says (a decision worker compares it with its own)
          ...(r.decisionId !== undefined ? { claimDecisionId: r.decisionId } : {}),
          // whether that claim was applied (resumed locally by its holder) or only held (its holder may have crashed before)
          ...(r.applied !== undefined && r.applied !== null ? { claimApplied: r.applied } : {}),
        },
      );
    }
    if (r.outcome === 'decided') {
      // a decision recorded here while the plane's first one had not arrived: nothing is resumed with it
      throw new AlreadyDecided(`execution '${executionId}': ${r.message}`, {
        executionId,
        checkpointId,
        decision: r.decision,
      });
    }
    if (r.outcome === 'refused') {
      const reason = `${r.status}${r.code ? ` ${r.code}` : ''}: ${r.message}`;
      if (options.onClaimRefused !== 'resume_locally') {
        throw new ClaimRefused(
          `execution '${executionId}': the plane refused the claim of pause ${checkpointId} (${reason}); nothing was resumed. ` +
            `Fix the key or sync the pause, or pass onClaimRefused: 'resume_locally' to resume without the fleet-wide claim`,
          { executionId, checkpointId, status: r.status, planeCode: r.code },
        );
      }
      replica.emit('claim_refused', { executionId, checkpointId, reason });
      return;
    }
    if (r.outcome === 'offline') replica.emit('claim_offline', { executionId, checkpointId, reason: r.reason });
    else fault('claim.afterPlaneClaim');
  };
  const takeover: TakeoverGuard = async ({ executionId, seq, holder, ttlMs }) => {
    // this writer's own rows first: a run that is still its own is recognised as such
    await replica.flush({ timeoutMs: claimFlushMs });
    const keys = () => takeoverKeys(replica.store, executionId);
    let listed = await keys();
    // more keys than a request carries: the plane cannot check them, so this copy takes every entry the plane holds first
    if (!listed) {
      await replica.restore(executionId);
      listed = await keys();
    }
    const lastId = async () => (await replica.store.latest(executionId))?.id;
    let r = await replica.takeoverAtPlane(executionId, seq, {
      holder,
      ttlMs,
      idempotencyKeys: listed,
      lastId: await lastId(),
    });
    if (r.outcome === 'refused' && r.code === ErrorCode.STALE_COPY) {
      // the plane holds rows or recorded effects this copy lacks: take them first, then ask again (once)
      const restored = await replica.restore(executionId).catch((e: Error) => e);
      if (restored instanceof Error) {
        throw new ClaimRefused(
          `execution '${executionId}': the plane holds what this copy lacks (${r.message}), and bringing it here failed: ${restored.message}; nothing was resumed`,
          {
            executionId,
            checkpointId: '',
            status: r.status,
            planeCode: (restored as { code?: string }).code ?? r.code,
          },
        );
      }
      const now = await replica.store.latest(executionId);
      // the resume re-reads the newest row after this guard: what was imported is where it re-enters
      if (now)
        r = await replica.takeoverAtPlane(executionId, now.seq, {
          holder,
          ttlMs,
          idempotencyKeys: await keys(),
          lastId: now.id,
        });
    }
    if (r.outcome === 'won') {
      if (r.takenFrom) replica.emit('run_taken_over', { executionId, from: r.takenFrom });
      return;
    }
    if (r.outcome === 'offline') {
      // as with pause claims: offline, the local lease stands; the plane refuses the loser's rows later
      replica.emit('takeover_offline', { executionId, reason: r.reason });
      return;
    }
    const d = r.details as { writerId?: string; liveUntil?: string; fromSeq?: number; at?: string; free?: boolean };
    if (r.code === ErrorCode.LEASE_LIVE)
      throw new RunInProgress(executionId, `writer '${d.writerId}' (it holds the run at the plane)`, d.liveUntil ?? '');
    if (r.code === ErrorCode.RUN_TAKEN_OVER)
      throw new RunTakenOver(executionId, {
        writerId: d.writerId ?? 'another writer',
        fromSeq: d.fromSeq ?? null,
        at: d.at ?? null,
        free: d.free === true,
      });
    if (r.code === ErrorCode.WRITER_COPY) throw writerCopy(executionId, r.message);
    // paused or finished there, or a run the plane never got: nobody else's to take; the local checks decide
    if (r.code === ErrorCode.NOT_RUNNING || r.status === 404) return;
    throw new ClaimRefused(
      `execution '${executionId}': the plane refused the takeover (${r.status}${r.code ? ` ${r.code}` : ''}: ${r.message}); nothing was resumed`,
      {
        executionId,
        checkpointId: '',
        status: r.status,
        planeCode: r.code,
      },
    );
  };
  const renew = async (lease: Lease, o: { release?: boolean; timeoutMs?: number; effectKey?: string } = {}) => {
    if (o.release) {
      // only once this store's rows reached the plane: a taker let in early would start from a copy without them
      const left = await replica.flush({ timeoutMs: o.timeoutMs ?? claimFlushMs });
      if (left.pendingRows > 0) return undefined;
      await replica.leaseAtPlane(
        lease.executionId,
        { holder: lease.holder, ttlMs: lease.ttlMs, release: true },
        o.timeoutMs,
      );
      return undefined;
    }
    let ask: LeaseAsk = {
      holder: lease.holder,
      ttlMs: lease.ttlMs,
      ...(o.effectKey ? { effectKey: o.effectKey } : {}),
    };
    let r = await replica.leaseAtPlane(lease.executionId, ask, o.timeoutMs);
    if (r.outcome === 'refused' && r.status === 400 && ask.effectKey) {
      // a plane that does not know effectKey refuses the whole request: the hold is still confirmed, without it
      ask = { holder: lease.holder, ttlMs: lease.ttlMs };
      r = await replica.leaseAtPlane(lease.executionId, ask, o.timeoutMs);
    }
    if (r.outcome === 'lost') {
      // the plane may be behind this store's outbox (a deletion, a run started again under its id, rows not sent
      // yet): once what this store holds has reached it, its answer is the verdict
      const left = await replica.flush({ timeoutMs: o.timeoutMs ?? claimFlushMs });
      if (left.pendingRows === 0) r = await replica.leaseAtPlane(lease.executionId, ask, o.timeoutMs);
      // not there yet (the plane went down meanwhile), and the plane's answer is that this very store ended the run
      // under the id, unfenced (`ownEnd`: a run deleted here and started again): no verdict, the runner goes on as
      // offline (its store's own lease was renewed beside this). Anything else (another writer's hold, a fence, a
      // copy of this store, a cancel) is a verdict whatever this outbox holds.
      else if ((r.details as { ownEnd?: unknown }).ownEnd === true)
        r = { outcome: 'offline', reason: `this store's rows have not reached the plane yet (${r.message})` };
    }
    if (r.outcome === 'lost' || r.outcome === 'cancelled')
      replica.emit('run_lost', { executionId: lease.executionId, reason: r.message });
    if (r.outcome === 'lost')
      throw new LeaseLost(
        lease.executionId,
        { epoch: lease.epoch, holder: lease.holder, current: null },
        `the plane says so (${r.message}); it starts nothing more, and its later rows are refused there`,
      );
    if (r.outcome === 'cancelled') {
      // this store's copy says cancelled too, once the runner has stopped writing (its lease is fenced by this throw)
      setImmediate(() => void replica.adoptCancel(lease.executionId).catch(() => undefined));
      throw new RunCancelled(lease.executionId, { reason: r.reason ?? 'cancelled at the plane', checkpointId: null });
    }
    if (r.outcome === 'copy') throw writerCopy(lease.executionId, r.message);
    if (r.outcome === 'offline' && options.onPlaneUnreachable === 'stop') {
      throw new LeaseLost(
        lease.executionId,
        { epoch: lease.epoch, holder: lease.holder, current: null },
        `its hold could not be renewed at the plane (${r.reason}) and onPlaneUnreachable is 'stop'; resume it once the plane answers`,
      );
    }
    // the effect about to start was recorded by a runner that lost the run after this one took it: its record is the
    // result here too (kept as the plane's, never sent back)
    if (r.outcome !== 'held') return { recorded: false, epoch: null };
    if (!r.recorded) return { recorded: false, epoch: r.epoch };
    await replica.store.importRows({ checkpoints: [], pending: null, idempotency: [r.recorded] });
    return { recorded: true, epoch: r.epoch };
  };
  const recorded = async (o: { timeoutMs: number }) => {
    await replica.flush({ timeoutMs: o.timeoutMs }).catch(() => undefined);
  };
  return {
    claim,
    takeover,
    renew,
    recorded,
    adoptPlaneBranch: (executionId) => replica.adoptPlaneBranch(executionId),
    adoptLostRuns: (serves) => replica.adoptLostRuns(serves),
  };
}
