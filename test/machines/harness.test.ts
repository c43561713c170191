/**
 * The multi-machine harness itself (test/machines/fleet.ts, machine.ts): a
 * machine runs a run to its end through the plane, each charge once in the
 * ledger; a held machine can be stopped and continued; a machine restores a
 * run another one finished. Holds on today's code: the scenarios beside it
 * rely on it.
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
    const [a, b] = await Promise.all([fleet.machine('a', { holds: [{ order: 1, phase: 'enter' }] }), fleet.machine('b')]);
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
    const ex = await waitFor('the run completed on the plane', async () => ((await fleet.execution(id))?.execution.status === 'completed' ? true : null));
    expect(ex).toBe(true);
    expect(await fleet.entries(id)).toEqual(expect.arrayContaining([0, 1, 2].map((o) => `charge:${id}:${o}`)));
    const restored = await b.command('restore', id);
    expect(restored.ok, JSON.stringify(restored.error)).toBe(true);
    const again = await b.command('resume', id);
    expect(again.error?.code).toBe('ALREADY_RESUMED');
    const rows = await b.command('rows', id);
    expect(rows.result.filter((x: { step: string }) => x.step === 'run_end')).toHaveLength(1);
    expect(Object.keys((await b.command('entries', id)).result)).toEqual(['0', '1', '2']);
    expect(fleet.charges(id, 3)).toEqual([1, 1, 1]);
  });
});
