/**
 * Restore at its edges, against a real plane (PGlite) on 127.0.0.1: a run the
 * plane holds with a hole in the middle (a refused row), a restore whose
 * answer is cut off or stalls halfway through, and a restore into a store
 * that already holds some of the run's rows, or a branch of its own.
 * Whatever fails leaves the local store as it was; whatever is kept is said.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectPlane, restoreFromPlane, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent } from '../../examples/agents/refund.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pause, step, takeEvents } from '../helpers/rows.js';
import { StallProxy, type StallMode } from '../helpers/stall-proxy.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-restore-holes-');
/** The restore's request timeout here: bounds below are multiples of it, with room for a loaded machine. */
const TIMEOUT_MS = 1000;
let plane: TestPlane;
let key = '';
let approveKey = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('holes', ['ingest', 'read']);
  approveKey = await plane.key('holes', ['approve']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

const get = (path: string) => call(`${plane.url}${path}`, { key });
const errorOf = async (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as { code: string; message: string; details: Record<string, unknown> },
  );
// growing messages: each row is a snapshot delta on the row before it
const grown = (id: string, i: number) =>
  step(id, i, { state: { messages: Array.from({ length: i + 1 }, (_, k) => ({ role: 'user', content: `m${k}` })) } });

/** Everything a store holds of one run, to compare before and after. */
async function copyOf(s: SqliteCheckpointer, exec: string) {
  return {
    rows: await s.list(exec),
    pending: await s.getPendingInterrupt(exec),
    idempotency: await s.listIdempotent(exec),
    executions: (await s.listExecutions()).map((e) => e.executionId).sort(),
    // the outbox as counted (its age moves on by itself)
    outbox: await s.outboxStats().then(({ oldestPendingAgeMs: _, ...counts }) => counts),
    held: await s.heldByPlane(exec),
  };
}

let n = 0;
describe('restore from the plane at its edges', () => {
  let a: SqliteCheckpointer;
  let b: SqliteCheckpointer;
  let proxy: StallProxy | null = null;
  let replica: Replica | null = null;
  beforeEach(() => {
    n++;
    a = new SqliteCheckpointer({ path: tmp.file(`a${n}.db`), writerId: `holes-a-${n}` });
    b = new SqliteCheckpointer({ path: tmp.file(`b${n}.db`), writerId: `holes-b-${n}` });
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = null;
    await replica?.stop();
    replica = null;
    await a.close();
    await b.close();
  });
  const ingest = async (rows: OutboxEvent[]) =>
    (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: a.writerId, rows } })).body;
  const drainA = async () => {
    replica ??= connectPlane(a, { url: plane.url, apiKey: key, pollMs: 0, debounceMs: 5, followChanges: false });
    expect(await replica.flush({ timeoutMs: 60_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
  };

  it('a run with a refused row in the middle: 409 RUN_INCOMPLETE naming that seq and why; nothing is written, an earlier copy stays as it was, and the run cannot be resumed from a partial import', async () => {
    const exec = `holed-mid-${n}`;
    for (let i = 0; i < 5; i++) await a.put(grown(exec, i));
    await a.putIdempotent(exec, 'charge', { id: 'ch_1' });
    await a.recordInterrupt(pause(exec, 5), { reason: 'approval', context: { amount: 5 } });
    const events = await takeEvents(a);
    const first = events.filter((e) => e.kind === 'checkpoint' && e.row.seq < 2);
    // B restores while the plane holds seqs 0 and 1 only: a whole copy, to this point
    expect(await ingest(first)).toMatchObject({ accepted: 2 });
    expect(await restoreFromPlane(b, exec, { url: plane.url, apiKey: key })).toMatchObject({
      inserted: 2,
      diverged: [],
      totalRows: 2,
    });
    const before = await copyOf(b, exec);
    // then the rest arrives with seq 2 damaged on the way: the plane refuses it and takes the rows after it
    const rest = events
      .filter((e) => !first.includes(e))
      .map((e) =>
        e.kind === 'checkpoint' && e.row.seq === 2
          ? ({ ...e, row: { ...e.row, status: 'bogus' } } as unknown as OutboxEvent)
          : e,
      );
    const res = await ingest(rest);
    expect(res.results.filter((r: { status: string }) => r.status === 'rejected')).toEqual([
      expect.objectContaining({ code: 'invalid' }),
    ]);
    expect((await get(`/v1/executions/${exec}`)).body.execution).toMatchObject({
      complete: false,
      holeCount: 1,
      lastSeq: 5,
    });

    const raw = await get(`/v1/executions/${exec}/restore`);
    expect(raw.status).toBe(409);
    expect(raw.body.error).toMatchObject({ code: 'RUN_INCOMPLETE', details: { executionId: exec, missingSeqs: [2] } });

    // a store that already held an earlier copy: refused, and that copy is exactly as it was
    const onB = await errorOf(restoreFromPlane(b, exec, { url: plane.url, apiKey: key, pageSize: 2 }));
    expect(onB).toMatchObject({ code: 'RUN_INCOMPLETE', details: { executionId: exec, missingSeqs: [2] } });
    expect(onB!.message).toMatch(/seq 2 \(invalid: /);
    expect(await copyOf(b, exec)).toEqual(before);

    // a store that never saw the run: refused, nothing written, so there is nothing to resume
    const c = new SqliteCheckpointer({ path: tmp.file(`c${n}.db`), writerId: `holes-c-${n}` });
    try {
      const fresh = await errorOf(restoreFromPlane(c, exec, { url: plane.url, apiKey: key }));
      expect(fresh).toMatchObject({ code: 'RUN_INCOMPLETE', details: { missingSeqs: [2] } });
      expect(await copyOf(c, exec)).toEqual({
        rows: [],
        pending: null,
        idempotency: [],
        executions: [],
        outbox: expect.objectContaining({ pendingCount: 0, quarantinedCount: 0 }),
        held: false,
      });
      const ledger = new Ledger(tmp.file(`ledger${n}.jsonl`));
      const resumed = await errorOf(refundAgent({ store: c, ledger }).agent.resume(exec, { approved: true }));
      expect(resumed).toMatchObject({ code: 'EXECUTION_NOT_FOUND' });
      expect(ledger.charges()).toEqual([]);
    } finally {
      await c.close();
    }
  });

  const cuts: [StallMode, string][] = [
    ['cut-mid-body', 'the connection cut halfway through the answer'],
    ['stall-mid-body', 'half the answer, then silence on an open connection'],
    ['trickle', 'the answer trickled a byte at a time'],
    ['hold', 'no answer at all'],
  ];
  for (const [mode, what] of cuts) {
    it(`a restore interrupted on its second page (${what}) fails within its deadline, leaves the store unchanged, and a retry restores the run whole`, async () => {
      const exec = `cut-${mode}-${n}`;
      for (let i = 0; i < 6; i++) await a.put(grown(exec, i));
      await a.putIdempotent(exec, 'charge', { id: 'ch_2' });
      await a.recordInterrupt(pause(exec, 6), { reason: 'approval', context: { at: 6 } });
      await drainA();
      // B holds another run of its own: it stays as it is
      await b.put(step(`mine-${n}`, 0));
      const before = await copyOf(b, exec);

      proxy = await new StallProxy(plane.url, TIMEOUT_MS / 4).start();
      let restores = 0;
      proxy.rule = ({ path }) =>
        path.startsWith(`/v1/executions/${exec}/restore`) && ++restores === 2 ? mode : undefined;
      const pages: number[] = [];
      const started = Date.now();
      const e = await errorOf(
        restoreFromPlane(b, exec, {
          url: proxy.url,
          apiKey: key,
          pageSize: 2,
          timeoutMs: TIMEOUT_MS,
          onProgress: (p) => void pages.push(p.rows),
        }),
      );
      expect(e).toMatchObject({ code: 'PLANE_ERROR' });
      expect(e!.message).toContain('nothing was imported');
      // gave up on its own, at its deadline (about twice the timeout at most), not when the proxy let go
      expect(Date.now() - started).toBeLessThan(30 * TIMEOUT_MS);
      expect(pages).toEqual([2]);
      expect(proxy.to(`/v1/executions/${exec}/restore`).map((s) => s.mode)).toEqual(['pass', mode]);
      expect(await copyOf(b, exec)).toEqual(before);

      const again = await restoreFromPlane(b, exec, {
        url: proxy.url,
        apiKey: key,
        pageSize: 2,
        timeoutMs: 10 * TIMEOUT_MS,
      });
      expect(again).toMatchObject({
        inserted: 7,
        skipped: 0,
        diverged: [],
        pendingImported: true,
        idempotencyInserted: 1,
        totalRows: 7,
      });
      expect(await b.list(exec)).toEqual(await a.list(exec));
      expect(await b.readState((await b.latest(exec))!)).toEqual(await a.readState((await a.latest(exec))!));
      expect(await b.getPendingInterrupt(exec)).toEqual(await a.getPendingInterrupt(exec));
      expect((await b.outboxStats()).pendingCount).toBe(1); // B's own run, never sent
    });
  }

  it('into a store that holds the first rows (same ids): they are skipped, the rest is added; nothing is queued', async () => {
    const exec = `catch-up-${n}`;
    for (let i = 0; i < 3; i++) await a.put(grown(exec, i));
    await drainA();
    expect(await restoreFromPlane(b, exec, { url: plane.url, apiKey: key })).toMatchObject({ inserted: 3, skipped: 0 });
    for (let i = 3; i < 6; i++) await a.put(grown(exec, i));
    await a.recordInterrupt(pause(exec, 6), { reason: 'approval', context: null });
    await drainA();
    const r = await restoreFromPlane(b, exec, { url: plane.url, apiKey: key, pageSize: 2 });
    expect(r).toMatchObject({
      inserted: 4,
      skipped: 3,
      diverged: [],
      withheld: 0,
      pendingImported: true,
      totalRows: 7,
    });
    expect(await b.list(exec)).toEqual(await a.list(exec));
    expect((await b.outboxStats()).pendingCount).toBe(0);
  });

  it("into a store with a branch of its own (another row at a seq): reported diverged, the local branch kept whole, no row, pause or decision of the plane's branch grafted onto it", async () => {
    const exec = `branch-${n}`;
    for (let i = 0; i < 3; i++) await a.put(grown(exec, i));
    await drainA();
    expect(await restoreFromPlane(b, exec, { url: plane.url, apiKey: key })).toMatchObject({ inserted: 3 });
    // A goes on to a pause, decided on the plane; B, offline, wrote its own seq 3
    for (let i = 3; i < 5; i++) await a.put(grown(exec, i));
    await a.putIdempotent(exec, 'charge', { id: 'ch_a' });
    const { checkpoint: paused } = await a.recordInterrupt(pause(exec, 5), { reason: 'approval', context: null });
    await drainA();
    const decided = await call(`${plane.url}/v1/executions/${exec}/decision`, {
      key: approveKey,
      json: { checkpointId: paused.id, approved: true },
    });
    expect(decided.status).toBe(201);
    const mine = await b.put(grown(exec, 3));
    const before = await copyOf(b, exec);

    const r = await restoreFromPlane(b, exec, { url: plane.url, apiKey: key, pageSize: 2 });
    const theirs = (await a.list(exec))[3];
    expect(r).toMatchObject({
      inserted: 0,
      skipped: 3,
      diverged: [{ executionId: exec, seq: 3, reason: 'seq_taken', localId: mine.id, incomingId: theirs.id }],
      withheld: 3,
      pendingImported: false,
      decisionImported: false,
      totalRows: 6,
    });
    const after = await copyOf(b, exec);
    expect(after.rows).toEqual(before.rows);
    expect(after.pending).toBeNull();
    expect(after.outbox).toEqual(before.outbox);
    // documented: an effect that ran on either branch stays recorded, so the plane's entry is added
    expect(after.idempotency.map((e) => e.key)).toEqual(['charge']);
    // the plane's decision answers a pause of the other branch: not stored here, where no such pause exists
    expect(await b.getDecision(exec, paused.id)).toBeNull();
    expect((await b.listDecisions()).items).toEqual([]);
    expect(await b.readState((await b.latest(exec))!)).toEqual(await b.readState(mine));
  });
});
