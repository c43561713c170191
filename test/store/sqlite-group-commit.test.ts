/**
 * The SQLite group commit (client/store/group-commit.ts): puts and lease
 * acquisitions issued in one turn share one transaction; a lone put is not
 * delayed; every other call settles the queue first, so calls apply in the
 * order they were made.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { input, pauseRow } from '../../client/testing/store/suite.js';
import type { FaultPoint } from '../../client/faults.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-sqlite-gc-');
afterAll(() => tmp.cleanup());
let n = 0;
let store: SqliteCheckpointer;
let failAt: FaultPoint | null = null;

beforeEach(() => {
  failAt = null;
  store = new SqliteCheckpointer({
    path: tmp.file(`g${++n}.db`),
    faults: (p) => {
      if (p === failAt) {
        failAt = null;
        throw new Error(`injected fault at ${p}`);
      }
    },
  });
});
afterEach(() => store.close());

describe('SQLite group commit', () => {
  it('puts of 16 runs issued in one turn share one commit; the next turn of each run joins the next one', async () => {
    const runs = Array.from({ length: 16 }, (_, i) => `run-${i}`);
    const first = await Promise.all(runs.map((id) => store.put(input(id))));
    expect(store.groupCommitStats).toEqual({ batches: 1, writes: 16, largest: 16 });
    await Promise.all(runs.map((id, i) => store.put(input(id, { prevId: first[i].id, nodeId: 'turn:1', turn: 1 }))));
    expect(store.groupCommitStats).toEqual({ batches: 2, writes: 32, largest: 16 });
    for (const id of runs) expect((await store.list(id)).map((r) => r.seq)).toEqual([0, 1]);
  });

  it('a lone put is a batch of one, committed at the end of its turn (no timer)', async () => {
    // no timer, no turn of the event loop: committed before a setImmediate queued with it runs (an order of events,
    // where a time bound would measure the disk and the machine's load)
    let turned = false;
    const immediate = setImmediate(() => (turned = true));
    const row = await store.put(input('lone'));
    clearImmediate(immediate);
    expect(turned, 'the event loop turned before the lone put committed').toBe(false);
    expect(store.groupCommitStats).toEqual({ batches: 1, writes: 1, largest: 1 });
    expect((await store.latest('lone'))?.id).toBe(row.id);
  });

  it('a call made after a put that was not awaited sees it: reads, pauses and deletions apply in call order', async () => {
    const put = store.put(input('a'));
    const latest = await store.latest('a');
    expect(latest?.id).toBe((await put).id);
    const second = store.put(input('a', { nodeId: 'turn:1', turn: 1 }));
    const pause = await store.recordInterrupt(pauseRow('a'), { reason: 'r', context: null });
    expect([(await second).seq, pause.checkpoint.seq]).toEqual([1, 2]);
    const third = store.put(input('b'));
    expect((await store.deleteExecution('b')).checkpoints).toBe(1);
    expect((await third).seq).toBe(0);
  });

  it('close() commits the puts queued before it', async () => {
    const put = store.put(input('c'));
    await store.close();
    const row = await put;
    const again = new SqliteCheckpointer({ path: store.path });
    try {
      expect((await again.latest('c'))?.id).toBe(row.id);
    } finally {
      await again.close();
    }
  });

  it('a failure of the shared transaction fails every put of the batch and commits none; the store stays writable', async () => {
    failAt = 'store.groupCommit.beforeCommit';
    const settled = await Promise.allSettled(['x', 'y', 'z'].map((id) => store.put(input(id))));
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const id of ['x', 'y', 'z']) expect(await store.latest(id)).toBeNull();
    expect((await store.outboxStats()).pendingCount).toBe(0);
    expect((await Promise.all(['x', 'y'].map((id) => store.put(input(id))))).map((r) => r.seq)).toEqual([0, 0]);
  });

  it('runs started together take their leases in one commit with the puts of that tick; a lease held fails only its own acquisition', async () => {
    const request = (holder: string) => ({ holder, ttlMs: 30_000 });
    const settled = await Promise.allSettled([
      store.acquireLease('l1', request('h1')),
      store.acquireLease('l2', request('h2')),
      // the same execution twice in one batch: the second sees the first's savepoint and is refused
      store.acquireLease('l1', request('h3')),
      store.put(input('l3')),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(store.groupCommitStats).toEqual({ batches: 1, writes: 4, largest: 4 });
    expect((settled[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'RUN_IN_PROGRESS' });
    expect(await store.getLease('l1')).toMatchObject({ holder: 'h1', epoch: 1, live: true });
    expect(await store.getLease('l2')).toMatchObject({ holder: 'h2', epoch: 1, live: true });
    // the lease is durable once the acquisition resolved: a second connection sees it
    const other = new SqliteCheckpointer({ path: store.path });
    try {
      await expect(other.acquireLease('l2', request('h4'))).rejects.toMatchObject({ code: 'RUN_IN_PROGRESS' });
    } finally {
      await other.close();
    }
  });

  it('a failure of the shared transaction fails the lease acquisitions queued in it too, and takes none', async () => {
    failAt = 'store.groupCommit.beforeCommit';
    const settled = await Promise.allSettled([
      store.acquireLease('f1', { holder: 'h', ttlMs: 30_000 }),
      store.put(input('f2')),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect(await store.getLease('f1')).toBeNull();
    expect((await store.acquireLease('f1', { holder: 'h', ttlMs: 30_000 })).epoch).toBe(1);
  });

  it('an after-commit failure of one put fails that put alone; the batch is committed', async () => {
    failAt = 'store.put.afterCommit';
    const settled = await Promise.allSettled(['p', 'q'].map((id) => store.put(input(id))));
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'fulfilled']);
    expect((await store.list('p')).length).toBe(1);
    expect((await store.list('q')).length).toBe(1);
  });
});

describe('SQLite group commit under fake timers', () => {
  it("an application's fake timers do not hold a put back", async () => {
    vi.useFakeTimers();
    try {
      const row = await store.put(input('faked'));
      expect(row.seq).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
