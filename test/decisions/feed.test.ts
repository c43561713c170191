/**
 * Issue 16, decisions made on the plane (PGlite, HTTP on 127.0.0.1), applied
 * by the laptops' workers: delivered by the long poll while connected,
 * caught up after being offline, restored with the run on a machine that
 * lacks it, and raced by two machines (one applies, the other sees it applied).
 * Two machines are two stores and two replicas in this process.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import {
  connectPlane,
  restoreFromPlane,
  serveDecisions,
  type Agent,
  type Checkpointer,
  type DecisionLogger,
  type DecisionOutcome,
  type Replica,
} from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { DECISIONS_CURSOR_META } from '../../client/replica/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { uuidv7 } from '../../shared/ids.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-decisions-feed-');
let plane: TestPlane;
let key = '';
let approver = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('feed', ['ingest', 'read']);
  approver = await plane.key('feed', ['read', 'approve']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

let n = 0;
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

interface Machine {
  store: Checkpointer;
  replica: Replica;
  agent: Agent;
  ledger: Ledger;
}

/** A machine: its own store file and ledger, connected to the plane (long poll held 2 s); `followChanges: false`: only pullChanges() reads the change feed; `url`: a proxy in front of the plane. */
function machine(
  name: string,
  ledger = new Ledger(tmp.file(`${name}-${++n}.jsonl`)),
  o: { followChanges?: boolean; url?: string; busyTimeoutMs?: number } = {},
): Machine {
  const store = new SqliteCheckpointer({ path: tmp.file(`${name}-${++n}.db`), busyTimeoutMs: o.busyTimeoutMs });
  const replica = connectPlane(store, {
    url: o.url ?? plane.url,
    apiKey: key,
    pollMs: 0,
    debounceMs: 5,
    timeoutMs: 5000,
    decisionWaitSeconds: 2,
    followChanges: o.followChanges,
  });
  cleanup.push(async () => {
    await replica.stop();
    await store.close();
  });
  return { store, replica, agent: refundAgent({ store, ledger }).agent, ledger };
}

