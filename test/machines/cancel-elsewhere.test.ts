/**
 * Issue 35, scenario "a cancel from another machine stops nothing". Machine A
 * runs a run and is inside a tool (before its charge). Machine B, connected,
 * restores the run and cancels it (store.cancel on its restored copy; the
 * marker is drained to the plane). Once the plane has committed the cancel
 * and A has been told (or a while has passed), A's tool goes on: A must stop
 * at its next boundary (RUN_CANCELLED) and charge nothing after the cancel;
 * the plane's run ends cancelled, with the cancel marker as its last row
 * (no row of A's after it, one run-end marker).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { openFleet, shown, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 6;
/** The order A is inside (not charged) when B cancels. */
const AT = 2;

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`cancel from another machine (plane on ${backend})`, () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await openFleet(backend);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('a run cancelled on another machine charges nothing after the plane committed the cancel and ends cancelled there', async () => {
      const id = `cancel-elsewhere-${backend}`;
      const [a, b] = await Promise.all([
        fleet.machine('a', { holds: [{ order: AT, phase: 'enter' }] }),
        fleet.machine('b'),
      ]);
      const runA = a.command('start', id, { input: `steps ${STEPS}` });
      await a.inside(AT, 'held', id);
      await waitFor(`A's tool row of order ${AT} on the plane`, async () =>
        (await fleet.rows(id)).some((r) => r.nodeId === `turn:${AT}/tool:charge`),
      );

      expect((await b.command('restore', id)).ok).toBe(true);
      const cancel = await b.command('cancel', id, { reason: 'customer withdrew' });
      expect(cancel.ok, JSON.stringify(cancel)).toBe(true);
      await waitFor('the cancel committed at the plane', async () =>
        (await fleet.rows(id)).some((r) => r.step === 'run_end' && r.status === 'cancelled'),
      );
      const committedAt = Date.now();

      // A is told (an event of its replica naming the run), or released after the wait all the same
      const told = await waitFor(
        'A to be told about the run',
        () => a.events().find((e) => e.at >= committedAt - 1000 && JSON.stringify(e.payload).includes(id)),
        15_000,
      ).catch(() => null);
      a.release(AT, 'enter');
      const outA = await runA;

      const ledger = fleet.ledger(id);
      expect
        .soft(
          ledger.filter((l) => l.at >= committedAt),
          'charges after the cancel committed at the plane',
        )
        .toEqual([]);
      expect
        .soft(fleet.charges(id, STEPS), `charges per order; ledger ${JSON.stringify(ledger)}`)
        .toEqual([1, 1, 0, 0, 0, 0]);
      expect.soft(outA.ok, `A's run outcome ${JSON.stringify(outA)}`).toBe(false);
      expect.soft(outA.error?.code, `A's error ${JSON.stringify(outA.error)}`).toBe('RUN_CANCELLED');
      // the runner that stopped is told why, whichever way it learnt of the cancel
      expect.soft(outA.error?.message, `A's error ${JSON.stringify(outA.error)}`).toContain('customer withdrew');
      expect.soft(told, `A's events: ${JSON.stringify(a.events().map((e) => e.name))}`).not.toBeNull();

      // the plane: cancelled, the cancel marker last, one run-end marker
      await a.exit();
      await b.exit();
      const planeRows = await fleet.rows(id);
      expect.soft((await fleet.execution(id)).execution.status, shown(planeRows)).toBe('cancelled');
      expect
        .soft(planeRows.filter((r) => r.step === 'run_end').length, `run-end markers on the plane: ${shown(planeRows)}`)
        .toBe(1);
      expect
        .soft(planeRows.at(-1), `the plane's last row: ${shown(planeRows)}`)
        .toMatchObject({ step: 'run_end', status: 'cancelled' });
      const marker = planeRows.findIndex((r) => r.step === 'run_end' && r.status === 'cancelled');
      expect.soft(shown(planeRows.slice(marker + 1)), 'rows after the cancel marker on the plane').toBe('');
    });
  });
}
