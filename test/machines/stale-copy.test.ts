/**
 * Issue 35, scenario "a takeover from a stale copy repeats an effect".
 * Machine B restores a run while machine A is inside a tool (before its
 * charge): B's copy holds every row the plane has, but not the charge A is
 * about to make. A charges; the record reaches the plane; A dies (SIGKILL).
 * B resumes: it takes the run over and completes it, and the order A charged
 * is not charged again (the plane holds its record, so the taker must hold
 * it too before it re-enters: the plane sends what is missing, or refuses
 * the stale copy, STALE_COPY, and B restores again as that error says).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { openFleet, shown, WAIT_MS, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 4;
/** The order A is inside when B restores, and dies inside after charging. */
const AT = 2;

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`takeover from a stale copy (plane on ${backend})`, () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await openFleet(backend);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('a copy restored before the crashed machine charged does not charge that order again when it takes over', async () => {
      const id = `stale-copy-${backend}`;
      const [a, b] = await Promise.all([
        fleet.machine('a', {
          holds: [
            { order: AT, phase: 'enter' },
            { order: AT, phase: 'charged' },
          ],
        }),
        fleet.machine('b'),
      ]);
      void a.command('start', id, { input: `steps ${STEPS}` });
      await a.inside(AT, 'held', id);
      await waitFor(`A's tool row of order ${AT} on the plane`, async () =>
        (await fleet.rows(id)).some((r) => r.nodeId === `turn:${AT}/tool:charge`),
      );

      // B restores now: every row the plane has, no record of charge AT (not made yet)
      const restored = await b.command('restore', id);
      expect(restored.ok, JSON.stringify(restored)).toBe(true);
      expect(Object.keys((await b.command('entries', id)).result)).not.toContain(String(AT));

      // A charges, its record reaches the plane, A dies inside the tool
      a.release(AT, 'enter');
      await waitFor(`A's charge ${AT} recorded on the plane`, async () =>
        (await fleet.entries(id)).includes(`charge:${id}:${AT}`),
      );
      await a.kill();
      expect(fleet.charges(id, STEPS)).toEqual([1, 1, 1, 0]);

      // B takes over (retrying while A's lease at the plane is live; restoring again if its copy is refused as stale)
      const outB = await b.command('resume', id, {
        retryWhile: ['RUN_IN_PROGRESS'],
        restoreOn: ['STALE_COPY'],
        deadlineMs: WAIT_MS,
      });
      const ledger = fleet.ledger(id);
      expect
        .soft(fleet.charges(id, STEPS), `charges per order; ledger ${JSON.stringify(ledger)}`)
        .toEqual(new Array(STEPS).fill(1));
      expect
        .soft(
          ledger.filter((l) => l.machine === 'b').map((l) => l.order),
          'orders B charged',
        )
        .toEqual([3]);
      expect
        .soft(outB.ok && outB.result.status, `B's resume: ${JSON.stringify(outB)} ${b.describe()}`)
        .toBe('completed');

      await b.exit();
      const planeRows = await fleet.rows(id);
      expect
        .soft((await fleet.execution(id)).execution, shown(planeRows))
        .toMatchObject({ status: 'completed', holeCount: 0 });
      expect.soft(planeRows.filter((r) => r.step === 'run_end').length, shown(planeRows)).toBe(1);
    });
  });
}
