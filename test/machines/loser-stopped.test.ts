/**
 * Issue 35, scenario "loser told and stopped". Machine A is inside a tool
 * longer than the takeover delay while the plane cannot hear it (its path to
 * the plane is cut for that while, so no heartbeat can keep its run: the
 * takeover must be allowed); machine B takes the run over, charges the orders
 * from A's on and waits inside a later one. A's path heals and A is told it
 * lost the run (its feed brings B's rows) before its tool goes on: from then
 * A must run no effect (no order charged twice in the ledger: today A charges
 * the order B is inside, then B charges it again) and write nothing more, and
 * A's own store must not hold an interleaved branch (the winner's rows, then
 * its own after them, two run-end markers). B then completes the run.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { pgReady } from '../helpers/pg.js';
import { openFleet, shown, WAIT_MS, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 6;
/** The order A's long tool is at when it loses the run. */
const AT = 2;
/** The order B waits inside (its tool started, not charged) when A goes on. */
const B_AT = 4;

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`loser told and stopped (plane on ${backend})`, () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await openFleet(backend);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('a machine taken over inside a long tool is told, runs no effect after the takeover and keeps no second branch', async () => {
      const id = `loser-${backend}`;
      // A reaches the plane through the proxy; its charge tool of order AT waits (a long tool) until released
      const [a, b] = await Promise.all([
        fleet.machine('a', { url: fleet.proxy.url, holds: [{ order: AT, phase: 'enter' }] }),
        fleet.machine('b', { holds: [{ order: B_AT, phase: 'enter' }] }),
      ]);
      const runA = a.command('start', id, { input: `steps ${STEPS}` });
      await a.inside(AT, 'held', id);
      await waitFor(`A's tool row of order ${AT} on the plane`, async () =>
        (await fleet.rows(id)).some((r) => r.nodeId === `turn:${AT}/tool:charge`),
      );

      // the plane stops hearing A while its tool runs on
      fleet.proxy.rule = () => 'reset';
      for (const s of fleet.proxy.sockets) s.destroy();
      expect((await b.command('restore', id)).ok).toBe(true);
      const takenAt = Date.now();
      const runB = b.command('resume', id, { retryWhile: ['RUN_IN_PROGRESS'], deadlineMs: WAIT_MS });
      // B took the run over and charged up to B_AT (exclusive); its rows reached the plane
      await Promise.race([
        b.inside(B_AT, 'held', id),
        runB.then((o) => Promise.reject(new Error(`B's takeover ended: ${JSON.stringify(o)} ${b.describe()}`))),
      ]);
      await waitFor(`B's tool row of order ${B_AT} on the plane`, async () =>
        (await fleet.rows(id)).some((r) => r.nodeId === `turn:${B_AT}/tool:charge` && r.writerId === b.writerId),
      );

      // A's path heals; A is told (an event of its replica naming the run) before its tool goes on. If it is
      // never told, it is released all the same after the wait, and what it then does is judged below.
      fleet.proxy.rule = null;
      const healedAt = Date.now();
      const told = await waitFor(
        'A to be told about the run',
        () => a.events().find((e) => e.at >= healedAt && JSON.stringify(e.payload).includes(id)),
        15_000,
      ).catch(() => null);
      a.release(AT, 'enter');
      const outA = await runA;
      b.release(B_AT, 'enter');
      const outB = await runB;
      expect.soft(outB.ok && outB.result.status, `B's run: ${JSON.stringify(outB)} ${b.describe()}`).toBe('completed');

      // the ledger: every order charged once; A charged only before the takeover
      const ledger = fleet.ledger(id);
      expect
        .soft(fleet.charges(id, STEPS), `charges per order; ledger ${JSON.stringify(ledger)}`)
        .toEqual(new Array(STEPS).fill(1));
      expect
        .soft(
          ledger.filter((l) => l.machine === 'a').map((l) => l.order),
          'orders A charged',
        )
        .toEqual([0, 1]);
      expect
        .soft(
          ledger.filter((l) => l.machine === 'a' && l.at >= takenAt),
          'charges A ran after the takeover',
        )
        .toEqual([]);
      // A stopped: its run did not go on to complete, it failed saying it lost the lease (or the run)
      expect.soft(outA.ok, `A's run outcome ${JSON.stringify(outA)}`).toBe(false);
      expect
        .soft(['LEASE_LOST', 'RUN_TAKEN_OVER'], `A's error ${JSON.stringify(outA.error)}`)
        .toContain(outA.error?.code);
      // A was told
      expect.soft(told, `A's events: ${JSON.stringify(a.events().map((e) => e.name))}`).not.toBeNull();
      expect
        .soft(
          a.events('run_lost').some((e) => e.payload?.executionId === id),
          'A emitted run_lost',
        )
        .toBe(true);

      // the plane: B's branch, one run-end marker, complete
      await a.exit();
      await b.exit();
      const planeRows = await fleet.rows(id);
      const ex = (await fleet.execution(id)).execution;
      expect.soft(ex, `plane rows: ${shown(planeRows)}`).toMatchObject({ status: 'completed', holeCount: 0 });
      expect.soft(planeRows.filter((r) => r.step === 'run_end').length, shown(planeRows)).toBe(1);
      const firstOfB = planeRows.findIndex((r) => r.writerId === b.writerId);
      expect
        .soft(
          planeRows.slice(firstOfB).every((r) => r.writerId === b.writerId),
          `plane rows after B's first: ${shown(planeRows.slice(firstOfB))}`,
        )
        .toBe(true);

      // A's own store (read from its file once both stopped): one branch, at most one run-end marker, and
      // none of A's rows after a row of B's
      const store = new SqliteCheckpointer({ path: a.db });
      try {
        const rows = await store.list(id, { limit: 10_000 });
        const seqs = rows.map((r) => r.seq);
        expect.soft(seqs, 'A store seqs').toEqual(seqs.map((_, i) => i));
        expect
          .soft(rows.filter((r) => r.step === 'run_end').length, `run-end markers in A's store: ${shown(rows)}`)
          .toBeLessThanOrEqual(1);
        const firstForeign = rows.findIndex((r) => r.writerId !== a.writerId);
        const ownAfter = firstForeign < 0 ? [] : rows.slice(firstForeign).filter((r) => r.writerId === a.writerId);
        expect.soft(shown(ownAfter), `A's rows after B's in A's store: ${shown(rows)}`).toBe('');
      } finally {
        await store.close();
      }
    });
  });
}
