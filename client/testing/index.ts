/**
 * `waymark/testing`: what tests of code built on waymark use, kept out of the
 * root entry.
 *
 * - The store contract's conformance suite, `runStoreSuite({ name, make, skip })`:
 *   a third-party store runs exactly the tests both adapters run; every skip
 *   names its reason. Needs `vitest` (an optional peer dependency), since it
 *   declares vitest tests; the rest of this entry loads without it.
 * - Fault hooks for crash tests: `killAt(point)` ends the process at a named
 *   fault point; `faultPoint(name)` checks a point named on a command line.
 *
 * @module waymark/testing
 */
import { ErrorCode, hasCode } from '../../shared/errors.js';
import { requirePeers } from '../../support/peer.js';

export { faultPoint, killAt } from './faults.js';
export { FAULT_POINTS, isFaultPoint } from '../../support/faults.js';
export type { StoreHarness, StoreSuiteOptions } from './store/suite.js';

// `vitest` is an optional peer, needed only by the suite (it imports vitest statically): without it the fault hooks
// still load, and runStoreSuite says what to install when it is called
let suite: typeof import('./store/suite.js') | null = null;
let missingVitest: unknown = null;
try {
  await requirePeers('runStoreSuite (waymark/testing)', ['vitest']);
  suite = await import('./store/suite.js');
} catch (e) {
  if (!hasCode(e, ErrorCode.MISSING_PEER)) throw e;
  missingVitest = e;
}

/**
 * Declare the store conformance suite (a vitest `describe` block) for the
 * store `make` builds: one fresh store per test, `faults` passed to it.
 * Throws MISSING_PEER when vitest is not installed.
 */
export function runStoreSuite(...args: Parameters<typeof import('./store/suite.js').runStoreSuite>): void {
  if (!suite) throw missingVitest;
  suite.runStoreSuite(...args);
}
