/**
 * A connected store does not go stale: two stores (A and
 * B) on one real plane, the refund agent. A run A paused and synced is
 * finished, cancelled or claimed on B; A, connected, learns it through the
 * change feed and catches up without any resume on A, so its listings (the
 * API and the real `waymark runs` binary) say what happened, and a resume on
 * A is refused without charging again. Also: A offline while B finishes,
 * then reconnecting; a diverged local copy reported and left unchanged; a
 * deletion on the plane reported with the local rows kept; a Postgres A.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  connectPlane,
  restoreFromPlane,
  serveDecisions,
  type Checkpointer,
  type DecisionOutcome,
  type Replica,
  type RunUpdate,
} from '../../client/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { pause, step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const BIN = fileURLToPath(new URL('../../bin/waymark.mjs', import.meta.url));
const pg = await pgReady('change feed with a Postgres store');

describe('a connected store follows the change feed', () => {
  const tmp = scratchDir('waymark-changes-');
  let plane: TestPlane;
  let key = '';
  let approver = '';
  let db: TestDatabase | null = null;
  let schemas = 0;
  const open: { store: Checkpointer; replica: Replica }[] = [];

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    key = await plane.key('fleet', ['ingest', 'read']);
    approver = await plane.key('fleet', ['approve']);
    if (pg) db = await createTestDatabase('waymark_changes');
  });
  afterEach(async () => {
    for (const m of open.splice(0)) {
      await m.replica.stop();
      await m.store.close();
    }
  });
  afterAll(async () => {
    await plane?.close();
    await db?.drop();
    tmp.cleanup();
  });

  /** A machine: its own store, connected to the plane. */
  async function machine(name: string, o: { kind?: 'sqlite' | 'postgres'; follow?: boolean; url?: string } = {}) {
    let store: Checkpointer;
    if (o.kind === 'postgres') {
      store = new PostgresCheckpointer({
        url: db!.url,
        schema: `${name.replace(/-/g, '_')}_${++schemas}`,
        max: 2,
        writerId: name,
      });
      await store.setup();
    } else store = new SqliteCheckpointer({ path: tmp.file(`${name}.db`), writerId: name });
    const replica = connectPlane(store, {
      url: o.url ?? plane.url,
      apiKey: key,
      pollMs: 0,
      timeoutMs: 5000,
      followChanges: o.follow ?? false,
      changeWaitSeconds: 2,
    });
    const updates: RunUpdate[] = [];
    replica.on('run_updated', (u) => updates.push(u));
    const m = { store, replica, updates };
    open.push(m);
    return m;
  }

  const until = async (what: () => boolean | Promise<boolean>, ms = 20_000) => {
    const deadline = Date.now() + ms;
    while (!(await what())) {
      if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const stateOf = async (store: Checkpointer, id: string) =>
    (await store.listExecutions()).find((e) => e.executionId === id)?.state;

  /** `waymark runs --db <file> --json`, the real binary. */
  const runsCli = (file: string) => {
    const r = spawnSync(process.execPath, [BIN, 'runs', '--db', file, '--json'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as { executionId: string; state: string }[];
  };

  /** A pauses the refund and syncs it; B restores it from the plane. */
  async function pausedOnAThenRestoredOnB(id: string, a: Awaited<ReturnType<typeof machine>>, ledger: Ledger) {
    const agentA = refundAgent({ store: a.store, ledger }).agent;
    expect(await agentA.run(refundRequest(id, 50_000), { executionId: id })).toMatchObject({ status: 'paused' });
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    const b = await machine(`b-${id}`);
    await restoreFromPlane(b.store, id, { url: plane.url, apiKey: key });
    return { agentA, b, agentB: refundAgent({ store: b.store, ledger }).agent };
  }

  for (const kind of ['sqlite', 'postgres'] as const) {
    it.skipIf(kind === 'postgres' && !pg)(
      `B finishes a run A paused: A (${kind}, following) shows it completed without a resume, and a resume on A charges nothing`,
      async () => {
        const id = `refund-done-${kind}`;
        const ledger = new Ledger(tmp.file(`${id}.jsonl`));
        const a = await machine(`a-${kind}-done`, { kind, follow: true });
        const { agentA, b, agentB } = await pausedOnAThenRestoredOnB(id, a, ledger);
        expect(await stateOf(a.store, id)).toBe('paused');

        expect(await agentB.resume(id, { approved: true, metadata: { approver: 'bob' } })).toMatchObject({
          status: 'completed',
        });
        expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
        expect(ledger.charges()).toHaveLength(1);

        // nothing is asked of A: its replica follows the feed (a held long poll) and catches up
        // a catch-up takes what the plane holds when it reads, which may be more than the change that woke it said;
        // its update is emitted after the rows commit, so wait for both
        const caughtUp = () => a.updates.some((x) => x.executionId === id && x.outcome === 'caught_up');
        await until(async () => caughtUp() && (await stateOf(a.store, id)) === 'completed', 60_000).catch(
          (e: Error) => {
            throw new Error(
              `${e.message}: A's updates ${JSON.stringify(a.updates)}; A's feed error ${a.replica.changeFeedError}`,
            );
          },
        );
        const caught = a.updates.filter((x) => x.executionId === id && x.outcome === 'caught_up');
        // B's plane claim may be heard of before its rows (reported as such, naming B), and its rows in more than one step
        for (const early of a.updates.filter((x) => x.executionId === id && x.outcome !== 'caught_up'))
          expect(early).toMatchObject({ outcome: 'claimed_elsewhere', claimedBy: b.store.writerId });
        expect(caught.length).toBeGreaterThan(0);
        for (const step of caught) expect(step).toMatchObject({ by: b.store.writerId });
        expect(caught[0]).toMatchObject({ stalePendingRemoved: [{ executionId: id }] });
        expect(caught.reduce((n, x) => n + (x as { inserted: number }).inserted, 0)).toBeGreaterThan(0);
        expect(await stateOf(a.store, id)).toBe('completed');
        expect(await a.store.getPendingInterrupt(id)).toBeNull();
        // A's copy is now the plane's, row for row
        const planeRows = (await call(`${plane.url}/v1/executions/${id}/rows?limit=1000`, { key })).body.items.map(
          (r: { id: string }) => r.id,
        );
        expect((await a.store.list(id)).map((r) => r.id)).toEqual(planeRows);
        if (kind === 'sqlite')
          expect(runsCli(tmp.file(`a-${kind}-done.db`)).find((r) => r.executionId === id)?.state).toBe('completed');

        // a resume on A does not try it again: refused, nothing charged twice, nothing new queued
        await expect(agentA.resume(id, { approved: true, metadata: { approver: 'late' } })).rejects.toMatchObject({
          code: 'ALREADY_RESUMED',
        });
        expect(ledger.charges()).toHaveLength(1);
        expect((await a.replica.flush({ timeoutMs: 10_000 })).quarantinedCount).toBe(0);
      },
      60_000,
    );
  }

  it("a decision B's worker applied: A catches up, and A's worker does not apply it again (nothing charged twice)", async () => {
    const id = 'refund-decided';
    const ledger = new Ledger(tmp.file(`${id}.jsonl`));
    const a = await machine('a-decided');
    const agentA = refundAgent({ store: a.store, ledger }).agent;
    expect(await agentA.run(refundRequest(id, 50_000), { executionId: id })).toMatchObject({ status: 'paused' });
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    const { checkpointId } = (await a.store.getPendingInterrupt(id))!;
    const decided = await call(`${plane.url}/v1/executions/${id}/decision`, {
      key: approver,
      json: { checkpointId, approved: true, comment: 'ok' },
    });
    expect(decided.status, JSON.stringify(decided.body)).toBe(201);
    // A hears of the decision, but B's worker applies it first
    await a.replica.pullDecisions();
    const b = await machine('b-decided');
    const agentB = refundAgent({ store: b.store, ledger }).agent;
    // `expectOne`: wait (up to a deadline that only bounds a hang) for the outcome that must come; else give the
    // worker 5 s to do what it must not
    const serve = async (
      m: { store: Checkpointer; replica: Replica },
      agent: typeof agentA,
      restore: boolean,
      expectOne = false,
    ) => {
      const seen: DecisionOutcome[] = [];
      const stop = new AbortController();
      const done = serveDecisions({
        store: m.store,
        replica: m.replica,
        restore,
        agent,
        signal: stop.signal,
        pollMs: 100,
        onOutcome: (o) => seen.push(o),
      });
      if (expectOne) await until(() => seen.length > 0, 30_000);
      else await until(() => seen.length > 0, 5000).catch(() => {});
      stop.abort();
      await done;
      return seen;
    };
    await b.replica.pullDecisions();
    expect((await serve(b, agentB, true, true)).map((o) => o.outcome)).toEqual(['applied']);
    expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    expect(ledger.charges()).toHaveLength(1);

    expect((await a.replica.pullChanges()).updates).toEqual([
      expect.objectContaining({ executionId: id, outcome: 'caught_up', status: 'completed' }),
    ]);
    expect(await stateOf(a.store, id)).toBe('completed');
    // the local copy no longer has the pause open: the decision is not pending here
    const local = await a.store.getDecision(id, checkpointId);
    expect(local?.decisionId).toBe(decided.body.decisionId);
    expect(local?.state).not.toBe('pending');
    // A's worker: the decision is not applied here (at most reported as applied elsewhere or superseded)
    const outcomes = await serve(a, agentA, false);
    expect(outcomes.map((o) => o.outcome).filter((o) => o === 'applied' || o === 'failed')).toEqual([]);
    expect(ledger.charges()).toHaveLength(1);
    await expect(agentA.resume(id, { approved: true, metadata: {} })).rejects.toMatchObject({
      code: 'ALREADY_RESUMED',
    });
    expect(ledger.charges()).toHaveLength(1);
  }, 60_000);

  it('B cancels a run A paused: A shows it cancelled; a resume on A is refused', async () => {
    const id = 'refund-cancelled';
    const ledger = new Ledger(tmp.file(`${id}.jsonl`));
    const a = await machine('a-cancel');
    const { agentA, b } = await pausedOnAThenRestoredOnB(id, a, ledger);
    await b.store.cancel(id, { reason: 'customer withdrew' });
    expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);

    const pulled = await a.replica.pullChanges();
    expect(pulled.updates).toEqual([
      expect.objectContaining({ executionId: id, outcome: 'caught_up', status: 'cancelled', by: b.store.writerId }),
    ]);
    expect(a.updates).toEqual(pulled.updates);
    expect(await stateOf(a.store, id)).toBe('cancelled');
    expect(runsCli(tmp.file('a-cancel.db')).find((r) => r.executionId === id)?.state).toBe('cancelled');
    await expect(agentA.resume(id, { approved: true, metadata: {} })).rejects.toMatchObject({
      code: expect.stringMatching(/ALREADY_RESUMED|RUN_CANCELLED/),
    });
    expect(ledger.charges()).toHaveLength(0);
    // handled once: the cursor moved on, a second round brings nothing for this run
    expect((await a.replica.pullChanges()).updates).toEqual([]);
  }, 60_000);

  it('B claims a pause A holds: A is told who holds it, its resume loses the claim; when B finishes, A catches up', async () => {
    const id = 'refund-claimed';
    const ledger = new Ledger(tmp.file(`${id}.jsonl`));
    const a = await machine('a-claim');
    const { agentA, b, agentB } = await pausedOnAThenRestoredOnB(id, a, ledger);
    const paused = (await a.store.getPendingInterrupt(id))!;
    expect(await b.replica.claimAtPlane(id, paused.checkpointId)).toMatchObject({ outcome: 'won' });

    const pulled = await a.replica.pullChanges();
    expect(pulled.updates).toEqual([
      expect.objectContaining({
        executionId: id,
        outcome: 'claimed_elsewhere',
        claimedBy: b.store.writerId,
        checkpointId: paused.checkpointId,
        status: 'running',
      }),
    ]);
    // reported, not written: A's rows and pause stay as they were until B's rows arrive
    expect(await a.store.getPendingInterrupt(id)).toMatchObject({ checkpointId: paused.checkpointId });
    await expect(agentA.resume(id, { approved: true, metadata: {} })).rejects.toMatchObject({
      code: 'ALREADY_RESUMED',
      message: expect.stringContaining(b.store.writerId),
    });
    expect(ledger.charges()).toHaveLength(0);

    expect(await agentB.resume(id, { approved: true, metadata: { approver: 'bob' } })).toMatchObject({
      status: 'completed',
    });
    expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    expect((await a.replica.pullChanges()).updates).toEqual([
      expect.objectContaining({ executionId: id, outcome: 'caught_up', status: 'completed' }),
    ]);
    expect(await stateOf(a.store, id)).toBe('completed');
    expect(ledger.charges()).toHaveLength(1);
  }, 60_000);

  it('A offline while B finishes: reconnecting, A catches up from its saved cursor', async () => {
    const id = 'refund-offline';
    const ledger = new Ledger(tmp.file(`${id}.jsonl`));
    const a = await machine('a-offline');
    const { agentB, b } = await pausedOnAThenRestoredOnB(id, a, ledger);
    // A has read the feed up to its pause, then goes away
    await a.replica.pullChanges();
    const cursor = await a.store.getMeta('changes.cursor');
    expect(cursor).toMatch(/^\d+$/);
    await a.replica.stop();
    await a.store.close();
    open.splice(open.indexOf(a), 1);

    expect(await agentB.resume(id, { approved: true, metadata: {} })).toMatchObject({ status: 'completed' });
    expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);

    // A comes back (the same file), following: it asks from where it stopped
    const back = await machine('a-offline', { follow: true });
    await until(() => back.updates.some((u) => u.executionId === id && u.outcome === 'caught_up'));
    expect(back.updates.find((u) => u.executionId === id && u.outcome === 'caught_up')).toMatchObject({
      outcome: 'caught_up',
      status: 'completed',
    });
    expect(await stateOf(back.store, id)).toBe('completed');
    expect(Number(await back.store.getMeta('changes.cursor'))).toBeGreaterThan(Number(cursor));
    expect(ledger.charges()).toHaveLength(1);
  }, 60_000);

  it("a local copy that diverged from the plane's is reported and left unchanged", async () => {
    const id = 'diverged-run';
    const a = await machine('a-diverged');
    await a.store.put(step(id, 0));
    await a.store.put(step(id, 1));
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    // A gives its hold on the run up at the plane, so B's rows are taken (a run another writer holds refuses them)
    const released = await call(`${plane.url}/v1/executions/${id}/lease`, {
      key,
      json: { writerId: a.store.writerId, holder: 'a-diverged#test', ttlMs: 1000, release: true },
    });
    expect(released.body).toMatchObject({ released: true });
    const b = await machine('b-diverged');
    await restoreFromPlane(b.store, id, { url: plane.url, apiKey: key });
    await b.store.put(step(id, 2, { nodeInput: { by: 'b' } }));
    await b.store.put(step(id, 3, { nodeInput: { by: 'b' } }));
    expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    // A went on its own way at seq 2 meanwhile (not synced)
    const own = await a.store.put(step(id, 2, { nodeInput: { by: 'a' } }));
    const before = (await a.store.list(id)).map((r) => r.id);

    const pulled = await a.replica.pullChanges();
    expect(pulled.updates).toEqual([
      expect.objectContaining({
        executionId: id,
        outcome: 'diverged',
        planeSeq: 3,
        localSeq: 2,
        diverged: [expect.objectContaining({ executionId: id, seq: 2, reason: 'seq_taken', localId: own.id })],
      }),
    ]);
    expect((await a.store.list(id)).map((r) => r.id)).toEqual(before);
  }, 60_000);

  it('a run deleted on the plane by its owner is reported; the local rows are kept', async () => {
    const id = 'deleted-run';
    const a = await machine('a-deleted');
    await a.store.put(step(id, 0));
    await a.store.recordInterrupt(pause(id, 1), { reason: 'approve', context: null });
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    const b = await machine('b-deleted');
    await restoreFromPlane(b.store, id, { url: plane.url, apiKey: key });
    await b.store.deleteExecution(id);
    expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    expect((await call(`${plane.url}/v1/executions/${id}`, { key })).status).toBe(404);

    const pulled = await a.replica.pullChanges();
    expect(pulled.updates).toEqual([
      expect.objectContaining({ executionId: id, outcome: 'deleted_on_plane', by: b.store.writerId, status: null }),
    ]);
    expect(await a.store.list(id)).toHaveLength(2);
    expect(await stateOf(a.store, id)).toBe('paused');
  }, 60_000);

  it("runs this store does not hold, and this writer's own changes, are left alone", async () => {
    const a = await machine('a-alone');
    await a.store.put(step('mine-only', 0));
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    const b = await machine('b-alone');
    await b.store.put(step('b-only', 0));
    expect((await b.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    // the project's feed has both runs; A's writer feed carries neither (its own change, a run it never touched)
    const project = (await call(`${plane.url}/v1/changes?limit=1000`, { key })).body.items.map(
      (i: { executionId: string }) => i.executionId,
    );
    expect(project).toEqual(expect.arrayContaining(['mine-only', 'b-only']));
    // what it is sent: neither (only what every writer is sent: others' deletions; runs with a decision at the plane
    // only to a store that follows the whole decision feed, which this one never did)
    const sent = (
      await call(`${plane.url}/v1/writer-changes?writerId=${a.store.writerId}&limit=1000&decided=false`, { key })
    ).body.items as { executionId: string }[];
    expect(sent.filter((i) => i.executionId === 'mine-only' || i.executionId === 'b-only')).toEqual([]);
    const seen = await a.replica.pullChanges();
    expect(seen.received).toBe(sent.length);
    expect(seen.updates.filter((u) => u.executionId === 'mine-only' || u.executionId === 'b-only')).toEqual([]);
    expect(await a.store.latest('b-only')).toBeNull();
  }, 60_000);
});
