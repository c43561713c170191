/**
 * Named fault points, shared by the client and the plane. Library code calls
 * its hook at each commit boundary (`fault('store.put.afterCommit')`);
 * production passes none (a no-op). Crash tests pass a hook that kills the
 * process, drops a connection or holds a request at the named point
 * (`killAt` in `waymark/testing`).
 *
 * A name is `<where>.<when>`; every point a hook can see is listed here, so a
 * test that names a point that does not exist fails to compile instead of
 * never firing.
 */
export const FAULT_POINTS = [
  // client store (both adapters): right after the transaction commits (betweenRows: inside it, between its two rows)
  'store.put.afterCommit',
  'store.recordInterrupt.betweenRows',
  'store.recordInterrupt.afterCommit',
  'store.claim.afterCommit',
  'store.idempotency.afterCommit',
  'store.cancel.afterCommit',
  // SQLite group commit: every write of the batch (puts, lease acquisitions) done, its shared COMMIT not yet run
  'store.groupCommit.beforeCommit',
  // client runtime (the agent loop)
  'runtime.beforeModel',
  'runtime.midStream',
  'runtime.beforeTool',
  'runtime.afterTool',
  'runtime.afterRunEnd',
  // client outbox drain (the replica)
  'drain.afterFetch',
  'drain.afterResponse',
  'drain.afterApply',
  // client claim guard (connectPlane): the plane claim won, the local one not yet made
  'claim.afterPlaneClaim',
  // plane: after its commit, before it answers
  'plane.ingest.afterCommit',
  'plane.claim.afterCommit',
] as const;

/** One named fault point. */
export type FaultPoint = (typeof FAULT_POINTS)[number];

/**
 * Called at each fault point a component reaches. Client points are reached
 * inside synchronous code and do not wait for a returned promise; the plane
 * awaits one, so a test can hold a request at `plane.*` points.
 */
export type FaultHook = (point: FaultPoint) => void | Promise<void>;

/** The production hook: does nothing. */
export const noFaults: FaultHook = () => {};

/** Whether `name` is a fault point (for a point named on a command line or in an environment variable). */
export function isFaultPoint(name: string): name is FaultPoint {
  return (FAULT_POINTS as readonly string[]).includes(name);
}
