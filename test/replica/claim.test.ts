import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { connectPlane, type ConnectOptions, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { createKey, revokeKey } from '../../plane/auth.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { runTs } from '../helpers/child.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-claim-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('claims', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

let n = 0;
const open: { replica: Replica; store: SqliteCheckpointer; proxy?: FaultProxy }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.replica.stop();
    await o.proxy?.close();
    await o.store.close();
  }
});

/** A machine with a paused refund run, connected to the plane (through a proxy when given). */
async function pausedMachine(o: Partial<ConnectOptions> & { proxy?: FaultProxy; settleMs?: number } = {}) {
  const name = `m${++n}`;
  const executionId = `claim-${name}`;
  const store = new SqliteCheckpointer({ path: tmp.file(`${name}.db`) });
  const replica = connectPlane(store, {
    url: o.proxy?.url ?? plane.url,
    apiKey: key,
    pollMs: 0,
    debounceMs: 5,
    timeoutMs: 2000,
    claimFlushMs: 1000,
    ...o,
  });
  open.push({ replica, store, proxy: o.proxy });
  const ledger = new Ledger(tmp.file(`${name}.jsonl`));
  const { agent } = refundAgent({ store, ledger });
  expect((await agent.run(refundRequest('7', 50_000), { executionId })).status).toBe('paused');
  await replica.flush({ timeoutMs: o.settleMs ?? 10_000 });
  const events: { event: string; reason: string }[] = [];
  for (const event of ['claim_refused', 'claim_offline'] as const)
    replica.on(event, (e: { reason: string }) => events.push({ event, reason: e.reason }));
  return {
    store,
    replica,
    agent,
    ledger,
    executionId,
    events,
    resume: () => agent.resume(executionId, { approved: true }),
  };
}

