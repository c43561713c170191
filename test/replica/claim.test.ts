import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { connectPlane, type ConnectOptions, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { createKey, revokeKey } from '../../plane/index.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
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
  const replica = connectPlane(store, { url: o.proxy?.url ?? plane.url, apiKey: key, pollMs: 0, debounceMs: 5, timeoutMs: 2000, claimFlushMs: 1000, ...o });
  open.push({ replica, store, proxy: o.proxy });
  const ledger = new Ledger(tmp.file(`${name}.jsonl`));
  const { agent } = refundAgent({ store, ledger });
  expect((await agent.run(refundRequest('7', 50_000), { executionId })).status).toBe('paused');
  await replica.flush({ timeoutMs: o.settleMs ?? 10_000 });
  const events: { event: string; reason: string }[] = [];
  for (const event of ['claim_refused', 'claim_offline']) replica.on(event, (e: { reason: string }) => events.push({ event, reason: e.reason }));
  return { store, replica, agent, ledger, executionId, events, resume: () => agent.resume(executionId, { approved: true }) };
}

describe('regression: the claim guard treated a refusal by the plane as a win', () => {
  it('a revoked key: the resume is refused with CLAIM_REFUSED, the pause stays open, nothing is charged', async () => {
    const k = await createKey(plane.database.db, { project: 'claims', scopes: ['ingest'] });
    const m = await pausedMachine({ apiKey: k.key });
    expect((await m.replica.status()).pendingRows).toBe(0);
    await revokeKey(plane.database.db, k.id);
    const e = await m.resume().catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'CLAIM_REFUSED', details: { status: 401, planeCode: 'UNAUTHORIZED', executionId: m.executionId } });
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
    await expect(m404.resume()).rejects.toMatchObject({ code: 'CLAIM_REFUSED', details: { status: 404, planeCode: 'PAUSE_NOT_FOUND' } });
    expect(m404.ledger.charges()).toEqual([]);
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
