/**
 * The lease part of the store contract, run per backend by
 * runStoreSuite. Two handles on one store stand for two processes.
 */
import { describe, expect } from 'vitest';
import type { Checkpointer, Lease } from '../../checkpointer.js';
import { hasCode } from '../../../shared/errors.js';
import { contractTest, expectCode, input, marker, pauseRow, withTwoHandles, type StoreSuiteOptions } from './suite.js';

let n = 0;
const exec = () => `lease-${Date.now().toString(36)}-${++n}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Wait until the store itself judges the lease expired (its clock, not ours). */
async function untilExpired(store: Checkpointer, executionId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await store.getLease(executionId))?.live) {
    if (Date.now() > deadline) throw new Error(`lease of ${executionId} did not expire`);
    await sleep(20);
  }
}

export function runLeaseSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}: leases`, () => {
    let a: Checkpointer;
    let b: Checkpointer;
    withTwoHandles(options, (pair) => ({ a, b } = pair));

    test('acquireLease: epoch 1, then RunInProgress naming holder and expiry for any other taker while live', async () => {
      const id = exec();
      const la = await a.acquireLease(id, { holder: 'A', ttlMs: 60_000 });
      expect(la).toMatchObject({ executionId: id, holder: 'A', epoch: 1 });
      expect(Date.parse(la.expiresAt)).toBeGreaterThan(Date.now() + 30_000);
      let err: unknown;
      await b.acquireLease(id, { holder: 'B', ttlMs: 60_000 }).catch((e) => (err = e));
      expect(hasCode(err, 'RUN_IN_PROGRESS')).toBe(true);
      expect((err as { details: unknown }).details).toMatchObject({
        executionId: id,
        holder: 'A',
        expiresAt: la.expiresAt,
      });
      // the same holder name is refused too: one acquisition runs an execution at a time
      await expectCode(a.acquireLease(id, { holder: 'A', ttlMs: 60_000 }), 'RUN_IN_PROGRESS');
      expect(await b.getLease(id)).toMatchObject({ holder: 'A', epoch: 1, live: true });
    });

    test('release frees the lease; the next acquisition gets the next epoch', async () => {
      const id = exec();
      const la = await a.acquireLease(id, { holder: 'A', ttlMs: 60_000 });
      await a.releaseLease(la);
      expect(await b.getLease(id)).toMatchObject({ holder: null, epoch: 1, expiresAt: null, live: false });
      const lb = await b.acquireLease(id, { holder: 'B', ttlMs: 60_000 });
      expect(lb.epoch).toBe(2);
      // releasing a lease already lost changes nothing
      await a.releaseLease(la);
      expect(await a.getLease(id)).toMatchObject({ holder: 'B', epoch: 2, live: true });
    });

    test('a holder that stalls past its expiry and then writes gets LeaseLost and writes nothing', async () => {
      const id = exec();
      const la = await a.acquireLease(id, { holder: 'A', ttlMs: 200 });
      const first = await a.put(input(id), { lease: la });
      await untilExpired(b, id);
      const lb = await b.acquireLease(id, { holder: 'B', ttlMs: 60_000 });
      expect(lb.epoch).toBe(2);
      let err: unknown;
      await a.put(input(id, { nodeId: 'turn:1', turn: 1 }), { lease: la }).catch((e) => (err = e));
      expect(hasCode(err, 'LEASE_LOST')).toBe(true);
      expect((err as { details: unknown }).details).toMatchObject({
        executionId: id,
        epoch: 1,
        current: { holder: 'B', epoch: 2 },
      });
      await expectCode(a.recordInterrupt(pauseRow(id), { reason: 'r', context: null }, { lease: la }), 'LEASE_LOST');
      await expectCode(a.put(marker(id, 'completed'), { lease: la }), 'LEASE_LOST');
      await expectCode(a.renewLease(la), 'LEASE_LOST');
      expect((await b.list(id)).map((r) => r.id)).toEqual([first.id]);
      expect(await b.getPendingInterrupt(id)).toBeNull();
      // the new holder writes on
      const next = await b.put(input(id, { nodeId: 'turn:1', turn: 1 }), { lease: lb });
      expect(next.seq).toBe(1);
      expect(await a.getLease(id)).toMatchObject({ holder: 'B', epoch: 2, live: true });
    });

    test("putIdempotent with a lease: a taken-over holder still records what its effect did while its row is the run's, then learns it lost the run (LeaseLost); the next holder finds it; a run deleted, or deleted and started again under its id, keeps nothing of it", async () => {
      const id = exec();
      const la = await a.acquireLease(id, { holder: 'A', ttlMs: 200 });
      const mine = await a.put(input(id), { lease: la });
      await untilExpired(b, id);
      const lb = await b.acquireLease(id, { holder: 'B', ttlMs: 60_000 });
      // A's effect ran: refusing its record would let B run it again
      await expectCode(a.putIdempotent(id, 'charge', { by: 'A' }, { lease: la, anchorId: mine.id }), 'LEASE_LOST');
      expect(await b.getIdempotent(id, 'charge')).toEqual({ hit: true, result: { by: 'A' } });
      expect((await b.putIdempotent(id, 'charge', { by: 'B' }, { lease: lb })).result).toEqual({ by: 'A' });
      // without the row it holds the run by, a lost lease records nothing (it cannot tell the run from a new one)
      await expectCode(a.putIdempotent(id, 'unanchored', { by: 'A' }, { lease: la }), 'LEASE_LOST');
      expect(await b.getIdempotent(id, 'unanchored')).toEqual({ hit: false });
      // a run deleted while its holder's effect ran: the record would outlive the run
      const rowB = await b.put(input(id, { nodeId: 'turn:1', turn: 1 }), { lease: lb });
      await b.deleteExecution(id);
      await expectCode(b.putIdempotent(id, 'late', { by: 'B' }, { lease: lb, anchorId: rowB.id }), 'LEASE_LOST');
      expect(await a.listIdempotent(id)).toEqual([]);
      // ... and started again under its id: a new run's lease row is there, but B's row is not: the new run must not find B's record
      const lc = await a.acquireLease(id, { holder: 'C', ttlMs: 60_000 });
      await a.put(input(id), { lease: lc });
      await expectCode(b.putIdempotent(id, 'charge', { by: 'B' }, { lease: lb, anchorId: rowB.id }), 'LEASE_LOST');
      expect(await a.getIdempotent(id, 'charge')).toEqual({ hit: false });
    });

    test('a stale lease cannot claim a pause: LeaseLost, the pause stays open', async () => {
      const id = exec();
      const la = await a.acquireLease(id, { holder: 'A', ttlMs: 60_000 });
      await a.releaseLease(la);
      const lb = await b.acquireLease(id, { holder: 'B', ttlMs: 60_000 });
      const { pending } = await b.recordInterrupt(pauseRow(id), { reason: 'r', context: null }, { lease: lb });
      await expectCode(
        a.claimInterrupt(pending, { next: input(id, { nodeId: 'x', step: 'tool_call' }), lease: la }),
        'LEASE_LOST',
      );
      expect(await b.getPendingInterrupt(id)).toEqual(pending);
      expect((await b.list(id)).length).toBe(1);
    });

    test('a fenced write renews the lease once a third of its ttl has passed since this store last did, and only checks it before', async () => {
      const id = exec();
      // the two writes and the read between them fit in a third of it (2 s) on a busy machine
      const ttlMs = 6_000;
      const lease = await a.acquireLease(id, { holder: 'A', ttlMs });
      await a.put(input(id), { lease });
      const first = Date.parse((await a.getLease(id))!.expiresAt!);
      await a.put(input(id, { nodeId: 'turn:1', turn: 1 }), { lease });
      // within a third of the ttl since the last renewal: the expiry stands (the write checked holder and epoch)
      expect(Date.parse((await a.getLease(id))!.expiresAt!)).toBe(first);
      await sleep(ttlMs / 3 + 100);
      await a.put(input(id, { nodeId: 'turn:2', turn: 2 }), { lease });
      expect(Date.parse((await a.getLease(id))!.expiresAt!)).toBeGreaterThanOrEqual(first + ttlMs / 3 + 100);
      // a check without renewal still fences: the lease released and taken by another holder, the next write is refused
      await a.releaseLease(lease);
      await b.acquireLease(id, { holder: 'B', ttlMs: 60_000 });
      await expectCode(a.put(input(id, { nodeId: 'turn:3', turn: 3 }), { lease }), 'LEASE_LOST');
      expect((await a.list(id)).length).toBe(3);
    });

    test('a holder that keeps writing with its lease is never taken over', async () => {
      const id = exec();
      // runs for 2.5 ttl; each round (a put and a refused acquisition) only needs to finish within one ttl
      const la = await a.acquireLease(id, { holder: 'A', ttlMs: 1_000 });
      const until = Date.now() + 2_500;
      let i = 0;
      while (Date.now() < until) {
        await a.put(input(id, { nodeId: `turn:${i}`, turn: i }), { lease: la });
        i++;
        await expectCode(b.acquireLease(id, { holder: 'B', ttlMs: 60_000 }), 'RUN_IN_PROGRESS');
        await sleep(50);
      }
      const renewed = await a.renewLease(la);
      expect(renewed.epoch).toBe(1);
      expect(Date.parse(renewed.expiresAt)).toBeGreaterThan(Date.parse(la.expiresAt));
    });

    test('the run-end marker and a recorded pause release the lease in their own transaction', async () => {
      const done = exec();
      const l1 = await a.acquireLease(done, { holder: 'A', ttlMs: 60_000 });
      await a.put(input(done), { lease: l1 });
      await a.put(marker(done, 'completed'), { lease: l1 });
      expect(await b.getLease(done)).toMatchObject({ holder: null, live: false, epoch: 1 });
      const paused = exec();
      const l2 = await a.acquireLease(paused, { holder: 'A', ttlMs: 60_000 });
      await a.recordInterrupt(pauseRow(paused), { reason: 'r', context: null }, { lease: l2 });
      expect(await b.getLease(paused)).toMatchObject({ holder: null, live: false });
    });

    test('claimInterrupt with a lease request takes the lease with the claim; a live lease refuses both', async () => {
      const id = exec();
      const { pending } = await a.recordInterrupt(pauseRow(id), { reason: 'r', context: null });
      const held = await b.acquireLease(id, { holder: 'B', ttlMs: 60_000 });
      await expectCode(a.claimInterrupt(pending, { lease: { holder: 'A', ttlMs: 60_000 } }), 'RUN_IN_PROGRESS');
      expect(await a.getPendingInterrupt(id)).toEqual(pending);
      await b.releaseLease(held);
      const claim = await a.claimInterrupt(pending, {
        next: input(id, { nodeId: 'turn:0/tool:refund', step: 'tool_call', agentPath: 'agent:test/tool:refund' }),
        lease: { holder: 'A', ttlMs: 60_000 },
      });
      expect(claim?.lease).toMatchObject({ executionId: id, holder: 'A', epoch: 2 });
      expect(await b.getLease(id)).toMatchObject({ holder: 'A', epoch: 2, live: true });
      await a.put(input(id, { nodeId: 'turn:1', turn: 1 }), { lease: claim!.lease! });
    });

    test('of many concurrent acquisitions from two handles exactly one wins', async () => {
      const id = exec();
      const tries = Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? a : b).acquireLease(id, { holder: `H${i}`, ttlMs: 60_000 }).then(
          (l) => ({ ok: true as const, l }),
          (e: unknown) => ({ ok: false as const, code: (e as { code?: string }).code }),
        ),
      );
      const out = await Promise.all(tries);
      expect(out.filter((o) => o.ok)).toHaveLength(1);
      expect(out.filter((o) => !o.ok).map((o) => (o as { code?: string }).code)).toEqual(
        Array(11).fill('RUN_IN_PROGRESS'),
      );
      expect((out.find((o) => o.ok) as { l: Lease }).l.epoch).toBe(1);
    });

    test('a bad lease is refused naming every problem, and nothing is written', async () => {
      const id = exec();
      let err: unknown;
      await a.acquireLease(id, { holder: '', ttlMs: -1 }).catch((e) => (err = e));
      expect(hasCode(err, 'INVALID_LEASE')).toBe(true);
      expect((err as { details: { problems: string[] } }).details.problems).toHaveLength(2);
      const wrong: Lease = {
        executionId: 'other',
        holder: 'A',
        ttlMs: 1000,
        epoch: 0,
        expiresAt: new Date().toISOString(),
      };
      err = undefined;
      await a.put(input(id), { lease: wrong }).catch((e) => (err = e));
      expect(hasCode(err, 'INVALID_LEASE')).toBe(true);
      expect((err as { details: { problems: string[] } }).details.problems).toHaveLength(2);
      expect(await a.latest(id)).toBeNull();
      expect(await a.getLease(id)).toBeNull();
    });

    test('listExecutions filters by state and shows each run its lease (holder, expiry, live)', async () => {
      const run = `a-${exec()}`;
      const stale = `b-${exec()}`;
      const paused = `c-${exec()}`;
      const done = `d-${exec()}`;
      const l1 = await a.acquireLease(run, { holder: 'A', ttlMs: 60_000 });
      await a.put(input(run), { lease: l1 });
      const l2 = await a.acquireLease(stale, { holder: 'gone', ttlMs: 100 });
      await a.put(input(stale), { lease: l2 });
      await a.recordInterrupt(pauseRow(paused), { reason: 'r', context: null });
      await a.put(marker(done, 'completed'));
      await untilExpired(b, stale);
      const running = await b.listExecutions({ state: 'running' });
      expect(running.map((e) => e.executionId)).toEqual([run, stale]);
      expect(running[0].lease).toMatchObject({ holder: 'A', epoch: 1, live: true });
      expect(running[1].lease).toMatchObject({ holder: 'gone', epoch: 1, live: false });
      expect((await b.listExecutions({ state: 'paused' })).map((e) => e.executionId)).toEqual([paused]);
      expect((await b.listExecutions({ state: 'completed' })).map((e) => e.executionId)).toEqual([done]);
      expect((await b.listExecutions({ state: 'completed' }))[0].lease).toBeNull();
      expect(await b.listExecutions({ state: 'failed' })).toEqual([]);
      expect(
        (await b.listExecutions({ state: 'running', afterExecutionId: run, limit: 1 })).map((e) => e.executionId),
      ).toEqual([stale]);
    });
  });
}