describe('regression: the claim guard treated a refusal by the plane as a win', () => {
  it('a revoked key: the resume is refused with CLAIM_REFUSED, the pause stays open, nothing is charged', async () => {
    const k = await createKey(plane.database.db, { createProject: true, project: 'claims', scopes: ['ingest'] });
    const m = await pausedMachine({ apiKey: k.key });
    expect((await m.replica.status()).pendingRows).toBe(0);
    await revokeKey(plane.database.db, k.id);
    const e = await m.resume().catch((x: unknown) => x);
    expect(e).toMatchObject({
      code: 'CLAIM_REFUSED',
      details: { status: 401, planeCode: 'UNAUTHORIZED', executionId: m.executionId },
    });
    expect((e as Error).message).toMatch(/refused the claim .*401/);
    expect(await m.store.getPendingInterrupt(m.executionId)).not.toBeNull();
    expect(m.ledger.charges()).toEqual([]);
    expect(m.events).toEqual([]);
  });

  it('a key without the ingest scope (403) and a pause the plane does not hold (404) are refusals too', async () => {
    const readOnly = await plane.key('claims', ['read']);
    const m403 = await pausedMachine();
    m403.replica.setApiKey(readOnly);
    await expect(m403.resume()).rejects.toMatchObject({ code: 'CLAIM_REFUSED', details: { status: 403 } });

    const proxy = await new FaultProxy(plane.url).start();
    proxy.rule = ({ path }) => (path === '/v1/ingest' ? { status: 500 } : undefined);
    const m404 = await pausedMachine({ proxy, settleMs: 200, claimFlushMs: 200 });
    await expect(m404.resume()).rejects.toMatchObject({
      code: 'CLAIM_REFUSED',
      details: { status: 404, planeCode: 'PAUSE_NOT_FOUND' },
    });
    expect(m404.ledger.charges()).toEqual([]);
  });

  it('the plane comes back between a flush that timed out and the claim (campaign seed 39543): the pause is sent, then claimed, not refused', async () => {
    const proxy = await new FaultProxy(plane.url).start();
    let planeBack = false;
    // the drain cannot reach the plane until the claim does: the first flush times out with the pause still in the outbox
    proxy.rule = ({ path }) => {
      if (path.endsWith('/claim')) planeBack = true;
      return path === '/v1/ingest' && !planeBack ? 'reset' : undefined;
    };
    const m = await pausedMachine({ proxy, settleMs: 200, claimFlushMs: 300 });
    expect((await m.replica.status()).pendingRows).toBeGreaterThan(0);
    expect((await m.resume()).status).toBe('completed');
    expect(m.events).toEqual([]);
    expect(m.ledger.charges().length).toBe(1);
    expect((await m.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    const pause = (await call(`${plane.url}/v1/executions/${m.executionId}`, { key })).body.pause;
    expect(pause.claim).toMatchObject({ writerId: m.store.writerId, state: 'applied' });
  });

  it("onClaimRefused: 'resume_locally' resumes and says so with claim_refused", async () => {
    const proxy = await new FaultProxy(plane.url).start();
    proxy.rule = ({ path }) => (path === '/v1/ingest' ? { status: 500 } : undefined);
    const m = await pausedMachine({ proxy, settleMs: 200, onClaimRefused: 'resume_locally', claimFlushMs: 200 });
    expect((await m.resume()).status).toBe('completed');
    expect(m.events).toEqual([{ event: 'claim_refused', reason: expect.stringMatching(/^404 PAUSE_NOT_FOUND/) }]);
    expect(m.ledger.charges().length).toBe(1);
  });

  it('offline is a network error, a timeout or 502/503/504: the local claim stands and claim_offline says why', async () => {
    for (const fault of [{ status: 503 }, { status: 502 }, 'reset'] as const) {
      const proxy = await new FaultProxy(plane.url).start();
      const m = await pausedMachine({ proxy });
      proxy.rule = ({ path }) => (path.endsWith('/claim') ? fault : undefined);
      expect((await m.resume()).status).toBe('completed');
      expect(m.events.map((e) => e.event)).toEqual(['claim_offline']);
    }
  });
});

describe('regression: a plane claim was permanent (a crash between the plane claim and the local claim)', () => {
  const CHILD = fileURLToPath(new URL('./claim-crash-child.ts', import.meta.url));
  const other = 'writer-other-machine';

  /** A paused run, synced; then a child resumes it and is SIGKILLed between the plane claim and the local one. */
  async function crashedHolder(p: TestPlane, apiKey: string) {
    const name = `crash${++n}`;
    const executionId = `claim-${name}`;
    const db = tmp.file(`${name}.db`);
    const ledger = new Ledger(tmp.file(`${name}.jsonl`));
    const store = new SqliteCheckpointer({ path: db });
    const replica = connectPlane(store, { url: p.url, apiKey, pollMs: 0, debounceMs: 5, timeoutMs: 2000 });
    expect((await refundAgent({ store, ledger }).agent.run(refundRequest('9', 50_000), { executionId })).status).toBe(
      'paused',
    );
    expect((await replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    await replica.stop();
    const holder = {
      db,
      ledger,
      executionId,
      writerId: store.writerId,
      checkpointId: (await store.getPendingInterrupt(executionId))!.checkpointId,
    };
    await store.close();
    const r = await runTs(CHILD, [db, p.url, apiKey, executionId, ledger.path]);
    expect(r.signal, r.stdout + r.stderr).toBe('SIGKILL');
    return holder;
  }
  type Holder = Awaited<ReturnType<typeof crashedHolder>>;
  const claimAs = (p: TestPlane, apiKey: string, h: Holder, writerId: string) =>
    call(`${p.url}/v1/executions/${h.executionId}/claim`, {
      key: apiKey,
      json: { checkpointId: h.checkpointId, writerId },
    });
  const pauseOf = async (p: TestPlane, apiKey: string, h: Holder) =>
    (await call(`${p.url}/v1/executions/${h.executionId}`, { key: apiKey })).body.pause;
  /** The crashed machine starts again on its own store file. */
  function restart(p: TestPlane, apiKey: string, h: Holder) {
    const store = new SqliteCheckpointer({ path: h.db });
    const replica = connectPlane(store, { url: p.url, apiKey, pollMs: 0, debounceMs: 5, timeoutMs: 2000 });
    open.push({ replica, store });
    expect(store.writerId).toBe(h.writerId);
    return {
      store,
      replica,
      resume: () => refundAgent({ store, ledger: h.ledger }).agent.resume(h.executionId, { approved: true }),
    };
  }

  it('the claim shows as held (not applied); the holder completes it by resuming again, and then it is applied and final', async () => {
    const h = await crashedHolder(plane, key);
    expect(await pauseOf(plane, key, h)).toMatchObject({
      state: 'claimed',
      claim: { writerId: h.writerId, state: 'held', appliedAt: null },
    });
    expect((await claimAs(plane, key, h, other)).status).toBe(409);
    const a = restart(plane, key, h);
    expect((await a.resume()).status).toBe('completed');
    expect(h.ledger.charges().length).toBe(1);
    expect((await a.replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    expect((await pauseOf(plane, key, h)).claim).toMatchObject({
      writerId: h.writerId,
      state: 'applied',
      appliedAt: expect.any(String),
    });
    await expect(a.replica.releaseClaim(h.executionId, h.checkpointId)).rejects.toMatchObject({
      code: 'PLANE_ERROR',
      details: { status: 409, planeCode: 'CLAIM_APPLIED' },
    });
  }, 120_000);

  it('the holder gives the held claim back: the pause is open (and in restore bundles) again, and another writer wins it', async () => {
    const h = await crashedHolder(plane, key);
    const bundle = () => call(`${plane.url}/v1/executions/${h.executionId}/restore`, { key });
    expect((await bundle()).body.pending).toBeNull();
    const a = restart(plane, key, h);
    expect(
      (
        await call(`${plane.url}/v1/executions/${h.executionId}/claim/release`, {
          key,
          json: { checkpointId: h.checkpointId, writerId: other },
        })
      ).status,
    ).toBe(409);
    expect(await a.replica.releaseClaim(h.executionId, h.checkpointId)).toBe(true);
    expect(await pauseOf(plane, key, h)).toMatchObject({ state: 'open', claimedBy: null, claim: null });
    expect((await bundle()).body.pending).toMatchObject({ checkpointId: h.checkpointId });
    expect((await claimAs(plane, key, h, other)).status).toBe(200);
    await expect(a.resume()).rejects.toMatchObject({ code: 'ALREADY_RESUMED', details: { claimedBy: other } });
    expect(h.ledger.charges()).toEqual([]);
  }, 120_000);

  it('a held claim older than the release delay is taken over by the next writer; the crashed holder is then AlreadyResumed', async () => {
    // an hour's delay no test run reaches; the claim is then made older than it in the database, not waited for
    const quick = await startTestPlane('pglite', { claimReleaseAfterMs: 3_600_000 });
    try {
      const k = await quick.key('claims', ['ingest', 'read']);
      const h = await crashedHolder(quick, k);
      expect((await claimAs(quick, k, h, other)).status).toBe(409);
      await quick.database.db.execute(
        sql`UPDATE claims SET claimed_at = claimed_at - interval '2 hours' WHERE checkpoint_id = ${h.checkpointId}`,
      );
      expect((await claimAs(quick, k, h, other)).status).toBe(200);
      expect((await pauseOf(quick, k, h)).claim).toMatchObject({ writerId: other, state: 'held' });
      const a = restart(quick, k, h);
      await expect(a.resume()).rejects.toMatchObject({ code: 'ALREADY_RESUMED', details: { claimedBy: other } });
      expect(h.ledger.charges()).toEqual([]);
      for (const o of open.splice(0)) await o.replica.stop().then(() => o.store.close());
    } finally {
      await quick.close();
    }
  }, 120_000);
});
