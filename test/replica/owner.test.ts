/**
 * The run's owner at the plane, seen from one connected store (DESIGN §5b):
 * the effect key handed to a side effect, the strict mode that stops a runner
 * whose hold cannot be renewed, the store instance a copied file gets, and
 * the lease route's answers. The cross-machine scenarios are test/machines/.
 */
import { copyFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  connectPlane,
  currentEffect,
  idempotent,
  ScriptedModel,
  tool,
  type EffectInfo,
} from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-owner-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('owner', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});
const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

function store(name: string): SqliteCheckpointer {
  const s = new SqliteCheckpointer({ path: tmp.file(`${name}.db`) });
  closing.push(() => s.close());
  return s;
}

/** `s` connected to the plane at `url` (default: the plane itself): no poll, a 5 ms debounce, no feed; stopped after the test. */
function connected(
  s: SqliteCheckpointer,
  url = plane.url,
  o: { timeoutMs?: number; onPlaneUnreachable?: 'stop' | 'continue' } = {},
) {
  const replica = connectPlane(s, {
    url,
    apiKey: key,
    pollMs: 0,
    debounceMs: 5,
    timeoutMs: o.timeoutMs ?? 5000,
    followChanges: false,
    ...(o.onPlaneUnreachable ? { onPlaneUnreachable: o.onPlaneUnreachable } : {}),
  });
  closing.push(() => replica.stop());
  return replica;
}

/** A fault proxy in front of the plane, closed after the test. */
async function faultProxy(): Promise<FaultProxy> {
  const proxy = await new FaultProxy(plane.url).start();
  closing.push(() => proxy.close());
  return proxy;
}

/** An agent whose one tool charges through idempotent, recording what the effect was handed. */
function charger(
  s: SqliteCheckpointer,
  seen: (EffectInfo | null)[],
  o: { leaseMs?: number; before?: () => Promise<void> } = {},
) {
  const charge = idempotent(async function charge(order: string) {
    seen.push(currentEffect());
    return { chargeId: `ch_${order}` };
  });
  const pay = tool({
    name: 'pay',
    description: 'pay',
    parameters: z.object({ order: z.string() }),
    execute: async ({ order }) => {
      await o.before?.();
      return charge(order);
    },
  });
  const model = new ScriptedModel(({ turn }) =>
    turn === 0 ? { toolCalls: [{ name: 'pay', arguments: { order: '7' } }] } : { content: 'paid' },
  );
  return new Agent({ name: 'payer', model, tools: [pay], checkpointer: s, leaseMs: o.leaseMs });
}