/** Pause a refund run on `m` and send it to the plane. */
async function pausedOn(m: Machine, id = `feed-${Date.now().toString(36)}-${++n}`) {
  const pause = (await m.agent.run(refundRequest(id, 8000), { executionId: id })).pendingInterrupt!;
  expect((await m.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
  return { id, pause };
}

/** Record a decision on the plane (what the inspector's form does). */
async function decideOnPlane(id: string, checkpointId: string, approved = true) {
  const r = await call(`${plane.url}/v1/executions/${encodeURIComponent(id)}/decision`, {
    key: approver,
    json: { checkpointId, approved, comment: 'approved by the manager' },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { decisionId: string };
}

/** Run a worker until `until` holds for its outcomes (or 20 s); its outcomes. */
function worker(o: {
  m: Machine;
  restore?: boolean;
  hold?: Promise<void>;
  onHeld?: () => void;
  logger?: DecisionLogger;
}) {
  const seen: DecisionOutcome[] = [];
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 20_000);
  // a fallback timer far away: only the feed (or a write here) wakes this worker
  const done = serveDecisions({
    store: o.m.store,
    replica: o.m.replica,
    restore: o.restore,
    logger: o.logger,
    signal: stop.signal,
    pollMs: 60_000,
    agentFor: async () => {
      o.onHeld?.();
      await o.hold;
      return o.m.agent;
    },
    onOutcome: (x) => seen.push(x),
  }).finally(() => clearTimeout(timer));
  cleanup.push(async () => {
    stop.abort();
    await done;
  });
  return {
    seen,
    async until(pred: (s: DecisionOutcome[]) => boolean) {
      const deadline = Date.now() + 20_000;
      while (!pred(seen) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(pred(seen), JSON.stringify(seen.map((s) => s.outcome))).toBe(true);
    },
  };
}

/** Until `pred` holds (or 20 s, then fails). */
async function until(pred: () => boolean | Promise<boolean>) {
  const deadline = Date.now() + 20_000;
  while (!(await pred()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(await pred()).toBe(true);
}

async function planeDecision(decisionId: string) {
  const r = await call(`${plane.url}/v1/decisions?after=0&limit=1000`, { key });
  expect(r.status).toBe(200);
  return (r.body as { items: { decisionId: string; state: string; appliedBy: string | null }[] }).items.find(
    (d) => d.decisionId === decisionId,
  );
}

describe('decisions made on the plane', () => {
  it('reach a connected laptop through the long poll; its worker applies the decision; the plane shows it applied by the laptop', async () => {
    const laptop = machine('laptop');
    const { id, pause } = await pausedOn(laptop);
    const w = worker({ m: laptop });
    const d = await decideOnPlane(id, pause.checkpointId);
    // delivered by the long poll: the worker's own fallback poll (pollMs 60 s) lies past its 20 s life, so nothing
    // else could have woken it (no bound on how fast: a loaded machine takes longer, the feed still brings it)
    await w.until((s) => s.some((x) => x.decision.decisionId === d.decisionId));
    expect(w.seen.map((x) => x.outcome)).toEqual(['applied']);
    expect(w.seen[0]).toMatchObject({
      status: 'completed',
      decision: { source: 'plane', decidedBy: expect.any(String), state: 'applied' },
    });
    expect(laptop.ledger.charges()).toHaveLength(1);
    await laptop.replica.flush({ timeoutMs: 10_000 });
    expect(await planeDecision(d.decisionId)).toMatchObject({ state: 'applied', appliedBy: laptop.store.writerId });
  });

  it('a laptop offline at the time of the decision gets it when it reconnects (cursor in the store), applies it; a second pull brings nothing new', async () => {
    const laptop = machine('offline');
    const { id, pause } = await pausedOn(laptop);
    await laptop.replica.stop();
    const d = await decideOnPlane(id, pause.checkpointId);
    expect(await laptop.store.getDecision(id, pause.checkpointId)).toBeNull();
    // reconnects: a new replica on the same store
    const again = connectPlane(laptop.store, {
      url: plane.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      timeoutMs: 5000,
      decisionWaitSeconds: 2,
    });
    cleanup.push(() => again.stop());
    // the feed is the project's: this store gets every decision recorded since it last asked (here: ever)
    const pulled = await again.pullDecisions();
    expect(pulled.stored).toBeGreaterThanOrEqual(1);
    expect(await laptop.store.getDecision(id, pause.checkpointId)).toMatchObject({
      decisionId: d.decisionId,
      source: 'plane',
      state: 'pending',
      held: true,
    });
    expect(pulled.cursorKey.startsWith(`${DECISIONS_CURSOR_META} ${plane.url}`)).toBe(true);
    expect(await laptop.store.getMeta(pulled.cursorKey)).toBe(pulled.cursor);
    expect((await again.pullDecisions()).stored).toBe(0);
    const w = worker({ m: { ...laptop, replica: again } });
    await w.until((s) => s.some((x) => x.decision.decisionId === d.decisionId));
    expect(w.seen.filter((x) => x.decision.decisionId === d.decisionId).map((x) => x.outcome)).toEqual(['applied']);
    expect(laptop.ledger.charges()).toHaveLength(1);
  });

  it('restore: true brings a decided run this machine never ran, with its pause and decision, and applies it', async () => {
    const laptop = machine('writer');
    const { id, pause } = await pausedOn(laptop);
    const server = machine('server');
    const w = worker({ m: server, restore: true });
    const d = await decideOnPlane(id, pause.checkpointId);
    await w.until((s) => s.some((x) => x.decision.decisionId === d.decisionId));
    // the feed is the project's: the other tests' decisions come too (settled on the plane: reported from its word, not restored)
    expect(w.seen.filter((x) => x.decision.decisionId === d.decisionId).map((x) => x.outcome)).toEqual(['applied']);
    expect(server.ledger.charges().filter((c) => c.order === id)).toHaveLength(1);
    expect(laptop.ledger.charges()).toHaveLength(0);
    expect(await server.store.latest(id)).toMatchObject({ step: 'run_end', status: 'completed' });
  });

  it('restoreFromPlane brings the open pause together with its decision', async () => {
    const laptop = machine('source');
    const { id, pause } = await pausedOn(laptop);
    const d = await decideOnPlane(id, pause.checkpointId, false);
    const other = new SqliteCheckpointer({ path: tmp.file(`restored-${++n}.db`) });
    cleanup.push(() => other.close());
    const r = await restoreFromPlane(other, id, { url: plane.url, apiKey: key });
    expect(r).toMatchObject({ pendingImported: true, decisionImported: true });
    expect(await other.getDecision(id, pause.checkpointId)).toMatchObject({
      decisionId: d.decisionId,
      approved: false,
      source: 'plane',
      state: 'pending',
      held: true,
    });
  });

  it('two machines race one decision: one applies it, the other sees it applied; one charge in all', async () => {
    const ledger = new Ledger(tmp.file(`race-${++n}.jsonl`));
    const a = machine('race-a', ledger);
    const { id, pause } = await pausedOn(a);
    const b = machine('race-b', ledger);
    await restoreFromPlane(b.store, id, { url: plane.url, apiKey: key });
    // both workers hold in agentFor until both have read the decision as pending
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    let held = 0;
    const onHeld = () => {
      if (++held === 2) release();
    };
    const wa = worker({ m: a, hold, onHeld });
    const wb = worker({ m: b, hold, onHeld });
    const d = await decideOnPlane(id, pause.checkpointId);
    // the loser may first meet the winner's plane claim before it is applied there: 'failed', tried again, then applied_elsewhere
    const settled = (x: DecisionOutcome) => x.decision.decisionId === d.decisionId && x.outcome !== 'failed';
    await wa.until((s) => s.some(settled));
    await wb.until((s) => s.some(settled));
    const outcomes = [...wa.seen, ...wb.seen]
      .filter(settled)
      .map((x) => x.outcome)
      .sort();
    expect(outcomes).toEqual(['applied', 'applied_elsewhere']);
    expect(ledger.charges().filter((c) => c.order === id)).toHaveLength(1);
  });

  it('a worker that loses at the plane to a held (never applied) claim naming its decision reports failed and tries again; it does not report applied_elsewhere', async () => {
    const laptop = machine('held');
    const { id, pause } = await pausedOn(laptop);
    const d = await decideOnPlane(id, pause.checkpointId);
    // another writer claimed the pause at the plane with this decision, then crashed before its local claim
    const held = await call(`${plane.url}/v1/executions/${encodeURIComponent(id)}/claim`, {
      key,
      json: { checkpointId: pause.checkpointId, writerId: 'crashed-writer', decisionId: d.decisionId },
    });
    expect(held.status, JSON.stringify(held.body)).toBe(200);
    const w = worker({ m: laptop });
    await w.until((s) => s.filter((x) => x.decision.decisionId === d.decisionId).length >= 2);
    const mine = w.seen.filter((x) => x.decision.decisionId === d.decisionId);
    expect(mine.map((x) => x.outcome)).toEqual(['failed', 'failed']);
    expect(mine[0]).toMatchObject({ error: { code: 'ALREADY_RESUMED' }, attempts: 1 });
    expect(await laptop.store.getDecision(id, pause.checkpointId)).toMatchObject({ state: 'pending' });
    expect(laptop.ledger.charges()).toHaveLength(0);
    // the holder gives the claim back: the retry applies the decision
    const released = await call(`${plane.url}/v1/executions/${encodeURIComponent(id)}/claim/release`, {
      key,
      json: { checkpointId: pause.checkpointId, writerId: 'crashed-writer' },
    });
    expect(released.status, JSON.stringify(released.body)).toBe(200);
    await w.until((s) => s.some((x) => x.decision.decisionId === d.decisionId && x.outcome === 'applied'));
    expect(laptop.ledger.charges()).toHaveLength(1);
  });

  it('restore: true does not restore a run whose pause was applied on the plane by another writer after the decision arrived: applied_elsewhere, the decision forgotten here', async () => {
    const laptop = machine('applier');
    const { id, pause } = await pausedOn(laptop);
    const server = machine('late-server', undefined, { followChanges: false });
    const d = await decideOnPlane(id, pause.checkpointId);
    await server.replica.pullDecisions();
    expect(await server.store.getDecision(id, pause.checkpointId)).toMatchObject({
      decisionId: d.decisionId,
      state: 'pending',
      held: false,
    });
    // the laptop applies it (plane claim first), and syncs
    const wl = worker({ m: laptop });
    await wl.until((s) => s.some((x) => x.decision.decisionId === d.decisionId && x.outcome === 'applied'));
    await laptop.replica.flush({ timeoutMs: 10_000 });
    const ws = worker({ m: server, restore: true });
    await ws.until((s) => s.some((x) => x.decision.decisionId === d.decisionId));
    expect(ws.seen.filter((x) => x.decision.decisionId === d.decisionId)).toEqual([
      expect.objectContaining({ outcome: 'applied_elsewhere', appliedBy: laptop.store.writerId }),
    ]);
    expect(await server.store.latest(id)).toBeNull();
    expect(await server.store.getDecision(id, pause.checkpointId)).toBeNull();
    expect(server.ledger.charges()).toHaveLength(0);
    expect(laptop.ledger.charges()).toHaveLength(1);
  });

  it('restore: true and a pause claimed on the plane by another writer: applied there without the decision, superseded naming the claimer and forgotten; only held (with the decision or without), failed, kept, applied once released', async () => {
    const laptop = machine('claimer');
    const applied = await pausedOn(laptop);
    const taken = await pausedOn(laptop);
    const held = await pausedOn(laptop);
    const server = machine('claim-server', undefined, { followChanges: false });
    const dApplied = await decideOnPlane(applied.id, applied.pause.checkpointId);
    const dTaken = await decideOnPlane(taken.id, taken.pause.checkpointId);
    const dHeld = await decideOnPlane(held.id, held.pause.checkpointId);
    await server.replica.pullDecisions();
    // the laptop resumes the first pause from code (plane claim, local claim, synced: applied there)
    expect(
      (await laptop.agent.resume(applied.id, { approved: false }, { checkpointId: applied.pause.checkpointId })).status,
    ).toBe('completed');
    expect((await laptop.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    // a resume from code that crashed holds the second pause at the plane (no decision); a crashed worker holds the third with its decision
    const code = await call(`${plane.url}/v1/executions/${encodeURIComponent(taken.id)}/claim`, {
      key,
      json: { checkpointId: taken.pause.checkpointId, writerId: 'code-writer' },
    });
    expect(code.status, JSON.stringify(code.body)).toBe(200);
    const crashed = await call(`${plane.url}/v1/executions/${encodeURIComponent(held.id)}/claim`, {
      key,
      json: { checkpointId: held.pause.checkpointId, writerId: 'crashed-writer', decisionId: dHeld.decisionId },
    });
    expect(crashed.status, JSON.stringify(crashed.body)).toBe(200);
    const w = worker({ m: server, restore: true });
    const about = (id: string) => w.seen.filter((x) => x.decision.decisionId === id);
    await w.until(
      () =>
        about(dApplied.decisionId).length > 0 &&
        about(dTaken.decisionId).length > 0 &&
        about(dHeld.decisionId).length > 0,
    );
    expect(about(dApplied.decisionId)).toEqual([
      expect.objectContaining({ outcome: 'superseded', code: 'ALREADY_RESUMED', claimedBy: laptop.store.writerId }),
    ]);
    expect(about(dTaken.decisionId)[0]).toMatchObject({ outcome: 'failed', error: { code: 'ALREADY_RESUMED' } });
    expect(about(dHeld.decisionId)[0]).toMatchObject({ outcome: 'failed', error: { code: 'ALREADY_RESUMED' } });
    expect(await server.store.getDecision(applied.id, applied.pause.checkpointId)).toBeNull();
    for (const r of [applied, taken, held]) expect(await server.store.latest(r.id)).toBeNull();
    expect(await server.store.getDecision(taken.id, taken.pause.checkpointId)).toMatchObject({
      state: 'pending',
      held: false,
    });
    expect(await server.store.getDecision(held.id, held.pause.checkpointId)).toMatchObject({
      state: 'pending',
      held: false,
    });
    // the holders give their claims back: the retries restore the runs and apply the decisions
    for (const [r, writerId] of [
      [taken, 'code-writer'],
      [held, 'crashed-writer'],
    ] as const) {
      const released = await call(`${plane.url}/v1/executions/${encodeURIComponent(r.id)}/claim/release`, {
        key,
        json: { checkpointId: r.pause.checkpointId, writerId },
      });
      expect(released.status, JSON.stringify(released.body)).toBe(200);
    }
    await w.until(() => [dTaken, dHeld].every((d) => about(d.decisionId).some((x) => x.outcome === 'applied')));
    expect(server.ledger.charges().filter((c) => c.order === held.id)).toHaveLength(1);
    expect(server.ledger.charges().filter((c) => c.order === taken.id)).toHaveLength(1);
    expect(server.ledger.charges().filter((c) => c.order === applied.id)).toHaveLength(0);
  });

  it("restore: true: a decision recorded here while the plane's answer about another one was on its way is not forgotten with it", async () => {
    const laptop = machine('b1-laptop');
    const { id, pause } = await pausedOn(laptop);
    const d = await decideOnPlane(id, pause.checkpointId);
    const proxy = await new FaultProxy(plane.url).start();
    cleanup.push(() => proxy.close());
    const server = machine('b1-server', undefined, { followChanges: false, url: proxy.url });
    await server.replica.pullDecisions();
    expect((await laptop.agent.resume(id, { approved: false }, { checkpointId: pause.checkpointId })).status).toBe(
      'completed',
    );
    expect((await laptop.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    // the worker's first read of the run is answered late; the next one only when the test ends
    let answer!: () => void;
    const late = new Promise<void>((r) => (answer = r));
    let unpark!: () => void;
    const parked = new Promise<void>((r) => (unpark = r));
    const runPath = `/v1/executions/${encodeURIComponent(id)}`;
    const reads = () => proxy.seen.filter((r) => r.path === runPath).length;
    proxy.rule = ({ path }) => (path !== runPath ? undefined : { holdAnswer: reads() === 0 ? late : parked });
    const w = worker({ m: server, restore: true });
    cleanup.push(async () => unpark());
    await until(() => reads() === 1);
    // meanwhile the decision feed stores a decision for a pause of the run that opened since
    const fresh = {
      decisionId: uuidv7(),
      executionId: id,
      checkpointId: uuidv7(),
      approved: true,
      metadata: {},
      decidedBy: 'key:approver',
      source: 'plane' as const,
      decidedAt: new Date().toISOString(),
    };
    expect(await server.store.recordDecision(fresh)).toEqual({ recorded: true });
    answer();
    await w.until((s) => s.some((x) => x.decision.decisionId === d.decisionId));
    expect(w.seen.find((x) => x.decision.decisionId === d.decisionId)).toMatchObject({
      outcome: 'superseded',
      claimedBy: laptop.store.writerId,
    });
    // once the worker forgot d (one DELETE), the fresh decision is still here
    await until(async () => (await server.store.getDecision(id, pause.checkpointId)) === null);
    expect(await server.store.getDecision(id, fresh.checkpointId)).toMatchObject({
      decisionId: fresh.decisionId,
      state: 'pending',
      held: false,
    });
  });

  it('restore: true: a settled decision that cannot be forgotten here (the store locked by another process) is logged through the injected logger, and kept', async () => {
    const laptop = machine('n1-laptop');
    const { id, pause } = await pausedOn(laptop);
    const d = await decideOnPlane(id, pause.checkpointId);
    const server = machine('n1-server', undefined, { followChanges: false, busyTimeoutMs: 0 });
    await server.replica.pullDecisions();
    expect((await laptop.agent.resume(id, { approved: false }, { checkpointId: pause.checkpointId })).status).toBe(
      'completed',
    );
    expect((await laptop.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    // another process holds the write lock of the server's store file
    const other = new Database((server.store as SqliteCheckpointer).connection.name);
    other.exec('BEGIN IMMEDIATE');
    cleanup.push(async () => {
      other.exec('ROLLBACK');
      other.close();
    });
    const warned: { fields: Record<string, unknown>; message: string }[] = [];
    const w = worker({
      m: server,
      restore: true,
      logger: { warn: (fields, message) => warned.push({ fields, message }) },
    });
    await until(() => warned.length > 0);
    expect(w.seen.find((x) => x.decision.decisionId === d.decisionId)).toMatchObject({ outcome: 'superseded' });
    expect(warned[0]).toMatchObject({
      fields: { executionId: id, decisionId: d.decisionId },
      message: expect.stringContaining(`could not forget the settled decisions of '${id}'`),
    });
    expect(await server.store.getDecision(id, pause.checkpointId)).toMatchObject({ decisionId: d.decisionId });
  });

  it("restore: true: a 404 that is not the plane's EXECUTION_NOT_FOUND (a proxy, a wrong prefix) is a failure tried again, never a run gone: the decision is kept", async () => {
    const laptop = machine('b3-laptop');
    const { id, pause } = await pausedOn(laptop);
    const d = await decideOnPlane(id, pause.checkpointId);
    const proxy = await new FaultProxy(plane.url).start();
    cleanup.push(() => proxy.close());
    const server = machine('b3-server', undefined, { followChanges: false, url: proxy.url });
    await server.replica.pullDecisions();
    const runPath = `/v1/executions/${encodeURIComponent(id)}`;
    proxy.rule = ({ path }) =>
      path === runPath ? { status: 404, html: '<html><body><h1>404 Not Found</h1>nginx</body></html>' } : undefined;
    await expect(server.replica.runAtPlane(id)).rejects.toMatchObject({
      code: 'PLANE_ERROR',
      details: { status: 404 },
    });
    // the plane's own word still means gone
    expect(await server.replica.runAtPlane(`never-${id}`)).toBeNull();
    const w = worker({ m: server, restore: true });
    await w.until((s) => s.filter((x) => x.decision.decisionId === d.decisionId).length >= 2);
    // the worker goes on retrying while this reads: every try so far failed (two at least)
    const outcomes = w.seen.filter((x) => x.decision.decisionId === d.decisionId).map((x) => x.outcome);
    expect(outcomes.length).toBeGreaterThanOrEqual(2);
    expect(new Set(outcomes)).toEqual(new Set(['failed']));
    expect(w.seen[0]).toMatchObject({ error: { code: 'PLANE_ERROR' } });
    expect(await server.store.getDecision(id, pause.checkpointId)).toMatchObject({
      decisionId: d.decisionId,
      state: 'pending',
      held: false,
    });
  });

  it('the change feed does not forget a decision recorded here after the page it acts on was served', async () => {
    const laptop = machine('b1-mover');
    const { id, pause } = await pausedOn(laptop);
    const d = await decideOnPlane(id, pause.checkpointId);
    const proxy = await new FaultProxy(plane.url).start();
    cleanup.push(() => proxy.close());
    const server = machine('b1-keeper', undefined, { followChanges: false, url: proxy.url });
    await server.replica.pullDecisions();
    expect(await server.store.getDecision(id, pause.checkpointId)).toMatchObject({
      decisionId: d.decisionId,
      held: false,
    });
    expect((await laptop.agent.resume(id, { approved: false }, { checkpointId: pause.checkpointId })).status).toBe(
      'completed',
    );
    expect((await laptop.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    let answer!: () => void;
    const late = new Promise<void>((r) => (answer = r));
    // the feed a connected store asks: its writer's
    proxy.rule = ({ path }) => (path.startsWith('/v1/writer-changes') ? { holdAnswer: late } : undefined);
    const pulled = server.replica.pullChanges();
    await until(() => proxy.seen.some((r) => r.path.startsWith('/v1/writer-changes')));
    const fresh = {
      decisionId: uuidv7(),
      executionId: id,
      checkpointId: uuidv7(),
      approved: true,
      metadata: {},
      decidedBy: 'key:approver',
      source: 'plane' as const,
      decidedAt: new Date().toISOString(),
    };
    expect(await server.store.recordDecision(fresh)).toEqual({ recorded: true });
    answer();
    await pulled;
    expect(await server.store.getDecision(id, pause.checkpointId)).toBeNull();
    expect(await server.store.getDecision(id, fresh.checkpointId)).toMatchObject({
      decisionId: fresh.decisionId,
      held: false,
    });
  });

  it('the change feed forgets decisions kept for a run this store does not hold once the plane moved past their pause; a decision whose pause is still open stays', async () => {
    const laptop = machine('mover');
    const done = await pausedOn(laptop);
    const open = await pausedOn(laptop);
    const server = machine('keeper', undefined, { followChanges: false });
    const dDone = await decideOnPlane(done.id, done.pause.checkpointId);
    const dOpen = await decideOnPlane(open.id, open.pause.checkpointId);
    await server.replica.pullDecisions();
    expect(await server.store.getDecision(done.id, done.pause.checkpointId)).toMatchObject({
      state: 'pending',
      held: false,
    });
    // the laptop applies the first decision only (its worker picks runs by id), and syncs
    await laptop.replica.pullDecisions();
    const stop = new AbortController();
    const applied: DecisionOutcome[] = [];
    const serving = serveDecisions({
      store: laptop.store,
      signal: stop.signal,
      pollMs: 60_000,
      agentFor: (x) => (x.executionId === done.id ? laptop.agent : null),
      onOutcome: (x) => applied.push(x),
    });
    cleanup.push(async () => {
      stop.abort();
      await serving;
    });
    const deadline = Date.now() + 20_000;
    while (!applied.some((x) => x.decision.decisionId === dDone.decisionId) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(applied.map((x) => x.outcome)).toEqual(['applied']);
    expect((await laptop.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    await server.replica.pullChanges();
    expect(await server.store.getDecision(done.id, done.pause.checkpointId)).toBeNull();
    expect(await server.store.getDecision(open.id, open.pause.checkpointId)).toMatchObject({
      decisionId: dOpen.decisionId,
      state: 'pending',
      held: false,
    });
    expect(await server.store.latest(done.id)).toBeNull();
  });
});
