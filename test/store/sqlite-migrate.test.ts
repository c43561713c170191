/**
 * A store file written at schema version 1 opens under the current code: the
 * outbox is rebuilt (migration 2) without losing a pending, acked or
 * quarantined event, its order is kept, and new writes queue after the old.
 */
import { afterAll, describe, expect, test } from 'vitest';
import Database from 'better-sqlite3';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { MIGRATIONS } from '../../client/store/migrations.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-sqlite-migrate-');
afterAll(() => tmp.cleanup());

const put = (store: SqliteCheckpointer, executionId: string, turn: number) =>
  store.put({ executionId, nodeId: `turn:${turn}`, turn, step: 'llm_call', status: 'completed', agentPath: 'agent:m', state: { messages: [{ role: 'user', content: `m${turn}` }] } });

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
    for (const t of ['waymark_meta', 'executions', 'checkpoints', 'pending_interrupts', 'idempotency']) v1.exec(`INSERT INTO main.${t} SELECT * FROM src.${t}`);
    v1.exec(`INSERT INTO main.outbox (seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error)
             SELECT seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error FROM src.outbox`);
    v1.exec('DETACH src');
    expect(v1.prepare(`SELECT count(*) AS n FROM sqlite_sequence WHERE name = 'outbox'`).get()).toEqual({ n: 1 });
    v1.close();

    const store = new SqliteCheckpointer({ path: tmp.file('v1.db') });
    const db = store.connection;
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    // names recorded: the version the old file had (when it was applied is not known), and the ones applied now
    const versions = db.prepare(`SELECT version, name, applied_at FROM waymark_migrations ORDER BY version`).all() as { version: number; name: string; applied_at: string | null }[];
    expect(versions.map((v) => [v.version, v.name])).toEqual(MIGRATIONS.map((m, i) => [i + 1, m.name]));
    expect(versions.map((v) => v.applied_at === null)).toEqual(MIGRATIONS.map((_, i) => i === 0));
    expect((await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map((e) => e.id)).toEqual(before.pending);
    const stats = await store.outboxStats();
    expect({ ...stats, oldestPendingAgeMs: 0 }).toEqual({ ...before.stats, oldestPendingAgeMs: 0 });
    expect(await store.listQuarantined()).toEqual(before.quarantined);
    expect(db.prepare(`SELECT count(*) AS n FROM outbox`).get()).toEqual({ n: all.length });
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
    const leased = await store.put({ executionId: 'a', nodeId: 'turn:5', turn: 5, step: 'llm_call', status: 'completed', agentPath: 'agent:m', state: { messages: [] } }, { lease });
    expect(leased.seq).toBe(5);
    // deleting an execution drops its unsent events of every kind, through the new indexes
    await store.deleteExecution('a');
    expect((await store.fetchUnsynced({ limit: 100, maxBytes: 1e9 })).map((e) => `${e.kind}:${e.executionId}`)).toEqual(['checkpoint:b', 'execution_deleted:a']);
    await store.close();
  });
});
