/**
 * `waymark/testing`: what tests of code built on waymark use, kept out of the
 * root entry.
 *
 * - The store contract's conformance suite, `runStoreSuite({ name, make, skip })`:
 *   a third-party store runs exactly the tests both adapters run; every skip
 *   names its reason. Needs `vitest` (an optional peer dependency), since it
 *   declares vitest tests.
 * - Fault hooks for crash tests: `killAt(point)` ends the process at a named
 *   fault point; `faultPoint(name)` checks a point named on a command line.
 */
import { requirePeer } from '../peer.js';

export { faultPoint, killAt } from './faults.js';
export { FAULT_POINTS, isFaultPoint } from '../../shared/faults.js';
export type { StoreHarness, StoreSuiteOptions } from './store/suite.js';

// `vitest` is an optional peer: without it, this import says to install it (the suite imports it statically)
await requirePeer('vitest', 'waymark/testing', '4.1.12');
const suite = await import('./store/suite.js');

/**
 * Declare the store conformance suite (a vitest `describe` block) for the
 * store `make` builds: one fresh store per test, `faults` passed to it.
 */
export const runStoreSuite: typeof import('./store/suite.js').runStoreSuite = suite.runStoreSuite;
