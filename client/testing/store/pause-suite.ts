/**
 * The store contract's conformance suite, part: pauses (recordInterrupt, claimInterrupt, listPendingInterrupts) and idempotency entries.
 * Run per backend by runStoreSuite (suite.ts), under the same describe title.
 */
import { beforeEach, describe, expect } from 'vitest';
import type { Checkpointer } from '../../checkpointer.js';
import type { FaultHook } from '../../faults.js';
import { codePointOrder } from '../../../shared/text.js';
import {
  contractTest,
  exec,
  expectCode,
  input,
  pauseRow,
  withStore,
  type StoreHarness,
  type StoreSuiteOptions,
} from './harness.js';

export function runPauseSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}`, () => {
    let h: StoreHarness;
    let store: Checkpointer;
    let faultPoint: string | null = null;
    const faults: FaultHook = (p) => {
      if (p === faultPoint) throw new Error(`injected fault at ${p}`);
    };
    beforeEach(() => {
      faultPoint = null;
    });
    withStore(options, (s) => ({ h, store } = s), faults);

    test('recordInterrupt writes the checkpoint and the pending row together', async () => {
      const a = exec();
      await store.put(input(a));
      const { checkpoint, pending } = await store.recordInterrupt(pauseRow(a), {
        reason: 'manager_approval',
        context: { order: '1042', amount: 50000 },
      });
      expect(checkpoint.status).toBe('interrupted');
      expect(pending).toMatchObject({ executionId: a, checkpointId: checkpoint.id, reason: 'manager_approval' });
      expect(await store.getPendingInterrupt(a)).toEqual(pending);
      expect((await store.latest(a))?.id).toBe(checkpoint.id);
    });

    test('recordInterrupt writes neither row when it fails between them', async () => {
      const a = exec();
      const first = await store.put(input(a));
      faultPoint = 'store.recordInterrupt.betweenRows';
      await expect(store.recordInterrupt(pauseRow(a), { reason: 'r', context: null })).rejects.toThrow(
        /injected fault/,
      );
      faultPoint = null;
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect((await store.latest(a))?.id).toBe(first.id);
      expect((await store.list(a)).length).toBe(1);
      const stats = await store.outboxStats();
      expect(stats.pendingCount).toBe(1);
      // the execution stays writable with a gap-free seq
      expect((await store.put(input(a))).seq).toBe(1);
    });

    test('a second open pause fails with PAUSE_EXISTS and writes nothing', async () => {
      const a = exec();
      await store.recordInterrupt(pauseRow(a), { reason: 'first', context: null });
      const before = await store.list(a);
      await expectCode(store.recordInterrupt(pauseRow(a), { reason: 'second', context: null }), 'PAUSE_EXISTS');
      expect(await store.list(a)).toEqual(before);
      expect((await store.getPendingInterrupt(a))?.reason).toBe('first');
    });

    test('claimInterrupt returns the pending row once, then null; `next` commits with the claim', async () => {
      const a = exec();
      const { pending } = await store.recordInterrupt(pauseRow(a), { reason: 'r', context: { k: 1 } });
      const next = input(a, {
        nodeId: 'turn:0/tool:refund',
        step: 'tool_call',
        state: { messages: [], resumes: [true] },
      });
      const claim = await store.claimInterrupt(pending, { next });
      expect(claim?.pending).toEqual(pending);
      expect(claim?.checkpoint?.seq).toBe(1);
      expect(await store.claimInterrupt(pending)).toBeNull();
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect(await store.claimInterrupt({ executionId: exec(), checkpointId: pending.checkpointId })).toBeNull();
    });

    test('stale resumer defect: a claim of a pause that was answered meanwhile returns null and leaves the later pause open', async () => {
      const a = exec();
      const { pending: p1 } = await store.recordInterrupt(pauseRow(a), { reason: 'deploy to prod?', context: null });
      // resumer B answers P1 (on another handle) and the run reaches P2
      const other = await h.reopen();
      try {
        const b = await other.claimInterrupt(p1, {
          next: input(a, { nodeId: 'turn:0/tool:refund', step: 'tool_call', state: { messages: [], resumes: [true] } }),
        });
        expect(b?.pending.checkpointId).toBe(p1.checkpointId);
        const { pending: p2 } = await other.recordInterrupt(pauseRow(a), {
          reason: 'drop the database?',
          context: null,
        });
        const before = await store.list(a);
        const outbox = (await store.outboxStats()).pendingCount;
        // resumer A read P1 before all that; its claim names P1 and must not take P2
        const stale = await store.claimInterrupt(p1, {
          next: input(a, {
            nodeId: 'turn:0/tool:refund',
            step: 'tool_call',
            state: { messages: [], resumes: [false] },
          }),
        });
        expect(stale).toBeNull();
        expect(await store.getPendingInterrupt(a)).toEqual(p2);
        expect(await store.list(a)).toEqual(before);
        expect((await store.outboxStats()).pendingCount).toBe(outbox);
        // P2 is still claimable by its own name
        expect((await store.claimInterrupt(p2))?.pending).toEqual(p2);
      } finally {
        await other.close();
      }
    });

    test('listPendingInterrupts pages by execution id', async () => {
      const ids = ['p-a', 'p-b', 'p-c', 'p-d', 'p-e'].map((x) => `${x}-${exec()}`);
      for (const id of ids) await store.recordInterrupt(pauseRow(id), { reason: 'r', context: null });
      const p1 = await store.listPendingInterrupts({ limit: 2 });
      const p2 = await store.listPendingInterrupts({ afterExecutionId: p1[1].executionId, limit: 2 });
      const p3 = await store.listPendingInterrupts({ afterExecutionId: p2[1].executionId, limit: 2 });
      expect([...p1, ...p2, ...p3].map((p) => p.executionId)).toEqual([...ids].sort());
    });

    test('listExecutions and listPendingInterrupts page in the byte order of execution ids, whatever the database orders text by (case, accents): every run once', async () => {
      // a locale's collation orders these apart from their bytes ('a' < 'B' < 'e-' < 'é' < 'Order-0' < 'order-1'…);
      // a page that sorts by bytes but continues after its cursor by the locale's order skips runs for good
      const base = exec();
      const ids = ['Order-0', 'order-1', 'Order-2', 'a', 'B', 'é', 'e-', 'Z', 'z'].map((v) => `${base}/${v}`);
      for (const id of ids) await store.recordInterrupt(pauseRow(id), { reason: 'r', context: null });
      const walk = async <T extends { executionId: string }>(page: (after: string) => Promise<T[]>) => {
        const seen: string[] = [];
        for (let after = `${base}/`; ; ) {
          const items = await page(after);
          const ours = items.filter((x) => x.executionId.startsWith(`${base}/`));
          seen.push(...ours.map((x) => x.executionId));
          if (ours.length < items.length || items.length < 2) return seen;
          after = items[items.length - 1].executionId;
        }
      };
      const bytes = [...ids].sort(codePointOrder);
      expect(await walk((after) => store.listExecutions({ afterExecutionId: after, limit: 2 }))).toEqual(bytes);
      expect(
        await walk((after) => store.listExecutions({ afterExecutionId: after, limit: 2, state: 'paused' })),
      ).toEqual(bytes);
      expect(await walk((after) => store.listPendingInterrupts({ afterExecutionId: after, limit: 2 }))).toEqual(bytes);
    });

    test('idempotency entries round-trip, a stored null is a hit, the first result wins', async () => {
      const a = exec();
      expect(await store.getIdempotent(a, 'k')).toEqual({ hit: false });
      await store.putIdempotent(a, 'k', null);
      expect(await store.getIdempotent(a, 'k')).toEqual({ hit: true, result: null });
      await store.putIdempotent(a, 'obj', { charge: 'ch_1', amount: 20 });
      const again = await store.putIdempotent(a, 'obj', { charge: 'ch_2' });
      expect(again.result).toEqual({ charge: 'ch_1', amount: 20 });
      expect(await store.getIdempotent(a, 'obj')).toEqual({ hit: true, result: { charge: 'ch_1', amount: 20 } });
      expect(await store.getIdempotent(exec(), 'obj')).toEqual({ hit: false });
      expect((await store.listIdempotent(a)).map((e) => e.key).sort()).toEqual(['k', 'obj']);
    });
  });
}
