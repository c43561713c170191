/**
 * The multi-machine harness itself (test/machines/fleet.ts, machine.ts): a
 * machine runs a run to its end through the plane, each charge once in the
 * ledger; a held machine can be stopped and continued; a machine restores a
 * run another one finished; a machine killed at its model call is recovered
 * by a later process on its file. Holds on today's code: the scenarios beside
 * it rely on it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openFleet, waitFor, type Fleet } from './fleet.js';

describe('multi-machine harness', () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await openFleet('pglite');
  });
  afterEach(() => fleet.killAll());
  afterAll(() => fleet.close());

  it('a machine runs a run through the plane, charging once per order; another restores it finished', async () => {
    const id = 'harness-1';
    const [a, b] = await Promise.all([
      fleet.machine('a', { holds: [{ order: 1, phase: 'enter' }] }),
      fleet.machine('b'),
    ]);
    const run = a.command('start', id, { input: 'steps 3' });
    await a.inside(1, 'held', id);
    // a stopped machine answers nothing until continued; a release sent meanwhile waits for it
    a.signal('SIGSTOP');
    a.release(1, 'enter');
    a.signal('SIGCONT');
    const r = await run;
    expect(r.ok, JSON.stringify(r.error)).toBe(true);
    expect(r.result.status).toBe('completed');
    expect(fleet.charges(id, 3)).toEqual([1, 1, 1]);
    expect(fleet.ledger(id).every((l) => l.machine === 'a' && l.pid === a.pid)).toBe(true);
    await a.command('flush');
    const ex = await waitFor('the run completed on the plane', async () =>
      (await fleet.execution(id))?.execution.status === 'completed' ? true : null,
    );
    expect(ex).toBe(true);
    expect(await fleet.entries(id)).toEqual(expect.arrayContaining([0, 1, 2].map((o) => `charge:${id}:${o}`)));
    const restored = await b.command('restore', id);
    expect(restored.ok, JSON.stringify(restored.error)).toBe(true);
    const again = await b.command('resume', id);
    expect(again.error?.code).toBe('ALREADY_FINISHED');
    const rows = await b.command('rows', id);
    expect(rows.result.filter((x: { step: string }) => x.step === 'run_end')).toHaveLength(1);
    expect(Object.keys((await b.command('entries', id)).result)).toEqual(['0', '1', '2']);
    expect(fleet.charges(id, 3)).toEqual([1, 1, 1]);
  });

  it('a machine killed at its model call is recovered on its own store by another process, each order charged once', async () => {
    const id = 'harness-2';
    const a = await fleet.machine('k', { kills: [{ model: 2 }], sleeps: [{ order: 1, phase: 'charged', ms: 50 }] });
    const out = await a.command('start', id, { input: 'steps 3' });
    expect(out.died).toBe('SIGKILL');
    expect(fleet.charges(id, 3)).toEqual([1, 1, 0]);
    // a later process on the same file: one recovery pass once the dead one's lease ran out
    const again = await fleet.machine('k-again', { db: a.db });
    const report = await waitFor('a recovery pass that recovers the run', async () => {
      const r = await again.command('recover');
      return r.result?.runs.find(
        (x: { executionId: string; outcome: string }) => x.executionId === id && x.outcome === 'recovered',
      );
    });
    expect(report.result).toBe('completed');
    expect(fleet.charges(id, 3)).toEqual([1, 1, 1]);
  });
});
