/**
 * Issue 35, scenario "a cancel made while the laptop is offline". Laptop A
 * runs a run through a proxy that is then cut: A goes on offline (the default:
 * a runner that cannot reach the plane keeps running). An operator restores
 * the run on another store and cancels it with the CLI, through the plane
 * (`waymark cancel --plane … --key …`, the real binary). When A's path comes
 * back, A runs nothing more: its next effect is refused (RUN_CANCELLED);
 * every copy says cancelled (the plane, the operator's store, A's own store);
 * the plane never took A's offline rows after its cancel marker, so its copy
 * restores whole on a fresh machine.
 */
import { execFile } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { pgReady } from '../helpers/pg.js';
import { BIN } from '../helpers/plane-process.js';
import { openFleet, shown, waitFor, type Fleet } from './fleet.js';

const pg = await pgReady('multi-machine scenarios on a Postgres plane');
const STEPS = 6;

/** The real binary, as a user types it (not spawnSync: the plane answers from this process). */
function waymark(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { encoding: 'utf8', env: { ...process.env, WAYMARK_PLANE_URL: '', WAYMARK_API_KEY: '' } },
      (e, stdout, stderr) => resolve({ status: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function stateIn(path: string, id: string) {
  const store = new SqliteCheckpointer({ path });
  try {
    return (await store.listExecutions()).find((e) => e.executionId === id)?.state ?? null;
  } finally {
    await store.close();
  }
}

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(`cancel while the laptop is offline (plane on ${backend})`, () => {
    let fleet: Fleet;
    let cancelKey: string;
    beforeAll(async () => {
      fleet = await openFleet(backend);
      cancelKey = await fleet.plane.key('fleet', ['ingest', 'read', 'cancel']);
    });
    afterEach(() => fleet.killAll());
    afterAll(() => fleet.close());

    it('an operator cancels through the plane while the laptop is offline: back online, the laptop runs nothing more, every copy says cancelled, the plane copy restores whole', async () => {
      const id = `cancel-offline-${backend}`;
      const a = await fleet.machine('a', {
        url: fleet.proxy.url,
        holds: [
          { order: 2, phase: 'enter' },
          { order: 3, phase: 'enter' },
        ],
      });
      const runA = a.command('start', id, { input: `steps ${STEPS}` });
      await a.inside(2, 'held', id);
      await waitFor("A's tool row of order 2 on the plane", async () =>
        (await fleet.rows(id)).some((r) => r.nodeId === 'turn:2/tool:charge'),
      );

      // the laptop goes offline
      fleet.proxy.rule = () => 'reset';
      for (const s of fleet.proxy.sockets) s.destroy();

      // an operator restores the run and cancels it with the CLI, through the plane
      const op = fleet.tmp.file('operator.db');
      const restored = await waymark('restore', id, '--db', op, '--plane', fleet.url, '--key', fleet.key);
      expect(restored.status, restored.stderr).toBe(0);
      const cancelled = await waymark(
        'cancel',
        id,
        '--db',
        op,
        '--plane',
        fleet.url,
        '--key',
        cancelKey,
        '--reason',
        'customer withdrew',
      );
      expect(cancelled.status, cancelled.stderr).toBe(0);
      expect(cancelled.stdout).toContain(`cancelled ${id} at the plane ${fleet.url}`);
      expect(cancelled.stdout).toContain("this store took the plane's marker");
      expect((await fleet.execution(id)).execution.status).toBe('cancelled');
      expect(await stateIn(op, id)).toBe('cancelled');

      // offline, the laptop goes on (the default): it charges order 2 and stops before order 3's charge
      a.release(2, 'enter');
      await a.inside(3, 'held', id);
      const backOnline = Date.now();
      fleet.proxy.rule = null;
      a.release(3, 'enter');
      const outA = await runA;
      expect(outA.ok, JSON.stringify(outA)).toBe(false);
      expect(outA.error?.code, JSON.stringify(outA.error)).toBe('RUN_CANCELLED');

      // nothing ran once it was back: orders 0-2 charged once (2 offline), none after
      const ledger = fleet.ledger(id);
      expect(
        ledger.filter((l) => l.at >= backOnline),
        'charges after the laptop came back',
      ).toEqual([]);
      expect(fleet.charges(id, STEPS)).toEqual([1, 1, 1, 0, 0, 0]);

      // A's own store says cancelled too (the plane's marker, or its own where its copy went further)
      await waitFor("A's store to say cancelled", async () => {
        const rows = (await a.command('rows', id)).result as { step: string; status: string }[];
        return rows.at(-1)?.step === 'run_end' && rows.at(-1)?.status === 'cancelled';
      });
      await a.exit();
      expect(await stateIn(a.db, id)).toBe('cancelled');

      // the plane took none of A's offline rows after its marker: one branch, the marker last, restorable anywhere
      const planeRows = await fleet.rows(id);
      expect(
        planeRows.filter((r) => r.step === 'run_end'),
        shown(planeRows),
      ).toHaveLength(1);
      expect(planeRows.at(-1), shown(planeRows)).toMatchObject({
        step: 'run_end',
        status: 'cancelled',
        writerId: 'plane',
      });
      expect((await fleet.execution(id)).execution).toMatchObject({
        status: 'cancelled',
        holeCount: 0,
        complete: true,
      });
      const fresh = fleet.tmp.file('fresh.db');
      const again = await waymark('restore', id, '--db', fresh, '--plane', fleet.url, '--key', fleet.key);
      expect(again.status, again.stderr).toBe(0);
      expect(await stateIn(fresh, id)).toBe('cancelled');
    });

    it('a pause cancelled through the plane from a store that does not hold the run is refused RUN_CANCELLED on the machine that paused it, which then says cancelled', async () => {
      const id = `cancel-paused-${backend}`;
      const a = await fleet.machine('p', {});
      const paused = await a.command('start', id, { input: `steps ${STEPS} approve 1` });
      expect(paused.ok && (paused.result as { status: string }).status, JSON.stringify(paused)).toBe('paused');
      expect((await a.command('flush')).ok).toBe(true);
      // the operator's store does not even hold the run: it is cancelled at the plane all the same
      const op = fleet.tmp.file('operator-paused.db');
      const empty = new SqliteCheckpointer({ path: op });
      await empty.setup();
      await empty.close();
      const cancelled = await waymark('cancel', id, '--db', op, '--plane', fleet.url, '--key', cancelKey);
      expect(cancelled.status, cancelled.stderr).toBe(0);
      expect(cancelled.stdout).toContain('closed its pause');
      expect(cancelled.stdout).toContain('this store holds no rows of it');
      const approve = await a.command('approve', id);
      expect(approve.ok).toBe(false);
      expect(approve.error?.code, JSON.stringify(approve.error)).toBe('RUN_CANCELLED');
      const rows = (await a.command('rows', id)).result as { step: string; status: string }[];
      expect(rows.at(-1)).toMatchObject({ step: 'run_end', status: 'cancelled' });
      expect(fleet.charges(id, STEPS).reduce((n, c) => n + c, 0)).toBe(1);
    });
  });
}
