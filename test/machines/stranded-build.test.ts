/**
 * Issue 35, scenario "a takeover is permanent" (older build). Machine A dies
 * (SIGKILL) inside the charge tool, before charging. Machine B, an older
 * build without that tool, restores the run and resumes it: it fails
 * TOOL_NOT_FOUND (whether or not it asked the plane for the takeover first,
 * it runs nothing and must not keep the run). Machine C, a full build,
 * restores and resumes: it must take the run over (once any hold of B's at
 * the plane has expired; never RUN_TAKEN_OVER) and complete it, each order
 * charged once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { openFleet, shown, TAKEOVER_AFTER_MS, WAIT_MS, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 4;
/** The order A dies inside, before its charge. */
const AT = 2;

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`stranded takeover by an older build (plane on ${backend})`, () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await openFleet(backend);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('a run an older build failed to resume (TOOL_NOT_FOUND) is taken over by a full build and completed, each order charged once', async () => {
      const id = `stranded-build-${backend}`;
      const [a, b, c] = await Promise.all([
        fleet.machine('a', { holds: [{ order: AT, phase: 'enter' }] }),
        fleet.machine('b', { without: ['charge'] }),
        fleet.machine('c'),
      ]);
      void a.command('start', id, { input: `steps ${STEPS}` });
      await a.inside(AT, 'held', id);
      await waitFor(`A's tool row of order ${AT} on the plane`, async () =>
        (await fleet.rows(id)).some((r) => r.nodeId === `turn:${AT}/tool:charge`),
      );
      await a.kill();

      // B, the older build: refused by its own checks, having run nothing
      expect((await b.command('restore', id)).ok).toBe(true);
      const outB = await b.command('resume', id, { retryWhile: ['RUN_IN_PROGRESS'], deadlineMs: WAIT_MS });
      expect(outB.error?.code, `B's resume: ${JSON.stringify(outB)} ${b.describe()}`).toBe('TOOL_NOT_FOUND');
      expect(fleet.ledger(id).filter((l) => l.machine === 'b')).toEqual([]);

      // C, a full build: takes the run over (retrying while a lease at the plane is live) and completes it
      expect((await c.command('restore', id)).ok).toBe(true);
      const outC = await c.command('resume', id, {
        retryWhile: ['RUN_IN_PROGRESS'],
        deadlineMs: 10 * TAKEOVER_AFTER_MS,
      });
      expect
        .soft(outC.ok && outC.result.status, `C's resume: ${JSON.stringify(outC)} ${c.describe()}`)
        .toBe('completed');

      const ledger = fleet.ledger(id);
      expect
        .soft(fleet.charges(id, STEPS), `charges per order; ledger ${JSON.stringify(ledger)}`)
        .toEqual(new Array(STEPS).fill(1));
      expect
        .soft(
          ledger.filter((l) => l.machine === 'c').map((l) => l.order),
          'orders C charged',
        )
        .toEqual([2, 3]);
      await c.exit();
      const planeRows = await fleet.rows(id);
      expect
        .soft((await fleet.execution(id)).execution, shown(planeRows))
        .toMatchObject({ status: 'completed', holeCount: 0 });
      expect.soft(planeRows.filter((r) => r.step === 'run_end').length, shown(planeRows)).toBe(1);
    });
  });
}
