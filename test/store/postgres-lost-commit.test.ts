/**
 * A Postgres store's write whose answer is lost: a wire proxy cuts the
 * connection after the server committed (the commit landed, the client sees
 * only a lost connection) or before the statement reached it (nothing
 * landed). Either way the write answers as if nothing had happened, and what
 * it wrote is stored once: `commitOnce` asks the write's own `landed` and
 * returns what the lost attempt committed, or the write is tried again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { uuidv7 } from '../../shared/ids.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { PgCutProxy, type Cut } from '../helpers/pg-cut-proxy.js';
import { pause, step } from '../helpers/rows.js';
import { decisionFor } from '../../client/testing/store/decisions.js';

const ready = await pgReady('store: lost commits');

const COMMIT = /^commit$/i;
// the one-statement put of one run or several (putManyOnCursor): its compare-and-set insert, autocommitted
const PUT_ON_CURSOR = /SELECT id FROM c\s*$/;

describe.skipIf(!ready)('a Postgres write whose connection is lost as it commits', () => {
  let db: TestDatabase;
  let proxy: PgCutProxy;
  let store: PostgresCheckpointer;
  let n = 0;
  const exec = () => `lost-${++n}`;

  beforeAll(async () => {
    db = await createTestDatabase('waymark_lost_commit');
    proxy = await new PgCutProxy(db.url).start();
    store = new PostgresCheckpointer({ url: proxy.url, max: 2 });
    await store.setup();
  });
  afterAll(async () => {
    await store?.close();
    await proxy?.stop();
    await db?.drop();
  });

  /** Run `write` with the next statement matching `cut` cut; the cut happened once. */
  async function cutting<T>(cut: Cut, write: () => Promise<T>): Promise<T> {
    const before = proxy.cuts;
    proxy.arm(cut);
    const out = await write();
    expect(proxy.cuts - before).toBe(1);
    return out;
  }

  for (const when of ['after', 'before'] as const) {
    const landed = when === 'after' ? 'landed' : 'did not land';

    it(`a put (locked path) whose commit ${landed} returns its row, stored once`, async () => {
      const id = exec();
      const row = await cutting({ match: COMMIT, when }, () => store.put({ ...step(id, 0), prevId: null }));
      expect(await store.list(id)).toEqual([row]);
    });

    it(`a put on the cached cursor (one statement) whose statement ${landed} returns its row, stored once; the run goes on`, async () => {
      const id = exec();
      const first = await store.put({ ...step(id, 0), prevId: null });
      const row = await cutting({ match: PUT_ON_CURSOR, when }, () => store.put(step(id, 1)));
      expect(row.seq).toBe(1);
      const next = await store.put(step(id, 2));
      expect((await store.list(id)).map((r) => r.id)).toEqual([first.id, row.id, next.id]);
    });

    it(`puts of three runs sent in one statement whose statement ${landed} each return their row, stored once`, async () => {
      const ids = [exec(), exec(), exec()];
      await Promise.all(ids.map((id) => store.put({ ...step(id, 0), prevId: null })));
      const before = store.groupCommitStats;
      // the first put goes alone (let through); the two issued while it is on its way go together, in the statement cut
      const rows = await cutting({ match: PUT_ON_CURSOR, when, skip: 1 }, () =>
        Promise.all(ids.map((id) => store.put(step(id, 1)))),
      );
      expect(store.groupCommitStats.batches - before.batches, 'one alone, then two together').toBe(2);
      expect(store.groupCommitStats.writes - before.writes).toBe(3);
      for (const [k, id] of ids.entries()) {
        const next = await store.put(step(id, 2));
        expect((await store.list(id)).map((r) => [r.seq, r.id]).slice(1)).toEqual([
          [1, rows[k].id],
          [2, next.id],
        ]);
      }
    });

    it(`a lease acquisition whose commit ${landed} returns the lease it holds`, async () => {
      const id = exec();
      const holder = `h-${uuidv7()}`;
      const lease = await cutting({ match: COMMIT, when }, () => store.acquireLease(id, { holder, ttlMs: 60_000 }));
      const stored = await store.getLease(id);
      expect(stored).toMatchObject({ holder, epoch: lease.epoch, live: true });
      expect(lease.expiresAt).toBe(stored?.expiresAt);
    });

    it(`a pause whose commit ${landed} returns its row and pause, stored once`, async () => {
      const id = exec();
      await store.put({ ...step(id, 0), prevId: null });
      const out = await cutting({ match: COMMIT, when }, () =>
        store.recordInterrupt(pause(id, 1), { reason: 'approve', context: null }),
      );
      expect((await store.list(id)).map((r) => r.id).slice(1)).toEqual([out.checkpoint.id]);
      expect(await store.getPendingInterrupt(id)).toEqual(out.pending);
    });

    it(`a claim with its next row and a lease whose commit ${landed} returns the claim, the row and the lease`, async () => {
      const id = exec();
      await store.put({ ...step(id, 0), prevId: null });
      const { checkpoint } = await store.recordInterrupt(pause(id, 1), { reason: 'approve', context: null });
      const holder = `h-${uuidv7()}`;
      const claim = await cutting({ match: COMMIT, when }, () =>
        store.claimInterrupt(
          { executionId: id, checkpointId: checkpoint.id },
          { next: step(id, 2), lease: { holder, ttlMs: 60_000 } },
        ),
      );
      expect(claim?.pending.checkpointId).toBe(checkpoint.id);
      expect((await store.latest(id))?.id).toBe(claim?.checkpoint?.id);
      expect(await store.getPendingInterrupt(id)).toBeNull();
      expect(claim?.lease).toMatchObject({ holder, epoch: (await store.getLease(id))?.epoch });
    });

    it(`a decision whose commit ${landed} is recorded, once`, async () => {
      const id = exec();
      await store.put({ ...step(id, 0), prevId: null });
      const { checkpoint } = await store.recordInterrupt(pause(id, 1), { reason: 'approve', context: null });
      const d = decisionFor(id, checkpoint.id);
      expect(await cutting({ match: COMMIT, when }, () => store.recordDecision(d))).toEqual({ recorded: true });
      expect((await store.getDecision(id, checkpoint.id))?.decisionId).toBe(d.decisionId);
      expect((await store.listDecisions({ executionId: id })).items).toHaveLength(1);
    });
  }
});
