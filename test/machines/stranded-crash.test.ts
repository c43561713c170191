/**
 * Issue 35, scenario "a takeover is permanent" (crash). Machine A dies
 * (SIGKILL) inside a tool after its charge was recorded and reached the
 * plane. Machine B restores the run and resumes it: it wins the takeover at
 * the plane, then dies inside its first tool, before any row of its own
 * reaches the plane. Machine C, restored too and recovering in watch mode,
 * must eventually take the run over in turn (once B's hold at the plane has
 * expired: never RUN_TAKEN_OVER / "taken over elsewhere" forever) and
 * complete it; every order is charged exactly once (the order A charged
 * before dying is not charged again: its record was on the plane).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { openFleet, shown, TAKEOVER_AFTER_MS, WAIT_MS, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 5;
/** The order A dies inside (after its charge), and B (before charging, its first tool). */
const AT = 2;
/** How long C may take to recover the run: ten takeover delays (B's hold at the plane must have expired long before). */
const RECOVER_WITHIN_MS = 10 * TAKEOVER_AFTER_MS;

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`stranded takeover after a crash (plane on ${backend})`, () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await openFleet(backend);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('a run whose taker died before writing is taken over by a third machine and completed, each order charged once', async () => {
      const id = `stranded-crash-${backend}`;
      const [a, b, c] = await Promise.all([
        fleet.machine('a', { holds: [{ order: AT, phase: 'charged' }] }),
        fleet.machine('b', { kills: [{ order: AT, phase: 'enter' }] }),
        fleet.machine('c'),
      ]);
      void a.command('start', id, { input: `steps ${STEPS}` });
      await a.inside(AT, 'held', id);
      await waitFor(`A's charge ${AT} recorded on the plane`, async () =>
        (await fleet.entries(id)).includes(`charge:${id}:${AT}`),
      );
      await a.kill();
      const planeBefore = await fleet.rows(id);

      // B: restores, wins the takeover once A's lease ran out at the plane, dies in its first tool (nothing written)
      expect((await b.command('restore', id)).ok).toBe(true);
      const outB = await b.command('resume', id, { retryWhile: ['RUN_IN_PROGRESS'], deadlineMs: WAIT_MS });
      expect(outB.died, `B's resume: ${JSON.stringify(outB)} ${b.describe()}`).toBe('SIGKILL');
      expect(fleet.ledger(id).filter((l) => l.machine === 'b')).toEqual([]);
      expect(shown(await fleet.rows(id)), 'no row of B reached the plane').toBe(shown(planeBefore));

      // C: restores and recovers in watch mode until the run is recovered
      expect((await c.command('restore', id)).ok).toBe(true);
      const run = await c.recoverInWatch(id, RECOVER_WITHIN_MS);
      expect(run.result, JSON.stringify(run)).toBe('completed');

      const ledger = fleet.ledger(id);
      expect(fleet.charges(id, STEPS), `charges per order; ledger ${JSON.stringify(ledger)}`).toEqual(
        new Array(STEPS).fill(1),
      );
      await c.exit();
      const planeRows = await fleet.rows(id);
      expect((await fleet.execution(id)).execution, shown(planeRows)).toMatchObject({
        status: 'completed',
        holeCount: 0,
      });
      expect(planeRows.filter((r) => r.step === 'run_end').length, shown(planeRows)).toBe(1);
      expect(planeRows.at(-1)?.writerId).toBe(c.writerId);
    });
  });
}
