import { AlreadyResumed } from '../errors.js';
import type { Checkpointer } from '../checkpointer.js';
import { Replica, type ReplicaOptions } from './replica.js';

export interface ConnectOptions extends ReplicaOptions {
  /** How long a resume waits for the pause to reach the plane before claiming there. Default 5 s. */
  claimFlushMs?: number;
}

/**
 * Connect a store to a plane: starts the outbox drain and installs the
 * cross-machine claim. While the plane is reachable, resuming a paused run
 * claims the pause at the plane first, so one machine wins across the fleet
 * (the loser gets AlreadyResumed naming the winner). Offline, the local claim
 * stands and the plane flags a second claim as a conflict when it arrives.
 */
export function connectPlane(store: Checkpointer, options: ConnectOptions): Replica {
  const replica = new Replica(store, options);
  const claimFlushMs = options.claimFlushMs ?? 5000;
  store.claimGuard = async ({ executionId, checkpointId }) => {
    await replica.flush({ timeoutMs: claimFlushMs });
    const r = await replica.claimAtPlane(executionId, checkpointId);
    if (!r.won) {
      throw new AlreadyResumed(`execution '${executionId}': the pause was already claimed at the plane by writer '${r.writerId}'`, {
        executionId,
        claimedBy: r.writerId,
      });
    }
    if (r.offline) replica.emit('claim_offline', { executionId, checkpointId, reason: r.offline });
  };
  const stop = replica.stop.bind(replica);
  replica.stop = async () => {
    if (store.claimGuard) store.claimGuard = undefined;
    await stop();
  };
  return replica;
}
