/**
 * A store file written at schema version 1 opens under the current code: the
 * outbox is rebuilt (migration 2) without losing a pending, acked or
 * quarantined event, its order is kept, and new writes queue after the old.
 */
import { afterAll, describe, expect, test } from 'vitest';
import Database from 'better-sqlite3';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { CHECKPOINT_COLUMNS } from '../../client/store/columns.js';
import { MIGRATIONS } from '../../client/store/migrations.js';
import { uuidv7 } from '../../shared/ids.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-sqlite-migrate-');
afterAll(() => tmp.cleanup());

const put = (store: SqliteCheckpointer, executionId: string, turn: number) =>
  store.put({
    executionId,
    nodeId: `turn:${turn}`,
    turn,
    step: 'llm_call',
    status: 'completed',
    agentPath: 'agent:m',
    state: { messages: [{ role: 'user', content: `m${turn}` }] },
  });

describe('sqlite schema migration 1 → 2', () => {
  test('a version-1 file keeps every outbox event, its order and its state', async () => {
    // rows written by today's code, copied into a file laid out exactly as version 1
    const source = new SqliteCheckpointer({ path: tmp.file('source.db') });
    for (let t = 0; t < 4; t++) await put(source, 'a', t);
    await put(source, 'b', 0);
    await source.putIdempotent('a', 'charge', { ok: true });
    const all = await source.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
    await source.applyResults({ synced: [all[0].id], quarantined: { [all[1].id]: 'refused: test' } });
    const before = {
      pending: (await source.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map((e) => e.id),
      stats: await source.outboxStats(),
      quarantined: await source.listQuarantined(),
    };
    await source.close();

    const v1 = new Database(tmp.file('v1.db'));
    v1.pragma('journal_mode = WAL');
    v1.exec(MIGRATIONS[0].sqlite);
    v1.pragma('user_version = 1');
    v1.exec(`ATTACH '${tmp.file('source.db')}' AS src`);
    for (const t of ['waymark_meta', 'executions', 'pending_interrupts', 'idempotency'])
      v1.exec(`INSERT INTO main.${t} SELECT * FROM src.${t}`);
    v1.exec(`INSERT INTO main.checkpoints SELECT ${CHECKPOINT_COLUMNS.join(', ')} FROM src.checkpoints`);
    // version 1 kept every event in the outbox: today's checkpoint events (on their rows) go back there, the
    // waiting ones at their places, then the sent ones after them
    v1.exec(`INSERT INTO main.outbox (seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error)
             SELECT seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error FROM src.outbox_entries WHERE synced = 0
             UNION ALL
             SELECT event_seq, id, 'checkpoint', execution_id, NULL, event_bytes, created_at, 0, NULL FROM src.checkpoints WHERE event_seq > 0`);
    v1.exec(`INSERT INTO main.outbox (seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error)
             SELECT NULL, id, kind, execution_id, payload, bytes, created_at, synced, sync_error FROM src.outbox_entries WHERE synced = 1
             UNION ALL
             SELECT NULL, id, 'checkpoint', execution_id, NULL, event_bytes, created_at, 1, NULL FROM src.checkpoints WHERE event_seq < 0`);
    v1.exec('DETACH src');
    expect(v1.prepare(`SELECT count(*) AS n FROM sqlite_sequence WHERE name = 'outbox'`).get()).toEqual({ n: 1 });
    v1.close();

    const store = new SqliteCheckpointer({ path: tmp.file('v1.db') });
    const db = store.connection;
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    // names recorded: the version the old file had (when it was applied is not known), and the ones applied now
    const versions = db.prepare(`SELECT version, name, applied_at FROM waymark_migrations ORDER BY version`).all() as {
      version: number;
      name: string;
      applied_at: string | null;
    }[];
    expect(versions.map((v) => [v.version, v.name])).toEqual(MIGRATIONS.map((m, i) => [i + 1, m.name]));
    expect(versions.map((v) => v.applied_at === null)).toEqual(MIGRATIONS.map((_, i) => i === 0));
    expect((await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map((e) => e.id)).toEqual(before.pending);
    const stats = await store.outboxStats();
    expect({ ...stats, oldestPendingAgeMs: 0 }).toEqual({ ...before.stats, oldestPendingAgeMs: 0 });
    expect(await store.listQuarantined()).toEqual(before.quarantined);
    // every event kept: the outbox's rows, and the waiting checkpoints carrying their own (migration 7), none left
    // waiting in the outbox
    const waiting = before.pending.length - 1; // the idempotency event is the one other kind
    expect(db.prepare(`SELECT count(*) AS n FROM checkpoints WHERE event_seq > 0`).get()).toEqual({ n: waiting });
    expect(
      db.prepare(`SELECT count(*) AS n FROM outbox_entries WHERE kind = 'checkpoint' AND synced = 0`).get(),
    ).toEqual({
      n: 0,
    });
    expect(db.prepare(`SELECT count(*) AS n FROM outbox_entries`).get()).toEqual({ n: all.length - waiting });
    expect(db.prepare(`SELECT count(*) AS n FROM sqlite_sequence WHERE name = 'outbox'`).get()).toEqual({ n: 0 });
    expect(store.integrityCheck()).toBe('ok');
    // the run goes on from its stored state, and its new event queues after the old ones
    expect(await store.readState((await store.latest('a'))!)).toEqual({ messages: [{ role: 'user', content: 'm3' }] });
    const next = await put(store, 'a', 4);
    expect(next.seq).toBe(4);
    const pending = await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 });
    expect(pending.map((e) => e.id)).toEqual([...before.pending, next.id]);
    // a run of the old version, never leased, is free: a runner takes its lease and writes on, fenced
    expect((await store.listExecutions({ state: 'running' })).find((e) => e.executionId === 'a')?.lease).toBeNull();
    const lease = await store.acquireLease('a', { holder: 'upgraded', ttlMs: 60_000 });
    expect(lease.epoch).toBe(1);
    const leased = await store.put(
      {
        executionId: 'a',
        nodeId: 'turn:5',
        turn: 5,
        step: 'llm_call',
        status: 'completed',
        agentPath: 'agent:m',
        state: { messages: [] },
      },
      { lease },
    );
    expect(leased.seq).toBe(5);
    // deleting an execution drops its unsent events of every kind, through the new indexes
    await store.deleteExecution('a');
    expect((await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map((e) => `${e.kind}:${e.executionId}`)).toEqual(
      ['checkpoint:b', 'execution_deleted:a'],
    );
    await store.close();
  });
});

describe('sqlite schema migration 4 → 5', () => {
  test('a version-4 file keeps its decisions and their seqs; a deleted newest seq is never given again', async () => {
    const v4 = new Database(tmp.file('v4.db'));
    v4.pragma('journal_mode = WAL');
    for (const [i, m] of MIGRATIONS.slice(0, 4).entries()) {
      v4.exec(m.sqlite);
      v4.pragma(`user_version = ${i + 1}`);
    }
    const insert = v4.prepare(
      `INSERT INTO decisions (checkpoint_id, execution_id, decision_id, approved, metadata, decided_by, source, decided_at) VALUES (?, ?, ?, 1, '{}', 'key:approver', 'plane', '2026-12-03T00:00:00.000Z')`,
    );
    for (const n of [1, 2, 3]) insert.run(uuidv7(), `run-${n}`, uuidv7());
    // version 4 gives the seq of a deleted newest row again: the defect this migration removes
    v4.prepare(`DELETE FROM decisions WHERE seq = 3`).run();
    expect(insert.run(uuidv7(), 'run-4', uuidv7()).lastInsertRowid).toBe(3);
    v4.close();

    const store = new SqliteCheckpointer({ path: tmp.file('v4.db') });
    const db = store.connection;
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(db.prepare(`SELECT seq, execution_id FROM decisions ORDER BY seq`).all()).toEqual([
      { seq: 1, execution_id: 'run-1' },
      { seq: 2, execution_id: 'run-2' },
      { seq: 3, execution_id: 'run-4' },
    ]);
    expect(await store.decisionSeq()).toBe(3);
    expect((await store.listDecisions()).items.map((d) => d.executionId)).toEqual(['run-1', 'run-2', 'run-4']);
    // the newest is forgotten; the next decision still gets a seq above every bound read before
    expect(await store.forgetUnheldDecisions('run-4', null, 3)).toBe(1);
    await store.recordDecision({
      executionId: 'run-5',
      checkpointId: uuidv7(),
      decisionId: uuidv7(),
      approved: true,
      metadata: {},
      decidedBy: 'key:approver',
      source: 'plane',
      decidedAt: '2026-12-03T00:00:01.000Z',
    });
    expect(await store.decisionSeq()).toBe(4);
    expect(await store.forgetUnheldDecisions('run-5', null, 3)).toBe(0);
    expect(store.integrityCheck()).toBe('ok');
    await store.close();
  });
});
