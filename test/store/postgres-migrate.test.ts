/**
 * A Postgres store created at schema version 1 upgrades in place on setup():
 * migration 2 drops the index that made every put a non-HOT update, and the
 * rows written before go on being read and extended.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import postgres from 'postgres';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { MIGRATIONS, postgresText } from '../../client/store/migrations.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const ready = await pgReady('store migration: postgres');

describe.skipIf(!ready)('postgres schema migration 1 → 2', () => {
  let db: TestDatabase;
  let raw: postgres.Sql;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_pg_migrate');
    raw = postgres(db.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await raw?.end({ timeout: 2 });
    await db?.drop();
  });

  test('a version-1 schema upgrades on setup and its runs continue', async () => {
    // lay the schema out exactly as version 1 left it
    await raw.unsafe(`CREATE SCHEMA v1`);
    await raw.unsafe(
      `CREATE TABLE v1.waymark_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    await raw.unsafe(postgresText(MIGRATIONS[0], 'v1'));
    await raw.unsafe(`INSERT INTO v1.waymark_migrations (version) VALUES (1)`);
    const indexes = async () =>
      (await raw`SELECT indexname FROM pg_indexes WHERE schemaname = 'v1' ORDER BY indexname`).map(
        (r) => r.indexname as string,
      );
    expect(await indexes()).toContain('executions_finished');
    const old = new PostgresCheckpointer({ url: db.url, schema: 'v1', max: 2 });
    // a store of this version writes through the migrated schema; this first put runs setup()
    const state = { messages: [{ role: 'user', content: 'hi' }] };
    const first = await old.put({
      executionId: 'e',
      nodeId: 'turn:0',
      turn: 0,
      step: 'llm_call',
      status: 'completed',
      agentPath: 'agent:m',
      state,
    });
    expect((await raw`SELECT max(version) AS v FROM v1.waymark_migrations`)[0].v).toBe(MIGRATIONS.length);
    // the version table of the old code gains names: the one it applied, and the ones applied now
    expect(
      (await raw`SELECT version, name FROM v1.waymark_migrations ORDER BY version`).map((r) => [r.version, r.name]),
    ).toEqual(MIGRATIONS.map((m, i) => [i + 1, m.name]));
    expect(await indexes()).not.toContain('executions_finished');
    await old.close();
    const store = new PostgresCheckpointer({ url: db.url, schema: 'v1', max: 2 });
    const next = await store.put({
      executionId: 'e',
      nodeId: 'turn:1',
      turn: 1,
      step: 'llm_call',
      status: 'completed',
      agentPath: 'agent:m',
      state: { messages: [...state.messages, { role: 'assistant', content: 'yo' }] },
    });
    expect(next.seq).toBe(1);
    expect(await store.readState(first)).toEqual(state);
    expect((await store.readState(next)).messages).toHaveLength(2);
    // a run of the old version, never leased, is free: a runner takes its lease and writes on, fenced
    expect((await store.listExecutions({ state: 'running' }))[0].lease).toBeNull();
    const lease = await store.acquireLease('e', { holder: 'upgraded', ttlMs: 60_000 });
    const third = await store.put(
      {
        executionId: 'e',
        nodeId: 'turn:2',
        turn: 2,
        step: 'llm_call',
        status: 'completed',
        agentPath: 'agent:m',
        state,
      },
      { lease },
    );
    expect([lease.epoch, third.seq]).toEqual([1, 2]);
    await store.close();
  });
});
