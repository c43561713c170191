/**
 * The client's fault points: the one list and hook type live in
 * support/faults.ts (the plane uses them too); `killAt` and the other crash-test
 * hooks are in `waymark/testing` (client/testing/faults.ts).
 */
export { FAULT_POINTS, isFaultPoint, noFaults, type FaultHook, type FaultPoint } from '../support/faults.js';
