/**
 * A run whose only machine left holds a branch the plane refused (second
 * case: that branch ran to its end offline, so the run is finished in that
 * machine's store and only the plane says it is not). Machine A
 * goes offline after its charge of order AT reached the plane and runs on
 * alone into the next step (rows the plane never saw), then dies. Machine B
 * takes the run over from the plane's copy and dies in a later tool. A comes
 * back on its store file, recovering in watch mode: the plane refuses its
 * offline rows (it lost the run at the takeover) and, once B's hold has
 * expired and nobody holds the run, A takes the plane's branch in place of
 * its own and completes the run. Every order is charged once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pgReady } from '../helpers/pg.js';
import { openFleet, shown, TAKEOVER_AFTER_MS, WAIT_MS, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 6;
/** A's last charge that reaches the plane; it then runs offline into order AT + 1 and dies there, before charging. */
const AT = 1;
/** B dies in this tool, before charging it. */
const B_DIES = AT + 3;

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(
    `a lone machine whose branch the plane refused (plane on ${backend})`,
    () => {
      let fleet: Fleet;
      beforeAll(async () => {
        fleet = await openFleet(backend);
      });
      afterEach(() => fleet.killAll());
      afterAll(() => fleet.close());

      it("takes the plane's branch in place of its own once nobody holds the run, and completes it; each order charged once", async () => {
        const id = `stranded-loser-${backend}`;
        const config = { url: fleet.proxy.url, holds: [{ order: AT, phase: 'charged' as const }] };
        const a = await fleet.machine('a', { ...config, kills: [{ order: AT + 1, phase: 'enter' }] });
        void a.command('start', id, { input: `steps ${STEPS}` });
        await a.inside(AT, 'held', id);
        await waitFor(`A's charge ${AT} recorded on the plane`, async () =>
          (await fleet.entries(id)).includes(`charge:${id}:${AT}`),
        );
        // A goes offline and runs on alone into the next step (its rows stay in its outbox), where it dies
        fleet.proxy.rule = () => 'reset';
        for (const s of fleet.proxy.sockets) s.destroy();
        a.release(AT, 'charged');
        await a.exited;
        const planeBefore = await fleet.rows(id);

        // B takes the run over from the plane's copy (once A's hold expired) and dies in a later tool
        const b = await fleet.machine('b', { kills: [{ order: B_DIES, phase: 'enter' }] });
        expect((await b.command('restore', id)).ok).toBe(true);
        const outB = await b.command('resume', id, { retryWhile: ['RUN_IN_PROGRESS'], deadlineMs: WAIT_MS });
        expect(outB.died, `B's resume: ${JSON.stringify(outB)} ${b.describe()}`).toBe('SIGKILL');
        await waitFor(`B's charge ${B_DIES - 1} recorded on the plane`, async () =>
          (await fleet.entries(id)).includes(`charge:${id}:${B_DIES - 1}`),
        );
        expect((await fleet.rows(id)).length, shown(planeBefore)).toBeGreaterThan(planeBefore.length);

        // A comes back on its file, online, recovering in watch mode: its offline rows are refused, and it takes over
        fleet.proxy.rule = null;
        const back = await fleet.machine('a', config);
        const run = await back.recoverInWatch(id, 10 * TAKEOVER_AFTER_MS);
        expect(run.result, JSON.stringify(run)).toBe('completed');
        // it did hold a refused branch: the plane refused its offline rows and it was told it lost the run
        expect(
          back.events().map((e) => e.name),
          'events of A after its restart',
        ).toContain('run_lost');

        expect(fleet.charges(id, STEPS), `charges per order; ledger ${JSON.stringify(fleet.ledger(id))}`).toEqual(
          new Array(STEPS).fill(1),
        );
        await back.exit();
        const planeRows = await fleet.rows(id);
        expect((await fleet.execution(id)).execution, shown(planeRows)).toMatchObject({
          status: 'completed',
          holeCount: 0,
        });
        expect(planeRows.filter((r) => r.step === 'run_end').length, shown(planeRows)).toBe(1);
        expect(planeRows.at(-1)?.writerId).toBe(back.writerId);
      });

      it("a loser that ran its copy to the end offline takes the plane's branch back once nobody holds the run, and finishes it there", async () => {
        const id = `stranded-finished-${backend}`;
        const LAST = STEPS - 1;
        const config = { url: fleet.proxy.url, holds: [{ order: LAST, phase: 'charged' as const }] };
        const a = await fleet.machine('a2', config);
        const runA = a.command('start', id, { input: `steps ${STEPS}` });
        await a.inside(LAST, 'held', id);
        await waitFor(`A's last charge recorded on the plane`, async () =>
          (await fleet.entries(id)).includes(`charge:${id}:${LAST}`),
        );
        // A goes offline and completes its copy alone (nothing left to charge: its end is rows the plane never saw)
        fleet.proxy.rule = () => 'reset';
        for (const s of fleet.proxy.sockets) s.destroy();
        a.release(LAST, 'charged');
        const outA = await runA;
        expect(outA.ok && (outA.result as { status: string }).status, JSON.stringify(outA)).toBe('completed');
        await a.kill();

        // B takes the run over from the plane's copy and dies in the final model call, before its run-end marker
        const b = await fleet.machine('b2', { kills: [{ model: STEPS }] });
        expect((await b.command('restore', id)).ok).toBe(true);
        const outB = await b.command('resume', id, { retryWhile: ['RUN_IN_PROGRESS'], deadlineMs: WAIT_MS });
        expect(outB.died, `B's resume: ${JSON.stringify(outB)} ${b.describe()}`).toBe('SIGKILL');
        expect((await fleet.execution(id)).execution.status).toBe('running');

        // A comes back online: its end is refused (it lost the run), and its recovery takes the plane's branch and
        // finishes the run there
        fleet.proxy.rule = null;
        const back = await fleet.machine('a2', { url: fleet.proxy.url });
        const run = await back.recoverInWatch(id, 10 * TAKEOVER_AFTER_MS);
        expect(run.result, JSON.stringify(run)).toBe('completed');
        expect(fleet.charges(id, STEPS), `charges per order; ledger ${JSON.stringify(fleet.ledger(id))}`).toEqual(
          new Array(STEPS).fill(1),
        );
        await back.exit();
        const planeRows = await fleet.rows(id);
        expect((await fleet.execution(id)).execution, shown(planeRows)).toMatchObject({
          status: 'completed',
          holeCount: 0,
        });
        expect(planeRows.filter((r) => r.step === 'run_end').length, shown(planeRows)).toBe(1);
        expect(planeRows.at(-1)?.writerId).toBe(back.writerId);
      });
    },
  );
}
