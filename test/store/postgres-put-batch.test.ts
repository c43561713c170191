/**
 * The Postgres store's group commit (client/postgres/put-batch.ts): puts on a
 * cached cursor that concurrent runs issue while one is on its way go
 * together, one statement and one commit; each put is still judged alone (its
 * execution at the cached row, its lease its writer's, its id new), and one
 * refused put never fails or loses the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { expectCode, input } from '../../client/testing/store/harness.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const ready = await pgReady('store: puts of concurrent runs in one statement');

describe.skipIf(!ready)('Postgres puts of concurrent runs, grouped', () => {
  let db: TestDatabase;
  let store: PostgresCheckpointer;
  let other: PostgresCheckpointer;
  let n = 0;
  const exec = () => `batch-${++n}`;
  const turn = (id: string, t: number, over = {}) =>
    input(id, {
      nodeId: `turn:${t}`,
      turn: t,
      state: { messages: [{ role: 'user', content: `m${t}` }], turn: t },
      ...over,
    });

  beforeAll(async () => {
    db = await createTestDatabase('waymark_put_batch');
    store = new PostgresCheckpointer({ url: db.url });
    other = new PostgresCheckpointer({ url: db.url });
    await store.setup();
  });
  afterAll(async () => {
    await store?.close();
    await other?.close();
    await db?.drop();
  });

  /** Runs started by this store (their first rows on the locked path), so their cursors are cached here. */
  async function started(count: number): Promise<string[]> {
    const ids = Array.from({ length: count }, exec);
    await Promise.all(ids.map((id) => store.put(turn(id, 0, { prevId: null }))));
    return ids;
  }

  it('32 runs putting at once share statements; every row is stored once at its seq, with one outbox event', async () => {
    const ids = await started(32);
    const before = store.groupCommitStats;
    for (let t = 1; t <= 5; t++) await Promise.all(ids.map((id) => store.put(turn(id, t))));
    const after = store.groupCommitStats;
    expect(after.writes - before.writes).toBe(32 * 5);
    expect(after.batches - before.batches, 'statements sent for 160 puts').toBeLessThan(160);
    expect(after.largest).toBeGreaterThan(1);
    for (const id of ids) {
      const rows = await store.list(id);
      expect(rows.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(await other.readState(rows[5])).toEqual({ messages: [{ role: 'user', content: 'm5' }], turn: 5 });
    }
    const events = [];
    for (;;) {
      const page = await store.fetchUnsynced({ limit: 1000, maxBytes: 1e9 });
      if (!page.length) break;
      events.push(...page.map((e) => e.event!));
      await store.markSynced(page.map((e) => e.id));
    }
    for (const id of ids) {
      const seqs = events.flatMap((e) => (e.kind === 'checkpoint' && e.row.executionId === id ? [e.row.seq] : []));
      expect(seqs, `events of ${id}, in outbox order`).toEqual([0, 1, 2, 3, 4, 5]);
    }
  });

  it('a store closed while puts wait to be sent answers each of them first', async () => {
    const closing = new PostgresCheckpointer({ url: db.url });
    const ids = Array.from({ length: 6 }, exec);
    await Promise.all(ids.map((id) => closing.put(turn(id, 0, { prevId: null }))));
    // issued, not awaited: the first is on its way, the others wait for it
    const puts = Promise.allSettled(ids.map((id) => closing.put(turn(id, 1))));
    await closing.close();
    const settled = await puts;
    expect(settled.map((r) => r.status)).toEqual(ids.map(() => 'fulfilled'));
    for (const id of ids) expect((await store.list(id)).map((r) => r.seq)).toEqual([0, 1]);
  });

  it('a put of a batch with an id already stored fails alone with DUPLICATE_ID; the others land', async () => {
    const [a, b, c] = await started(3);
    const taken = (await store.latest(a))!.id;
    const before = store.groupCommitStats;
    // the first goes alone; the two issued while it is on its way go together
    const [ra, rb, rc] = await Promise.allSettled([
      store.put(turn(a, 1)),
      store.put(turn(b, 1, { id: taken })),
      store.put(turn(c, 1)),
    ]);
    expect(store.groupCommitStats.largest).toBeGreaterThanOrEqual(2);
    expect(store.groupCommitStats.writes - before.writes).toBe(3);
    expect(ra.status).toBe('fulfilled');
    expect(rc.status).toBe('fulfilled');
    await expectCode(rb.status === 'rejected' ? Promise.reject(rb.reason) : Promise.resolve(), 'DUPLICATE_ID');
    expect((await store.list(b)).map((r) => r.seq)).toEqual([0]);
    expect((await store.list(c)).map((r) => r.seq)).toEqual([0, 1]);
    // the refused run goes on
    expect((await store.put(turn(b, 1))).seq).toBe(1);
  });

  it('in one batch: a put whose lease another holder took fails LEASE_LOST alone; one whose cursor went stale follows the newer row', async () => {
    const [lead, held, lost, stale] = await started(4);
    const heldLease = await store.acquireLease(held, { holder: 'A', ttlMs: 60_000 });
    const lostLease = await store.acquireLease(lost, { holder: 'A', ttlMs: 60_000 });
    // taken over: released here, acquired by another store (epoch 2); this store's renewal record still names epoch 1
    await store.releaseLease(lostLease);
    await other.acquireLease(lost, { holder: 'B', ttlMs: 60_000 });
    // another store wrote the stale run's next row: this store's cursor is one row behind
    const newer = await other.put(turn(stale, 1));
    const before = store.groupCommitStats;
    const [rLead, rHeld, rLost, rStale] = await Promise.allSettled([
      store.put(turn(lead, 1)),
      store.put(turn(held, 1), { lease: heldLease }),
      store.put(turn(lost, 1), { lease: lostLease }),
      store.put(turn(stale, 2)),
    ]);
    expect(store.groupCommitStats.writes - before.writes).toBe(4);
    expect(store.groupCommitStats.largest).toBeGreaterThanOrEqual(3);
    expect([rLead.status, rHeld.status, rStale.status]).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    await expectCode(rLost.status === 'rejected' ? Promise.reject(rLost.reason) : Promise.resolve(), 'LEASE_LOST');
    expect((await store.list(lost)).map((r) => r.seq)).toEqual([0]);
    expect((await store.list(held)).map((r) => r.seq)).toEqual([0, 1]);
    const staleRows = await store.list(stale);
    expect(staleRows.map((r) => [r.seq, r.id])).toEqual([
      [0, staleRows[0].id],
      [1, newer.id],
      [2, (rStale as PromiseFulfilledResult<{ id: string }>).value.id],
    ]);
    expect(await store.readState(staleRows[2])).toEqual({ messages: [{ role: 'user', content: 'm2' }], turn: 2 });
  });
});
