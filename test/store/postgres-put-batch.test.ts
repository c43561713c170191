/**
 * The Postgres store's group commit (client/postgres/put-batch.ts): puts on a
 * cached cursor that concurrent runs issue while one is on its way go
 * together, one statement and one commit; each put is still judged alone (its
 * execution at the cached row, its lease its writer's, its id new), and one
 * refused put never fails or loses the others. Each test has a store of its
 * own, so its statistics are its own.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { expectCode, input } from '../../client/testing/store/harness.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { until } from '../helpers/until.js';

const ready = await pgReady('store: puts of concurrent runs in one statement');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!ready)('Postgres puts of concurrent runs, grouped', () => {
  let db: TestDatabase;
  let other: PostgresCheckpointer;
  const stores: PostgresCheckpointer[] = [];
  let n = 0;
  const exec = () => `batch-${++n}`;
  const turn = (id: string, t: number, over = {}) =>
    input(id, {
      nodeId: `turn:${t}`,
      turn: t,
      state: { messages: [{ role: 'user', content: `m${t}` }], turn: t },
      ...over,
    });
  const rejected = (r: PromiseSettledResult<unknown>) =>
    r.status === 'rejected' ? Promise.reject(r.reason) : Promise.resolve(r.value);

  beforeAll(async () => {
    // ordered by ICU en-US, where 'alpha' < 'Beta'; the store locks in byte order, where 'Beta' < 'alpha'
    db = await createTestDatabase('waymark_put_batch', { locale: 'en-US' });
    other = new PostgresCheckpointer({ url: db.url });
    await other.setup();
  });
  afterAll(async () => {
    for (const s of stores) await s.close();
    await other?.close();
    await db?.drop();
  });

  /** A store of the test's own, and `count` runs it started (their first rows on the locked path, their cursors cached). */
  async function started(count: number): Promise<{ store: PostgresCheckpointer; ids: string[] }> {
    const store = new PostgresCheckpointer({ url: db.url });
    stores.push(store);
    const ids = Array.from({ length: count }, exec);
    await Promise.all(ids.map((id) => store.put(turn(id, 0, { prevId: null }))));
    return { store, ids };
  }

  it('32 runs putting at once share statements; every row is stored once at its seq, with one outbox event', async () => {
    const { store, ids } = await started(32);
    for (let t = 1; t <= 5; t++) await Promise.all(ids.map((id) => store.put(turn(id, t))));
    const stats = store.groupCommitStats;
    expect(stats.writes).toBe(32 * 5);
    expect(stats.written, 'every put written on the fast path').toBe(32 * 5);
    expect(stats.batches, 'sends for 160 puts').toBeLessThan(80);
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

  it('a put of a batch with an id already stored fails alone with DUPLICATE_ID; the others land', async () => {
    const { store, ids } = await started(3);
    const [a, b, c] = ids;
    const taken = (await store.latest(a))!.id;
    // the first goes alone; the two issued while it is on its way go together
    const [ra, rb, rc] = await Promise.allSettled([
      store.put(turn(a, 1)),
      store.put(turn(b, 1, { id: taken })),
      store.put(turn(c, 1)),
    ]);
    expect(store.groupCommitStats).toMatchObject({ batches: 2, writes: 3, largest: 2, written: 2 });
    expect([ra.status, rc.status]).toEqual(['fulfilled', 'fulfilled']);
    await expectCode(rejected(rb), 'DUPLICATE_ID');
    expect((await store.list(b)).map((r) => r.seq)).toEqual([0]);
    expect((await store.list(c)).map((r) => r.seq)).toEqual([0, 1]);
    // the refused run goes on
    expect((await store.put(turn(b, 1))).seq).toBe(1);
  });

  it('in one batch: a lease taken by another holder fails LEASE_LOST alone; a stale cursor follows the newer row; a lease due is renewed', async () => {
    const { store, ids } = await started(5);
    const [lead, held, lost, stale, due] = ids;
    const heldLease = await store.acquireLease(held, { holder: 'A', ttlMs: 60_000 });
    const lostLease = await store.acquireLease(lost, { holder: 'A', ttlMs: 60_000 });
    // taken over: released here, acquired by another store (epoch 2); this store's renewal record still names epoch 1
    await store.releaseLease(lostLease);
    await other.acquireLease(lost, { holder: 'B', ttlMs: 60_000 });
    // another store wrote the stale run's next row: this store's cursor is one row behind
    const newer = await other.put(turn(stale, 1));
    // a lease acquired more than a third of its ttl ago: the put renews it
    const dueLease = await store.acquireLease(due, { holder: 'A', ttlMs: 900 });
    await sleep(400);
    const dueBefore = Date.parse((await store.getLease(due))!.expiresAt!);
    const [rLead, rHeld, rLost, rStale, rDue] = await Promise.allSettled([
      store.put(turn(lead, 1)),
      store.put(turn(held, 1), { lease: heldLease }),
      store.put(turn(lost, 1), { lease: lostLease }),
      store.put(turn(stale, 2)),
      store.put(turn(due, 1), { lease: dueLease }),
    ]);
    // lead alone, then the four together: held and due on the fast path, lost and stale on the locked path
    expect(store.groupCommitStats).toMatchObject({ batches: 2, writes: 5, largest: 4, written: 3 });
    expect([rLead.status, rHeld.status, rStale.status, rDue.status]).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    await expectCode(rejected(rLost), 'LEASE_LOST');
    expect((await store.list(lost)).map((r) => r.seq)).toEqual([0]);
    expect((await store.list(held)).map((r) => r.seq)).toEqual([0, 1]);
    expect(Date.parse((await store.getLease(due))!.expiresAt!)).toBeGreaterThan(dueBefore);
    const staleRows = await store.list(stale);
    expect(staleRows.map((r) => [r.seq, r.id])).toEqual([
      [0, staleRows[0].id],
      [1, newer.id],
      [2, (rStale as PromiseFulfilledResult<{ id: string }>).value.id],
    ]);
    expect(await store.readState(staleRows[2])).toEqual({ messages: [{ role: 'user', content: 'm2' }], turn: 2 });
  });

  it("a batch locks its runs' executions in byte order, whatever the database's collation (as prune and import do)", async () => {
    const store = new PostgresCheckpointer({ url: db.url });
    stores.push(store);
    const [lead, lower, upper] = [exec(), `alpha-${n}`, `Beta-${n}`];
    await Promise.all([lead, lower, upper].map((id) => store.put(turn(id, 0, { prevId: null }))));
    const sql = postgres(db.url, { max: 2, onnotice: () => {}, fetch_types: false });
    try {
      let puts: Promise<{ seq: number }[]> = Promise.resolve([]);
      // another transaction holds 'alpha': a batch in byte order has locked 'Beta' before it waits there
      const taken = await sql.begin(async (h) => {
        await h`SELECT 1 FROM waymark.executions WHERE execution_id = ${lower} FOR UPDATE`;
        puts = Promise.all([store.put(turn(lead, 1)), store.put(turn(lower, 1)), store.put(turn(upper, 1))]);
        await until('the batch waits for the held row', async () => {
          const [w] = await sql<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%json_to_recordset%'`;
          return w.n === 1;
        });
        return h
          .savepoint((s) => s`SELECT 1 FROM waymark.executions WHERE execution_id = ${upper} FOR UPDATE NOWAIT`)
          .then(
            () => false,
            (e: { code?: string }) => e.code === '55P03',
          );
      });
      expect(taken, "'Beta' locked by the waiting batch").toBe(true);
      expect((await puts).map((r) => r.seq)).toEqual([1, 1, 1]);
      expect(store.groupCommitStats).toMatchObject({ batches: 2, largest: 2, written: 3 });
    } finally {
      await sql.end();
    }
  });

  it('a store closed while puts wait answers each of them first: queued, behind its run, on the locked path', async () => {
    const { store, ids } = await started(6);
    const stale = ids[5];
    await other.put(turn(stale, 1));
    // issued, not awaited: the first is on its way, the others wait for it; each run's second put waits for its
    // first; the stale run's put takes the locked path after its batch
    const puts = Promise.allSettled([
      ...ids.slice(0, 5).flatMap((id) => [store.put(turn(id, 1)), store.put(turn(id, 2))]),
      store.put(turn(stale, 2)),
    ]);
    await store.close();
    const settled = await puts;
    expect(settled.filter((r) => r.status === 'rejected')).toEqual([]);
    for (const id of ids) expect((await other.list(id)).map((r) => r.seq)).toEqual([0, 1, 2]);
  });
});
