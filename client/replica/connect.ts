import { AlreadyResumed, ClaimRefused } from '../errors.js';
import type { Checkpointer } from '../checkpointer.js';
import { noFaults } from '../faults.js';
import { Replica, type ReplicaOptions } from './replica.js';

export interface ConnectOptions extends ReplicaOptions {
  /** How long a resume waits for the pause to reach the plane before claiming there. Default 5 s. */
  claimFlushMs?: number;
  /**
   * When the plane is up but refuses a claim (401/403 for a revoked key, 404
   * for a pause it does not hold, 400…): 'refuse' (default) throws
   * ClaimRefused and nothing is resumed; 'resume_locally' resumes anyway and
   * emits `claim_refused`, giving up the fleet-wide claim for that resume.
   */
  onClaimRefused?: 'refuse' | 'resume_locally';
}

/**
 * Connect a store to a plane: starts the outbox drain and installs the
 * cross-machine claim. While the plane is reachable, resuming a paused run
 * claims the pause at the plane first, so one machine wins across the fleet
 * (the loser gets AlreadyResumed naming the winner). Offline (a network
 * error, a timeout, 502/503/504), the local claim stands and the plane flags
 * a second claim as a conflict when it arrives. A plane that is up and
 * refuses the claim refuses the resume (ClaimRefused), unless
 * `onClaimRefused: 'resume_locally'` says otherwise.
 *
 * Fault point 'claim.afterPlaneClaim': the plane claim is won, the local one
 * not yet made (a crash here leaves the plane claim held, unapplied: the same
 * writer completes it by resuming again, or gives it back with releaseClaim).
 */
export function connectPlane(store: Checkpointer, options: ConnectOptions): Replica {
  const replica = new Replica(store, options);
  const claimFlushMs = options.claimFlushMs ?? 5000;
  const fault = options.faults ?? noFaults;
  store.claimGuard = async ({ executionId, checkpointId }) => {
    await replica.flush({ timeoutMs: claimFlushMs });
    const r = await replica.claimAtPlane(executionId, checkpointId);
    if (r.outcome === 'lost') {
      throw new AlreadyResumed(`execution '${executionId}': the pause was already claimed at the plane by writer '${r.writerId}'`, {
        executionId,
        claimedBy: r.writerId,
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
  const stop = replica.stop.bind(replica);
  replica.stop = async () => {
    if (store.claimGuard) store.claimGuard = undefined;
    await stop();
  };
  return replica;
}
