/**
 * Issue 35, scenario "a stalled machine wakes and charges again". Machine A
 * has charged an order and its record reached the plane; A is frozen
 * (SIGSTOP) inside that tool, past its lease and the takeover delay. Machine
 * B takes the run over and charges the next order, whose record reaches the
 * plane too, and waits inside the order after it. A is continued (SIGCONT):
 * its tool ends, and A must learn it lost the run before it starts another
 * effect (its local lease expired while it was frozen; the plane took the run
 * from it): no order is charged twice, A's run fails LEASE_LOST (or
 * RUN_TAKEN_OVER), B completes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { LEASE_MS, openFleet, shown, WAIT_MS, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 6;
/** The order A is frozen inside, after its charge. */
const AT = 2;
/** The order B waits inside (tool started, not charged) when A is continued. */
const B_AT = 4;

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`stalled machine (plane on ${backend})`, () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await openFleet(backend);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('a machine frozen past its lease and taken over charges nothing more when continued', async () => {
      const id = `stalled-${backend}`;
      const [a, b] = await Promise.all([
        fleet.machine('a', { holds: [{ order: AT, phase: 'charged' }] }),
        fleet.machine('b', { holds: [{ order: B_AT, phase: 'enter' }] }),
      ]);
      const runA = a.command('start', id, { input: `steps ${STEPS}` });
      await a.inside(AT, 'held', id);
      await waitFor(`A's charge ${AT} recorded on the plane`, async () =>
        (await fleet.entries(id)).includes(`charge:${id}:${AT}`),
      );

      // A freezes inside its tool; the release is queued for when it is continued
      a.signal('SIGSTOP');
      const frozenAt = Date.now();
      a.release(AT, 'charged');

      expect((await b.command('restore', id)).ok).toBe(true);
      const runB = b.command('resume', id, { retryWhile: ['RUN_IN_PROGRESS'], deadlineMs: WAIT_MS });
      await Promise.race([
        b.inside(B_AT, 'held', id),
        runB.then((o) => Promise.reject(new Error(`B's takeover ended: ${JSON.stringify(o)} ${b.describe()}`))),
      ]);
      await waitFor(`B's charge ${B_AT - 1} recorded on the plane`, async () =>
        (await fleet.entries(id)).includes(`charge:${id}:${B_AT - 1}`),
      );

      // frozen well past its lease (the plane's takeover delay ran from A's last contact, which may be before the freeze)
      await waitFor('A frozen for twice its lease', () => Date.now() - frozenAt > 2 * LEASE_MS);
      // A wakes up: its tool ends and it goes on as far as it is let
      a.signal('SIGCONT');
      const outA = await runA;
      b.release(B_AT, 'enter');
      const outB = await runB;

      const ledger = fleet.ledger(id);
      expect
        .soft(fleet.charges(id, STEPS), `charges per order; ledger ${JSON.stringify(ledger)}`)
        .toEqual(new Array(STEPS).fill(1));
      expect
        .soft(
          ledger.filter((l) => l.machine === 'a').map((l) => l.order),
          'orders A charged',
        )
        .toEqual([0, 1, 2]);
      expect.soft(outA.ok, `A's run outcome ${JSON.stringify(outA)}`).toBe(false);
      expect
        .soft(['LEASE_LOST', 'RUN_TAKEN_OVER'], `A's error ${JSON.stringify(outA.error)}`)
        .toContain(outA.error?.code);
      expect.soft(outB.ok && outB.result.status, `B's run: ${JSON.stringify(outB)} ${b.describe()}`).toBe('completed');

      await a.exit();
      await b.exit();
      const planeRows = await fleet.rows(id);
      expect
        .soft((await fleet.execution(id)).execution, shown(planeRows))
        .toMatchObject({ status: 'completed', holeCount: 0 });
      expect.soft(planeRows.filter((r) => r.step === 'run_end').length, shown(planeRows)).toBe(1);
    });
  });
}
