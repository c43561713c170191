import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { decisionsLockKey } from '../../client/postgres/decisions.js';
import { decisionFor } from '../../client/testing/store/decisions.js';
import { uuidv7 } from '../../shared/ids.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const ready = await pgReady('postgres claim race');

describe.skipIf(!ready)('postgres across real connections', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_race');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('16 connections race for one pause, 200 rounds: exactly one winner every round', async () => {
    const writer = new PostgresCheckpointer({ url: db.url, max: 1 });
    await writer.setup();
    const racers = Array.from({ length: 16 }, () => new PostgresCheckpointer({ url: db.url, max: 1 }));
    await Promise.all(racers.map((r) => r.setup()));
    try {
      const winners: number[] = [];
      for (let round = 0; round < 200; round++) {
        const executionId = `race-${round}`;
        const { pending } = await writer.recordInterrupt(
          {
            executionId,
            nodeId: 'turn:0/tool:refund',
            turn: 0,
            step: 'hitl_pause',
            status: 'interrupted',
            agentPath: 'agent:race/tool:refund',
            state: { messages: [] },
          },
          { reason: 'approval', context: null },
        );
        const results = await Promise.all(racers.map((r) => r.claimInterrupt(pending)));
        winners.push(results.filter((r) => r !== null).length);
      }
      expect(winners.filter((w) => w !== 1)).toEqual([]);
    } finally {
      await Promise.all([writer, ...racers].map((r) => r.close()));
    }
  });

  it('concurrent writers on one execution get a gap-free seq; setup races are safe', async () => {
    const stores = Array.from(
      { length: 6 },
      () => new PostgresCheckpointer({ url: db.url, schema: 'concurrent', max: 2 }),
    );
    await Promise.all(stores.map((s) => s.setup()));
    try {
      await Promise.all(
        stores.map(async (s, w) => {
          for (let i = 0; i < 50; i++) {
            await s.put({
              executionId: 'shared',
              nodeId: `turn:${i}`,
              turn: i,
              step: 'llm_call',
              status: 'completed',
              agentPath: `agent:w${w}`,
              state: { messages: [{ w, i }] },
            });
          }
        }),
      );
      const rows = await stores[0].list('shared');
      expect(rows.map((r) => r.seq)).toEqual([...Array(300).keys()]);
      for (const r of rows.filter((_, i) => i % 37 === 0))
        expect(await stores[0].readState(r)).toHaveProperty('messages');
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('decisionSeq waits for a recording in flight: a decision that took a lower seq and commits later is never under the bound', async () => {
    const store = new PostgresCheckpointer({ url: db.url, schema: 'decide', max: 2 });
    await store.setup();
    const raw = postgres(db.url, { max: 1, onnotice: () => {} });
    let commit!: () => void;
    const committed = new Promise<void>((r) => (commit = r));
    try {
      // a recording in flight: its insert took a seq, its transaction is still open
      let inserted!: (seq: number) => void;
      const took = new Promise<number>((r) => (inserted = r));
      const slow = decisionFor('slow-run', uuidv7(), { source: 'plane' });
      const inFlight = raw.begin(async (tx) => {
        // as insertDecision does: the decisions lock, shared, first
        await tx`SELECT pg_advisory_xact_lock_shared(hashtext(${decisionsLockKey('decide')}))`;
        const [row] = await tx<
          { seq: string }[]
        >`INSERT INTO "decide".decisions (checkpoint_id, execution_id, decision_id, approved, metadata, decided_by, source, decided_at)
          VALUES (${slow.checkpointId}, ${slow.executionId}, ${slow.decisionId}, true, '{}', 'key:approver', 'plane', ${slow.decidedAt}) RETURNING seq::text`;
        inserted(Number(row.seq));
        await committed;
      });
      const slowSeq = await took;
      // a later recording commits first, with a higher seq
      await store.recordDecision(decisionFor('fast-run', uuidv7(), { source: 'plane' }));
      let read: number | null = null;
      const bound = store.decisionSeq().then((v) => (read = v));
      await new Promise((r) => setTimeout(r, 500));
      // a bound read now would not see the in-flight decision, which then commits under it
      expect(read).toBeNull();
      commit();
      await inFlight;
      await bound;
      expect(read).toBeGreaterThan(slowSeq);
      expect((await store.getDecision('slow-run', slow.checkpointId))?.seq).toBe(slowSeq);
    } finally {
      commit();
      await raw.end();
      await store.close();
    }
  });

  it('a recording takes the decisions lock; a delete of decisions in flight stalls neither a recording nor the bound', async () => {
    const store = new PostgresCheckpointer({ url: db.url, schema: 'decide_lock', max: 2 });
    await store.setup();
    const raw = postgres(db.url, { max: 1, onnotice: () => {} });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    try {
      await store.recordDecision(decisionFor('old-run', uuidv7(), { source: 'plane' }));
      // the lock held alone (as decisionSeq holds it): a recording waits for it
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = raw.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(hashtext(${decisionsLockKey('decide_lock')}))`;
        locked();
        await released;
      });
      await isLocked;
      let recorded = false;
      const recording = store
        .recordDecision(decisionFor('new-run', uuidv7(), { source: 'plane' }))
        .then(() => (recorded = true));
      await new Promise((r) => setTimeout(r, 500));
      expect(recorded).toBe(false);
      release();
      await holder;
      await recording;
      // a delete of decisions whose transaction stays open (a prune, a run deleted) holds no decisions lock
      let done!: () => void;
      const finish = new Promise<void>((r) => (done = r));
      let deleted!: () => void;
      const hasDeleted = new Promise<void>((r) => (deleted = r));
      const deleting = raw.begin(async (tx) => {
        await tx`DELETE FROM "decide_lock".decisions WHERE execution_id = 'old-run'`;
        deleted();
        await finish;
      });
      await hasDeleted;
      const bound = await Promise.race([
        store.decisionSeq(),
        new Promise<'stalled'>((r) => setTimeout(() => r('stalled'), 10_000)),
      ]);
      expect(bound).toBeGreaterThan(0);
      const third = await Promise.race([
        store.recordDecision(decisionFor('third-run', uuidv7(), { source: 'plane' })).then(() => 'recorded'),
        new Promise<'stalled'>((r) => setTimeout(() => r('stalled'), 10_000)),
      ]);
      expect(third).toBe('recorded');
      done();
      await deleting;
    } finally {
      release();
      await raw.end();
      await store.close();
    }
  });
});
