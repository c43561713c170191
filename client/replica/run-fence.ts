/**
 * A replica's answer to the plane saying a run this store holds moved on
 * elsewhere (another machine took it over, cancelled it, or its rows reached
 * this store): this process's runners of that run stop before their next step
 * or effect, told why, and the replica says `run_lost` once per run. The drain
 * calls it for rows the plane refused as `taken_over`; the change feed for a
 * run another writer's rows caught up or diverged from.
 */
import type { EventEmitter } from 'node:events';
import type { Checkpointer } from '../checkpointer.js';
import { LeaseLost, RunCancelled } from '../errors.js';
import { fenceRunners } from '../runtime/lease.js';
import { isCancelMarker, runCancelled } from '../store/cancel.js';
import type { RunUpdate } from './change-feed.js';
import type { ReplicaEvents } from './replica-types.js';

export class RunFence {
  /** The runs this replica has said `run_lost` of. */
  private readonly toldLost = new Set<string>();

  constructor(
    private readonly store: Checkpointer,
    private readonly writerId: string,
    private readonly events: Pick<EventEmitter<ReplicaEvents>, 'emit'>,
    /** Makes this store's copy of a run the plane cancelled say so (the replica's adoptCancel). */
    private readonly adoptCancel: (executionId: string) => Promise<unknown>,
  ) {}

  /**
   * Another machine's rows of a run this store holds were imported (or its
   * copy went another way): a runner of it in this process lost the run and
   * stops before its next step or effect, told why (cancelled, or taken).
   * Every update is emitted as `run_updated`.
   */
  updated(u: RunUpdate): void {
    if ((u.outcome === 'caught_up' && u.inserted > 0) || u.outcome === 'diverged') {
      this.lost(
        u.executionId,
        u.status === 'cancelled',
        `another machine's rows of the run reached this store (${u.by ?? 'another writer'}, plane seq ${u.planeSeq})`,
      );
      // cancelled there while this copy went further: this copy says cancelled too, with a marker of its own
      if (u.outcome === 'diverged' && u.status === 'cancelled')
        void this.adoptCancel(u.executionId).catch(() => undefined);
    }
    this.events.emit('run_updated', u);
  }

  /** Fence this process's runners of a run (RunCancelled for a cancelled one, else LeaseLost), and say so once per run. */
  lost(executionId: string, cancelled: boolean, reason: string): void {
    if (cancelled) {
      // the plane's marker was imported with the rows: the runner is told its reason
      const generic = new RunCancelled(executionId, { reason: 'cancelled at the plane', checkpointId: null });
      void this.store.latest(executionId).then(
        (last) => fenceRunners(this.store, executionId, last && isCancelMarker(last) ? runCancelled(last) : generic),
        () => fenceRunners(this.store, executionId, generic),
      );
    } else
      fenceRunners(
        this.store,
        executionId,
        new LeaseLost(executionId, { epoch: 0, holder: this.writerId, current: null }, reason),
      );
    if (this.toldLost.has(executionId)) return;
    this.toldLost.add(executionId);
    this.events.emit('run_lost', { executionId, reason });
  }
}
