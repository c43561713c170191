/**
 * Issue 35, item 9: `recoverRuns` on a machine whose copy of a run another
 * machine is recovering, or already recovered, reports the run as held
 * elsewhere, never as failed (`CLAIM_REFUSED … STALE_COPY`). Machine A dies
 * mid-run; B and C both restored it ahead of time and run one recovery pass
 * each, B first: B recovers it (B holds it while its tool runs), C's pass
 * meets B's live hold; after B finished, C's next pass brings the finished
 * run here and reports it finished elsewhere. Each order is charged once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { openFleet, shown, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 4;
const AT = 1;

type Pass = { executionId: string; outcome: string; reason?: string; error?: { code: string } };

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`recoverRuns across machines (plane on ${backend})`, () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await openFleet(backend);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('a run another machine is recovering, then has recovered, is reported held there (lease live, then finished elsewhere), never failed', async () => {
      const id = `recover-held-${backend}`;
      const [a, b, c] = await Promise.all([
        fleet.machine('a', { holds: [{ order: AT, phase: 'enter' }] }),
        fleet.machine('b', { holds: [{ order: AT + 1, phase: 'enter' }] }),
        fleet.machine('c'),
      ]);
      void a.command('start', id, { input: `steps ${STEPS}` });
      await a.inside(AT, 'held', id);
      // A's charges before AT reached the plane (its drain sent them), then A dies inside its tool of order AT
      await waitFor("A's earlier charges on the plane", async () => (await fleet.entries(id)).length >= AT);
      await a.kill();
      // both restored the run ahead of time
      expect((await b.command('restore', id)).ok).toBe(true);
      expect((await c.command('restore', id)).ok).toBe(true);

      // B recovers it (its first pass may meet A's hold: it passes again until it recovers), and is held in a tool
      const bPass = (async () => {
        for (;;) {
          const out = await b.command('recover', undefined, {});
          if (!out.ok) throw new Error(`B's recovery pass failed: ${JSON.stringify(out)}`);
          const runs = (out.result as { runs: Pass[] }).runs;
          if (runs.some((r) => r.executionId === id && r.outcome === 'recovered')) return runs;
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      await b.inside(AT + 1, 'held', id);

      // C's pass meets B's live hold at the plane: held, not failed
      const during = ((await c.command('recover', undefined, {})).result as { runs: Pass[] }).runs.find(
        (r) => r.executionId === id,
      );
      expect(during, JSON.stringify(during)).toMatchObject({ outcome: 'held', reason: 'lease live' });

      b.release(AT + 1, 'enter');
      const bRuns = await bPass;
      expect(bRuns.find((r) => r.executionId === id)).toMatchObject({ outcome: 'recovered' });
      expect((await b.command('flush')).ok).toBe(true);

      // C's next pass: its copy is behind a finished run; it catches up and reports it finished elsewhere
      const after = await waitFor('C to report the run finished elsewhere', async () => {
        const runs = ((await c.command('recover', undefined, {})).result as { runs: Pass[] }).runs;
        const mine = runs.find((r) => r.executionId === id);
        if (mine && mine.outcome === 'failed') throw new Error(`reported failed: ${JSON.stringify(mine)}`);
        return mine === undefined || (mine.outcome === 'held' && mine.reason === 'finished elsewhere')
          ? (mine ?? { outcome: 'not listed' })
          : null;
      });
      expect(['held', 'not listed']).toContain(after.outcome);
      expect(fleet.charges(id, STEPS), JSON.stringify(fleet.ledger(id))).toEqual(new Array(STEPS).fill(1));
      const planeRows = await fleet.rows(id);
      expect((await fleet.execution(id)).execution, shown(planeRows)).toMatchObject({ status: 'completed' });
    });
  });
}
