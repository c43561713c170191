/**
 * Issue 35, scenario "two stores with one writer id both win one pause".
 * Machine A pauses a run (an approval before its charge), drains it to the
 * plane and stops. Its SQLite file (with -wal and -shm when present) is copied
 * for machine A2: two stores presenting one writer id. Both connect and
 * approve the same pause at once: exactly one charge, and the loser is
 * refused with a clear code: WRITER_COPY (the copy detected) or
 * ALREADY_RESUMED (the pause already claimed).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { openFleet, shown, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`copied store file (plane on ${backend})`, () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await openFleet(backend);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('two copies of one store approving one pause charge once, and the copy that lost is refused with a clear code', async () => {
      const id = `copied-store-${backend}`;
      const first = await fleet.machine('a');
      const paused = await first.command('start', id, { input: 'steps 1 approve 0' });
      expect(paused.ok && paused.result.status, JSON.stringify(paused)).toBe('paused');
      expect((await first.command('flush')).result).toMatchObject({ pendingRows: 0 });
      await first.exit();
      const dbA2 = fleet.tmp.file('a2.db');
      fleet.copyStore(first.db, dbA2);

      const [a, a2] = await Promise.all([fleet.machine('a', { db: first.db }), fleet.machine('a2', { db: dbA2 })]);
      expect(a2.writerId, 'the copy presents the same writer id').toBe(a.writerId);
      const outs = await Promise.all([a.command('approve', id), a2.command('approve', id)]);

      const ledger = fleet.ledger(id);
      expect.soft(ledger.length, `charges; ledger ${JSON.stringify(ledger)}; outcomes ${JSON.stringify(outs)}`).toBe(1);
      const won = outs.filter((o) => o.ok);
      const lost = outs.filter((o) => !o.ok);
      expect
        .soft(
          won.map((o) => o.result.status),
          `the winner: ${JSON.stringify(outs)}`,
        )
        .toEqual(['completed']);
      expect.soft(lost.length, `the loser: ${JSON.stringify(outs)}`).toBe(1);
      // refused with a WaymarkError code saying why
      expect
        .soft(['WRITER_COPY', 'ALREADY_RESUMED'], `the loser's error: ${JSON.stringify(lost[0]?.error)}`)
        .toContain(lost[0]?.error?.code);

      await a.exit();
      await a2.exit();
      const planeRows = await fleet.rows(id);
      expect
        .soft((await fleet.execution(id)).execution, shown(planeRows))
        .toMatchObject({ status: 'completed', holeCount: 0 });
      expect.soft(planeRows.filter((r) => r.step === 'run_end').length, shown(planeRows)).toBe(1);
    });
  });
}
