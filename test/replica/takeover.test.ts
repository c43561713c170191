/**
 * Takeover across machines with real processes: machine A
 * goes offline mid-run and is SIGKILLed; machine B restores the run from the
 * plane and takes it over once A's lease ran out by the plane's clock (A's
 * last contact + the takeover delay), and completes it once; A, restarted
 * later, is refused (RUN_TAKEN_OVER), its offline rows are refused by the
 * plane as taken_over, and `sync status` says it lost the run; its recovery
 * then takes the plane's finished copy in place of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { forkTs, nextMessage, runTs } from '../helpers/child.js';
import { call } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const PLANE = fileURLToPath(new URL('../plane/plane-child.ts', import.meta.url));
const CHILD = fileURLToPath(new URL('./takeover-child.ts', import.meta.url));
const DELAY_MS = 3000;

/** Lines `<executionId> <n> <pid>` of a shared count file, as [n, pid] pairs. */
const lines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ').slice(1).map(Number) as [number, number])
    : [];

describe('takeover across machines through a plane process', () => {
  const tmp = scratchDir('waymark-takeover-');
  let plane: ChildProcess;
  let url = '';
  let key = '';
  beforeAll(async () => {
    plane = forkTs(PLANE, [`pglite:${tmp.file('plane')}`], { WAYMARK_TAKEOVER_AFTER_MS: String(DELAY_MS) });
    url = (await nextMessage<{ type: string; url: string }>(plane, (m) => m.type === 'ready')).url;
    const answer = nextMessage<{ type: string; key: string }>(plane, (m) => m.type === 'key');
    plane.send({ type: 'key', project: 'fleet', scopes: ['ingest', 'read'] });
    key = (await answer).key;
  });
  afterAll(async () => {
    await new Promise<void>((r) =>
      plane.exitCode !== null ? r() : (plane.once('exit', () => r()), plane.send({ type: 'exit' })),
    );
    tmp.cleanup();
  });

  it("a run crashed on machine A is taken over on machine B once A's lease expired by the plane's clock and completes once; A, restarted later, is refused and says why", async () => {
    const id = 'takeover-1';
    const dbA = tmp.file('a.db');
    const dbB = tmp.file('b.db');
    const calls = tmp.file('calls.txt');
    const effects = tmp.file('effects.txt');
    const args = (action: string, db: string) => [action, db, url, key, id, calls, effects];

    // A: synced its first rows, went offline, wrote more on its own, then died mid-run
    const a = forkTs(CHILD, args('run', dbA));
    let aErr = '';
    a.stderr?.on('data', (d) => (aErr += d));
    const deadline = Date.now() + 120_000;
    while (!existsSync(`${dbA}.holding`)) {
      if (a.exitCode !== null || Date.now() > deadline)
        throw new Error(`machine A never reached its second tool: ${aErr}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    a.kill('SIGKILL');
    await once(a, 'exit');
    const aPid = a.pid!;
    const onPlane = (await call(`${url}/v1/executions/${id}`, { key })).body;
    expect(onPlane.execution).toMatchObject({ status: 'running', rowCount: 2 });
    const writerA = onPlane.execution.writerId as string;

    // B: restores what the plane has and resumes; the plane lets it only once A's lease ran out
    const b = await runTs(CHILD, args('restore-resume', dbB));
    const bOut = JSON.parse(b.stdout.trim().split('\n').pop()!);
    expect(bOut.result?.status, b.stderr + JSON.stringify(bOut.error)).toBe('completed');
    expect(new Set(bOut.refusals)).toEqual(new Set(bOut.refusals.length ? ['RUN_IN_PROGRESS'] : []));
    const after = (await call(`${url}/v1/executions/${id}`, { key })).body;
    expect(after.takeovers).toEqual([
      expect.objectContaining({ fromSeq: 1, winnerWriterId: bOut.writerId, loserWriterId: writerA }),
    ]);
    expect(
      Date.parse(after.takeovers[0].at) - Date.parse(after.takeovers[0].loserLastContactAt),
    ).toBeGreaterThanOrEqual(DELAY_MS);
    expect(after.execution).toMatchObject({ status: 'completed', holeCount: 0, writerId: bOut.writerId });
    const rows = (await call(`${url}/v1/executions/${id}/rows?limit=100`, { key })).body.items as {
      seq: number;
      nodeId: string;
      step: string;
      status: string;
      writerId: string;
    }[];
    expect(rows.map((r) => r.nodeId)).toEqual([
      'turn:0',
      'turn:0/tool:work',
      'turn:1',
      'turn:1/tool:work',
      'turn:2',
      'turn:2/tool:work',
      'turn:3',
      'run_end',
    ]);
    expect(rows.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(rows.filter((r) => r.step === 'run_end').map((r) => r.status)).toEqual(['completed']);
    expect(rows.slice(2).every((r) => r.writerId === bOut.writerId)).toBe(true);
    // B called the model once per turn it ran and did each effect once
    const bPid = bOut.pid as number;
    expect(
      lines(calls)
        .filter(([, pid]) => pid === bPid)
        .map(([n]) => n),
    ).toEqual([1, 2, 3]);
    expect(
      lines(effects)
        .filter(([, pid]) => pid === bPid)
        .map(([n]) => n),
    ).toEqual([0, 1, 2]);
    // what A did offline before it died (turn 1's model call, step 0's effect) is A's own
    expect(
      lines(calls)
        .filter(([, pid]) => pid === aPid)
        .map(([n]) => n),
    ).toEqual([0, 1]);

    // A comes back: refused (it lost the run), its offline rows refused by the plane, and it says so
    const a2 = await runTs(CHILD, args('resume', dbA));
    const a2Out = JSON.parse(a2.stdout.trim().split('\n').pop()!);
    expect(a2Out.error?.code, a2.stderr + JSON.stringify(a2Out)).toBe('RUN_TAKEN_OVER');
    expect(a2Out.error.message).toContain(`taken over by writer '${bOut.writerId}' at seq 1`);
    expect(a2Out.lost).toEqual([id]);
    expect(a2Out.rows).toEqual([
      '0:turn:0:completed',
      '1:turn:0/tool:work:completed',
      '2:turn:1:completed',
      '3:turn:1/tool:work:completed',
    ]);
    const lostLine = (a2Out.status as string[]).find((l) => l.startsWith('lost runs:'));
    expect(lostLine).toContain(`1 run(s) taken over by another machine`);
    expect(lostLine).toContain(`${id}: execution ${id} was taken over by writer '${bOut.writerId}' at seq 1`);
    // the plane's copy has no hole, though it refused A's rows (they are the lost run below, not missing rows)
    expect((a2Out.status as string[]).find((l) => l.startsWith('plane copy:'))).toContain(
      'complete (no hole: the rows the plane refused are not missing from its copy',
    );
    expect(lines(calls).filter(([, pid]) => pid === a2Out.pid)).toEqual([]);
    expect(lines(effects).filter(([, pid]) => pid === a2Out.pid)).toEqual([]);
    // its recovery takes the plane's branch in place of its own (nobody holds the run: B finished it), so its copy
    // is the finished run, nothing is left to recover, nothing runs again, and it no longer lists the run as lost
    const rec = JSON.parse((await runTs(CHILD, args('recover', dbA))).stdout.trim().split('\n').pop()!);
    expect(rec.recovered).toEqual([]);
    expect(rec.rows).toHaveLength(8);
    expect(rec.rows.at(-1)).toMatch(/^7:run_end:completed$/);
    expect(lines(calls).filter(([, pid]) => pid === rec.pid)).toEqual([]);
    expect(lines(effects).filter(([, pid]) => pid === rec.pid)).toEqual([]);
    expect((rec.status as string[]).find((l) => l.startsWith('lost runs:'))).toMatch(/lost runs:\s+none/);
    const final = (await call(`${url}/v1/executions/${id}`, { key })).body.execution;
    expect(final).toMatchObject({ status: 'completed', rowCount: 8, holeCount: 0 });
  });
});
