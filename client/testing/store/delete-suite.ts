/**
 * The store contract's conformance suite, part: deletion: prune, deleteExecution, and writes into a deleted or pruned execution (EXECUTION_GONE, EXECUTION_EXISTS).
 * Run per backend by runStoreSuite (suite.ts), under the same describe title.
 */
import { describe, expect } from 'vitest';
import type { Checkpointer } from '../../checkpointer.js';
import {
  contractTest,
  exec,
  expectCode,
  input,
  marker,
  pauseRow,
  withStore,
  type StoreHarness,
  type StoreSuiteOptions,
} from './harness.js';

export function runDeleteSuite(options: StoreSuiteOptions): void {
  const test = contractTest(options);

  describe(`store contract: ${options.name}`, () => {
    let h: StoreHarness;
    let store: Checkpointer;
    withStore(options, (s) => ({ h, store } = s));

    test('prune deletes old finished runs and never a paused or unfinished run', async () => {
      const old = new Date(Date.now() - 3600_000).toISOString();
      const done = exec();
      const failed = exec();
      const paused = exec();
      const running = exec();
      const recent = exec();
      for (const e of [done, failed, paused, running, recent]) {
        await store.put(input(e, { createdAt: old }));
        await store.putIdempotent(e, 'charge', { ok: true });
      }
      await store.put(marker(done, 'completed', old));
      await store.put(marker(failed, 'failed', old));
      await store.recordInterrupt({ ...pauseRow(paused), createdAt: old }, { reason: 'r', context: null });
      await store.put(marker(recent, 'completed'));

      const kept = await store.prune({ olderThan: new Date(Date.now() - 60_000) });
      expect(kept).toMatchObject({ executions: 0, keptUnsynced: 2 });

      const synced = (await store.fetchUnsynced({ limit: 10_000, maxBytes: 1e9 })).map((e) => e.id);
      await store.markSynced(synced);
      const res = await store.prune({ olderThan: new Date(Date.now() - 60_000) });
      expect(res).toEqual({ executions: 2, checkpoints: 4, idempotency: 2, keptUnsynced: 0 });
      expect(await store.list(done)).toEqual([]);
      expect(await store.list(failed)).toEqual([]);
      expect((await store.list(paused)).length).toBe(2);
      expect(await store.getPendingInterrupt(paused)).not.toBeNull();
      expect(await store.getIdempotent(paused, 'charge')).toEqual({ hit: true, result: { ok: true } });
      expect((await store.list(running)).length).toBe(1);
      expect(await store.getIdempotent(running, 'charge')).toMatchObject({ hit: true });
      expect((await store.list(recent)).length).toBe(2);
    });

    test('prune with includeUnsynced also drops finished runs the plane has not acked', async () => {
      const old = new Date(Date.now() - 3600_000).toISOString();
      const done = exec();
      await store.put(input(done, { createdAt: old }));
      await store.put(marker(done, 'completed', old));
      const res = await store.prune({ olderThan: new Date(), includeUnsynced: true });
      expect(res.executions).toBe(1);
      expect((await store.outboxStats()).pendingCount).toBe(0);
    });

    /** Run a (two rows, its pause, an idempotency entry) and run b (one row, an entry), every event unsent. */
    const twoRuns = async () => {
      const a = exec();
      const b = exec();
      await store.put(input(a));
      await store.recordInterrupt(pauseRow(a), { reason: 'r', context: null });
      await store.putIdempotent(a, 'k', 1);
      await store.put(input(b));
      await store.putIdempotent(b, 'k', 2);
      return { a, b };
    };
    const unsentOf = async (a: string) =>
      (await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map(
        (e) => `${e.kind}:${e.executionId === a ? 'a' : 'b'}`,
      );

    test('deleteExecution touches only its execution and queues the deletion', async () => {
      const { a, b } = await twoRuns();
      const res = await store.deleteExecution(a);
      expect(res).toEqual({ checkpoints: 2, pending: 1, idempotency: 1 });
      expect(await store.list(a)).toEqual([]);
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect((await store.list(b)).length).toBe(1);
      expect(await store.getIdempotent(b, 'k')).toEqual({ hit: true, result: 2 });
      expect(await unsentOf(a)).toEqual(['checkpoint:b', 'idempotency:b', 'execution_deleted:a']);
      expect((await store.put(input(a))).seq).toBe(0);
    });

    test("deleteExecution with localOnly removes this store's copy and queues nothing for the plane: its unsent events go with it, the deletion is not sent", async () => {
      const { a } = await twoRuns();
      const res = await store.deleteExecution(a, { localOnly: true });
      expect(res).toEqual({ checkpoints: 2, pending: 1, idempotency: 1 });
      expect(await store.list(a)).toEqual([]);
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect(await store.listIdempotent(a)).toEqual([]);
      expect(await unsentOf(a)).toEqual(['checkpoint:b', 'idempotency:b']);
      // the same call without localOnly on a run with rows does queue its deletion
      await store.put(input(a));
      await store.deleteExecution(a);
      expect(await unsentOf(a)).toEqual(['checkpoint:b', 'idempotency:b', 'execution_deleted:a']);
      // and a local-only delete after it keeps that deletion queued: the plane still hears of it
      await store.put(input(a));
      await store.deleteExecution(a, { localOnly: true });
      expect(await unsentOf(a)).toEqual(['checkpoint:b', 'idempotency:b', 'execution_deleted:a']);
    });

    test('a write into a deleted execution defect: a put naming a row that another handle deleted is refused with EXECUTION_GONE, never started again at seq 0', async () => {
      const a = exec();
      const r0 = await store.put(input(a, { prevId: null }));
      const r1 = await store.put(input(a, { prevId: r0.id, turn: 1 }));
      const other = await h.reopen();
      try {
        await other.deleteExecution(a);
      } finally {
        await other.close();
      }
      const outbox = (await store.outboxStats()).pendingCount;
      // the writer's cached cursor still names r1: the write must not follow it into an empty execution
      await expectCode(store.put(input(a, { prevId: r1.id, turn: 2 })), 'EXECUTION_GONE');
      await expectCode(
        store.recordInterrupt({ ...pauseRow(a), prevId: r1.id }, { reason: 'r', context: null }),
        'EXECUTION_GONE',
      );
      expect(await store.list(a)).toEqual([]);
      expect(await store.getPendingInterrupt(a)).toBeNull();
      expect((await store.listExecutions()).map((e) => e.executionId)).not.toContain(a);
      expect((await store.outboxStats()).pendingCount).toBe(outbox);
      // a fresh run under the same id is still allowed, and says so
      expect((await store.put(input(a, { prevId: null }))).seq).toBe(0);
    });

    test('a write into a pruned execution defect: a put naming the pruned run-end marker is refused with EXECUTION_GONE', async () => {
      const a = exec();
      const r0 = await store.put(input(a));
      const end = await store.put({ ...marker(a, 'failed', '2020-01-01T00:00:00.000Z'), prevId: r0.id });
      expect(
        (await store.prune({ olderThan: new Date('2021-01-01T00:00:00.000Z'), includeUnsynced: true })).executions,
      ).toBe(1);
      await expectCode(store.put(input(a, { prevId: end.id, turn: 1 })), 'EXECUTION_GONE');
      expect(await store.list(a)).toEqual([]);
    });

    test("prevId: null refuses an execution that has rows (EXECUTION_EXISTS); an older row that still exists, on any handle, is accepted; another execution's row is gone", async () => {
      const a = exec();
      const r0 = await store.put(input(a));
      const r1 = await store.put(input(a, { turn: 1 }));
      await expectCode(store.put(input(a, { prevId: null })), 'EXECUTION_EXISTS');
      expect((await store.list(a)).length).toBe(2);
      // a supervisor names its own tool row while a worker wrote after it: still there, so accepted
      expect((await store.put(input(a, { prevId: r0.id, turn: 2 }))).seq).toBe(2);
      const other = await h.reopen();
      try {
        expect((await other.put(input(a, { prevId: r1.id, turn: 3 }))).seq).toBe(3);
        expect((await store.put(input(a, { prevId: r1.id, turn: 4 }))).seq).toBe(4);
        const b = exec();
        const b0 = await other.put(input(b));
        await expectCode(store.put(input(a, { prevId: b0.id, turn: 5 })), 'EXECUTION_GONE');
        expect((await store.list(a)).length).toBe(5);
      } finally {
        await other.close();
      }
    });
  });
}