describe('the run owner at the plane, from one store', () => {
  it("an idempotent body is handed the effect's stable idempotency key (the same string for the run and key anywhere); none outside a body", async () => {
    const s = store('effect');
    const seen: (EffectInfo | null)[] = [];
    expect((await charger(s, seen).run('pay', { executionId: 'fx-1' })).status).toBe('completed');
    expect(seen).toHaveLength(1);
    const [e] = seen as EffectInfo[];
    expect(e.executionId).toBe('fx-1');
    expect(e.key).toMatch(/^charge:[0-9a-f]{64}$/);
    expect(e.idempotencyKey).toBe(`waymark:fx-1:${e.key}`);
    // no plane: no owner epoch to hand on
    expect(e.epoch).toBeNull();
    expect(currentEffect()).toBeNull();
  });

  it('strict mode: a runner whose hold cannot be renewed at the plane starts no effect (LEASE_LOST); by default it goes on offline', async () => {
    const proxy = await faultProxy();
    for (const mode of ['stop', 'continue'] as const) {
      const s = store(`strict-${mode}`);
      connected(s, proxy.url, { timeoutMs: 2000, onPlaneUnreachable: mode });
      const seen: (EffectInfo | null)[] = [];
      // the plane answers ingest but not the hold's renewal: no plane behind the address, for that route
      proxy.rule = ({ path }) => (path.endsWith('/lease') ? { status: 503 } : undefined);
      const run = charger(s, seen).run('pay', { executionId: `strict-${mode}` });
      if (mode === 'stop') {
        await expect(run).rejects.toMatchObject({ code: 'LEASE_LOST' });
        expect(seen).toEqual([]);
      } else {
        expect((await run).status).toBe('completed');
        expect(seen).toHaveLength(1);
      }
      proxy.rule = null;
    }
  });

  it('a copy of a store file is another instance under the same writer id; the same file opened again is the same instance', async () => {
    const a = store('orig');
    await a.setup();
    const again = store('orig');
    expect(again.writerId).toBe(a.writerId);
    expect(again.instanceId).toBe(a.instanceId);
    // copied as a user would: the file closed (its log folded in), then cp
    await again.close();
    await a.close();
    copyFileSync(tmp.file('orig.db'), tmp.file('copy.db'));
    const copy = store('copy');
    expect(copy.writerId).toBe(a.writerId);
    expect(copy.instanceId).not.toBe(a.instanceId);
    // the copy keeps its new instance across opens
    const copyAgain = store('copy');
    expect(copyAgain.instanceId).toBe(copy.instanceId);
  });

  it("the lease route: a run the plane does not hold is 404; its owner renews and releases; another holder is LEASE_LOST; another instance under the owner's writer id is WRITER_COPY", async () => {
    const lease = (id: string, body: Record<string, unknown>) =>
      call(`${plane.url}/v1/executions/${id}/lease`, { key, json: { ttlMs: 60_000, ...body } });
    expect((await lease('nowhere', { writerId: 'w', holder: 'w#1' })).body.error).toMatchObject({
      code: 'EXECUTION_NOT_FOUND',
    });
    const s = store('route');
    const replica = connected(s);
    let holder = '';
    let epoch = 0;
    const seen: (EffectInfo | null)[] = [];
    const agent = charger(s, seen, {
      before: async () => {
        holder = (await s.getLease('route-1'))!.holder!;
        await replica.flush({ timeoutMs: 10_000 });
        // the runner holds the run at the plane (its effect's confirm renewed it): another holder is refused, a copy too
        const renewed = await lease('route-1', { writerId: s.writerId, holder, instance: s.instanceId });
        expect(renewed.body).toMatchObject({ epoch: expect.any(Number), released: false });
        epoch = renewed.body.epoch;
        expect((await lease('route-1', { writerId: 'someone-else', holder: 'x#1' })).body.error).toMatchObject({
          code: 'LEASE_LOST',
          details: { writerId: s.writerId },
        });
        expect(
          (await lease('route-1', { writerId: s.writerId, holder: 'copy#1', instance: 'another-instance' })).body.error,
        ).toMatchObject({ code: 'WRITER_COPY' });
      },
    });
    expect((await agent.run('pay', { executionId: 'route-1' })).status).toBe('completed');
    // the effect was handed the owner epoch its confirm at the plane answered with
    expect(seen.map((e) => e?.epoch)).toEqual([epoch]);
    await replica.flush({ timeoutMs: 10_000 });
    // the run ended there: its hold is no one's now
    expect((await lease('route-1', { writerId: s.writerId, holder, instance: s.instanceId })).body.error).toMatchObject(
      { code: 'LEASE_LOST', details: { state: 'ended', ownEnd: true } },
    );
    // ended by this store (its outbox may be ahead of the plane) only for this store: a copy of it is told no such thing
    expect(
      (await lease('route-1', { writerId: s.writerId, holder: 'copy#1', instance: 'another-instance' })).body.error,
    ).toMatchObject({ code: 'LEASE_LOST', details: { state: 'ended', ownEnd: false } });
  });

  it("a confirm the plane answers 'lost' while this store's rows cannot reach it is no verdict: a run deleted and started again under its id goes on, as offline", async () => {
    const proxy = await faultProxy();
    const s = store('again');
    const replica = connected(s, proxy.url, { timeoutMs: 2000 });
    const seen: (EffectInfo | null)[] = [];
    expect((await charger(s, seen).run('pay', { executionId: 'again-1' })).status).toBe('completed');
    await replica.flush({ timeoutMs: 10_000 });
    await s.deleteExecution('again-1');
    // the run again under its id; the plane still holds the first one, ended, and the new rows cannot reach it
    const again = charger(s, seen, {
      leaseMs: 3000,
      before: async () => {
        proxy.rule = ({ path }) => (path.startsWith('/v1/ingest') ? { status: 503 } : undefined);
      },
    });
    const r = await again.run('pay', { executionId: 'again-1' });
    expect(r.status, JSON.stringify(r)).toBe('completed');
    expect(seen).toHaveLength(2);
    proxy.rule = null;
    await replica.flush({ timeoutMs: 10_000 });
    expect((await call(`${plane.url}/v1/executions/again-1`, { key })).body.execution.status).toBe('completed');
  });

  it("adoptPlaneBranch: refuses while a runner here holds the run, changes nothing when the plane's copy cannot be had, and otherwise replaces the copy keeping every recorded effect", async () => {
    const proxy = await faultProxy();
    const s = store('adopt');
    const replica = connected(s, proxy.url, { timeoutMs: 2000 });
    expect((await charger(s, []).run('pay', { executionId: 'adopt-1' })).status).toBe('completed');
    await s.putIdempotent('adopt-1', 'note-only-here', { n: 1 });
    await replica.flush({ timeoutMs: 10_000 });
    const rows = async () => (await s.list('adopt-1')).map((r) => r.id);
    const before = await rows();
    const lease = await s.acquireLease('adopt-1', { holder: 'here#1', ttlMs: 60_000 });
    expect(await replica.adoptPlaneBranch('adopt-1')).toBe(false);
    await s.releaseLease(lease);
    proxy.rule = ({ path }) => (path.includes('/restore') ? 'reset' : undefined);
    await expect(replica.adoptPlaneBranch('adopt-1')).rejects.toMatchObject({ code: 'PLANE_ERROR' });
    expect(await rows()).toEqual(before);
    proxy.rule = null;
    expect(await replica.adoptPlaneBranch('adopt-1')).toBe(true);
    expect(await rows()).toEqual(before);
    expect((await s.listIdempotent('adopt-1')).map((e) => e.key)).toContain('note-only-here');
    expect((await s.outboxStats()).pendingCount).toBe(0);
  });

  it("an effect whose record another writer's late entry brought to the plane is not run again: the holder's confirm is answered with it, and it is this run's result", async () => {
    const b = store('late-b');
    const a = store('late-a');
    const replicaB = connected(b);
    const replicaA = connected(a);
    const ran: string[] = [];
    const charge = idempotent(
      async function charge(order: string) {
        ran.push(order);
        return { chargeId: `ch_${order}_b` };
      },
      { key: (order) => `charge-${order}` },
    );
    const lease = (id: string, body: Record<string, unknown>) =>
      call(`${plane.url}/v1/executions/${id}/lease`, { key, json: { ttlMs: 60_000, ...body } });
    const pay = tool({
      name: 'pay',
      description: 'pay',
      parameters: z.object({ order: z.string() }),
      execute: async ({ order }) => {
        await replicaB.flush({ timeoutMs: 10_000 });
        // another writer's record of this very effect reaches the plane (a runner that lost the run, recording late)
        await a.putIdempotent('late-1', `charge-${order}`, { chargeId: `ch_${order}_a` });
        await replicaA.flush({ timeoutMs: 10_000 });
        // the route answers a renewal naming the effect with the record, and one naming another effect with none
        const holder = (await b.getLease('late-1'))!.holder!;
        expect(
          (
            await lease('late-1', {
              writerId: b.writerId,
              holder,
              instance: b.instanceId,
              effectKey: `charge-${order}`,
            })
          ).body.recorded,
        ).toMatchObject({
          key: `charge-${order}`,
          result: { chargeId: `ch_${order}_a` },
        });
        expect(
          (await lease('late-1', { writerId: b.writerId, holder, instance: b.instanceId, effectKey: 'charge-other' }))
            .body.recorded,
        ).toBeNull();
        return charge(order);
      },
    });
    const model = new ScriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ name: 'pay', arguments: { order: '7' } }] } : { content: 'paid' },
    );
    const r = await new Agent({ name: 'payer', model, tools: [pay], checkpointer: b }).run('pay', {
      executionId: 'late-1',
    });
    expect(r.status).toBe('completed');
    expect(ran).toEqual([]);
    // the tool's result in the run's conversation is the plane's record
    expect(JSON.stringify(await b.readState((await b.latest('late-1'))!))).toContain('ch_7_a');
    expect(await b.getIdempotent('late-1', 'charge-7')).toMatchObject({ hit: true, result: { chargeId: 'ch_7_a' } });
    // the imported record is the plane's: B's outbox does not send it back
    await replicaB.flush({ timeoutMs: 10_000 });
    expect((await b.outboxStats()).pendingCount).toBe(0);
    const restore = await call(`${plane.url}/v1/executions/late-1/restore`, { key });
    expect(restore.body.idempotency).toEqual([
      expect.objectContaining({ key: 'charge-7', result: { chargeId: 'ch_7_a' } }),
    ]);
  });
});
