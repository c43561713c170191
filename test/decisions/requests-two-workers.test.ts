/**
 * Run requests are applied once, by the application, never by the plane: two
 * application processes (two stores, two writers, one plane) both serve the
 * plane's requests. A retry of a failed run and a fork from one of its rows are
 * each applied by exactly one of them: the work tool's shared ledger has one
 * line per application, every row after the request's row carries the
 * applier's writer id (none the plane's), and the plane shows the request
 * applied by that writer; the other worker reports it applied elsewhere (or
 * superseded: it saw the run moved on before the applier's report).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkTs, nextMessage } from '../helpers/child.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';

const CHILD = fileURLToPath(new URL('./request-worker-child.ts', import.meta.url));
type Msg = { type: string; [k: string]: unknown };

describe('run requests applied by two application processes on one plane', () => {
  let plane: TestPlane;
  const tmp = scratchDir('waymark-requests-two-');
  const keys: Record<string, string> = {};
  const kids: ChildProcess[] = [];
  const outcomes: Msg[] = [];
  const failFile = tmp.file('fail');
  const ledger = tmp.file('ledger');
  const holdFile = tmp.file('hold');
  let writers: string[] = [];

  const start = async (name: string) => {
    const child = forkTs(CHILD, [tmp.file(`${name}.db`), plane.url, keys.ingest, failFile, ledger, holdFile]);
    child.stderr?.on('data', (d) => process.stderr.write(`[${name}] ${d}`));
    child.on('message', (m: Msg) => {
      if (m.type === 'outcome') outcomes.push(m);
    });
    const ready = await nextMessage<Msg>(child, (m) => m.type === 'ready');
    kids.push(child);
    return { child, writerId: ready.writerId as string };
  };
  const rowsAtPlane = async (id: string) => {
    const rows: { seq: number; step: string; status: string; writerId: string; id: string }[] = [];
    let cursor: string | null = null;
    do {
      const r = await call(
        `${plane.url}/v1/executions/${id}/restore${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
        { key: keys.reader },
      );
      expect(r.status).toBe(200);
      rows.push(...r.body.rows);
      cursor = r.body.nextCursor;
    } while (cursor);
    return rows;
  };
  const request = async (id: string, json: unknown) => {
    const r = await call(`${plane.url}/v1/executions/${id}/requests`, { key: keys.operator, json });
    expect(r.status).toBe(201);
    return r.body as { requestId: string; checkpointId: string; checkpointSeq: number; forkExecutionId: string };
  };
  const planeRequest = async (requestId: string) =>
    (await call(`${plane.url}/v1/requests/${requestId}`, { key: keys.reader })).body;
  const finalOf = (requestId: string) => outcomes.filter((o) => o.requestId === requestId && o.outcome !== 'failed');
  const applierOf = (requestId: string) =>
    outcomes.find((o) => o.requestId === requestId && o.outcome === 'applied')?.writerId;
  /** Whether a worker other than the one whose tool ran (the ledger's writer) reported anything of the request. */
  const otherMet = (requestId: string, applier: string) =>
    outcomes.some((o) => o.requestId === requestId && o.writerId !== applier);
  /**
   * Once the plane says applied: the applier's outcome, and the other worker's final one if it met the request
   * (`mustMeet`: the applier's tool was held until it did).
   */
  const settledBoth = async (requestId: string, mustMeet: boolean) => {
    await until('the applier reported', () => finalOf(requestId).some((o) => o.outcome === 'applied'));
    const met = () => outcomes.some((o) => o.requestId === requestId && o.writerId !== applierOf(requestId));
    if (mustMeet) expect(met()).toBe(true);
    if (met()) await until('the other worker settled what it met', () => finalOf(requestId).length === 2);
  };

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    keys.ingest = await plane.key('acme', ['ingest']);
    keys.reader = await plane.key('acme', ['read']);
    keys.operator = await plane.key('acme', ['operate']);
    const a = await start('a');
    const b = await start('b');
    writers = [a.writerId, b.writerId];
    writeFileSync(failFile, '');
    const ran = nextMessage<Msg>(a.child, (m) => m.type === 'ran');
    a.child.send({ type: 'run', executionId: 'shared-run' });
    expect((await ran).status).toBe('failed');
    rmSync(failFile);
    writeFileSync(ledger, '');
    for (const k of [a, b]) {
      const serving = nextMessage<Msg>(k.child, (m) => m.type === 'serving');
      k.child.send({ type: 'serve' });
      await serving;
    }
  }, 120_000);
  afterAll(async () => {
    for (const k of kids) {
      if (k.exitCode !== null) continue;
      const stopped = nextMessage<Msg>(k, (m) => m.type === 'stopped').catch(() => null);
      k.send({ type: 'stop' });
      await Promise.race([stopped, new Promise((r) => setTimeout(r, 10_000))]);
      k.kill('SIGKILL');
    }
    await plane?.close();
    tmp.cleanup();
  });

  it('a retry both workers see is applied once: one ledger line, the rows after the failed marker all the applier’s, the plane says applied by it', async () => {
    // the applier's tool waits until the other worker has met the request (it finds the run held: failed, retried)
    writeFileSync(holdFile, '');
    const req = await request('shared-run', { action: 'retry', reason: 'upstream is back' });
    await until('a worker ran the tool', () => readFileSync(ledger, 'utf8').trim() !== '');
    const runner = readFileSync(ledger, 'utf8').trim().split(' ')[1];
    await until('the other worker met the request', () => otherMet(req.requestId, runner));
    rmSync(holdFile);
    await until('the plane has the retry applied', async () => (await planeRequest(req.requestId)).state === 'applied');
    await settledBoth(req.requestId, true);
    const final = finalOf(req.requestId);
    const applied = final.filter((o) => o.outcome === 'applied');
    expect(applied).toHaveLength(1);
    const applier = applied[0].writerId as string;
    expect(applied[0].status).toBe('completed');
    // the other worker tried too (it restored the run): it found the run held or moved on, and wrote nothing
    for (const o of final.filter((x) => x.writerId !== applier))
      expect(['applied_elsewhere', 'superseded']).toContain(o.outcome);
    expect(await planeRequest(req.requestId)).toMatchObject({
      state: 'applied',
      settledBy: applier,
      runStatus: 'completed',
    });
    // the tool ran once for this run
    expect(readFileSync(ledger, 'utf8').trim().split('\n')).toEqual([`shared-run ${applier}`]);
    await until(
      'the run completed at the plane',
      async () => (await rowsAtPlane('shared-run')).at(-1)?.status === 'completed',
    );
    const after = (await rowsAtPlane('shared-run')).filter((r) => r.seq > req.checkpointSeq);
    expect(after.length).toBeGreaterThan(0);
    expect(new Set(after.map((r) => r.writerId))).toEqual(new Set([applier]));
    expect(writers).toContain(applier);
  }, 120_000);

  it('a fork both workers see makes one fork, under the id the plane chose, from the row named', async () => {
    const rows = await rowsAtPlane('shared-run');
    const from = rows.find((r) => r.step === 'llm_call')!;
    const req = await request('shared-run', { action: 'fork', checkpointId: from.id });
    await until('the plane has the fork applied', async () => (await planeRequest(req.requestId)).state === 'applied');
    // the other worker meets a fork only while it is open (before the fork's first row is written): not waited for
    await settledBoth(req.requestId, false);
    const final = finalOf(req.requestId);
    const applied = final.filter((o) => o.outcome === 'applied');
    expect(applied).toHaveLength(1);
    const applier = applied[0].writerId as string;
    for (const o of final.filter((x) => x.writerId !== applier)) expect(o.outcome).toBe('applied_elsewhere');
    await until(
      'the fork is on the plane',
      async () => (await rowsAtPlane(req.forkExecutionId)).at(-1)?.step === 'run_end',
    );
    const fork = await rowsAtPlane(req.forkExecutionId);
    expect(fork[0]).toMatchObject({ step: 'fork_origin' });
    expect(new Set(fork.map((r) => r.writerId))).toEqual(new Set([applier]));
    expect(await planeRequest(req.requestId)).toMatchObject({ state: 'applied', settledBy: applier });
  }, 120_000);
});
