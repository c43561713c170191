/**
 * One migration list for both stores (client/store/migrations.ts): both
 * runners end at the same version with the same names recorded; the Postgres
 * text names its schema with a token nothing else can contain; a database
 * created by the code before names were recorded opens and upgrades; and an
 * entry appended later applies on a database of today.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { MIGRATIONS, postgresText, SCHEMA_TOKEN, type Migration } from '../../client/store/migrations.js';
import { migrateSqlite } from '../../client/sqlite/migrations.js';
import { migratePostgres } from '../../client/postgres/migrations.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-migrations-');
afterAll(() => tmp.cleanup());

const step = (executionId: string, turn: number) => ({
  executionId,
  nodeId: `turn:${turn}`,
  turn,
  step: 'llm_call' as const,
  status: 'completed' as const,
  agentPath: 'agent:m',
  state: { messages: [{ role: 'user' as const, content: `m${turn}` }] },
});

/** An entry as a later change would append it: a column on both dialects. */
const NEXT: Migration = {
  name: '0099_test_note',
  sqlite: `ALTER TABLE executions ADD COLUMN note TEXT;`,
  postgres: `-- S.O.S.: a comment that the old placeholder would have rewritten
  ALTER TABLE ${SCHEMA_TOKEN}.executions ADD COLUMN note text;`,
};

const sqliteVersions = (db: Database.Database) =>
  db.prepare(`SELECT version, name, applied_at FROM waymark_migrations ORDER BY version`).all() as {
    version: number;
    name: string;
    applied_at: string | null;
  }[];

describe('the list', () => {
  test('names are numbered in order, unique, and each entry has both dialects', () => {
    expect(MIGRATIONS.map((m) => m.name)).toEqual([
      '0001_initial',
      '0002_cheaper_writes',
      '0003_leases',
      '0004_decisions',
      '0005_decision_seq_never_reused',
      '0006_byte_order_listings',
      '0007_checkpoint_events',
    ]);
    MIGRATIONS.forEach((m, i) => {
      expect(m.name).toMatch(new RegExp(`^${String(i + 1).padStart(4, '0')}_[a-z0-9_]+$`));
      expect(m.sqlite.trim()).not.toBe('');
      expect(m.postgres.trim()).not.toBe('');
      expect(m.sqlite).not.toContain(SCHEMA_TOKEN);
    });
  });

  test('the Postgres text names every table through the token, and rendering leaves no token and nothing else changed', () => {
    for (const m of MIGRATIONS) {
      const sql = postgresText(m, 'acme');
      expect(sql).not.toContain(SCHEMA_TOKEN);
      // every CREATE TABLE, index target and DROP INDEX is schema-qualified
      for (const [, target] of sql.matchAll(/\b(?:CREATE TABLE|ON|DROP INDEX)\s+(\S+)/g))
        expect(target).toMatch(/^"acme"\./);
    }
    // a future `S.` in a statement or a comment is kept as written (the old placeholder rewrote it)
    expect(postgresText(NEXT, 'acme')).toBe(`-- S.O.S.: a comment that the old placeholder would have rewritten
  ALTER TABLE "acme".executions ADD COLUMN note text;`);
  });
});

describe('sqlite runner', () => {
  test('a new file records every version with its name and when it was applied', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('new.db') });
    const db = store.connection;
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    const versions = sqliteVersions(db);
    expect(versions.map((v) => [v.version, v.name])).toEqual(MIGRATIONS.map((m, i) => [i + 1, m.name]));
    expect(versions.every((v) => v.applied_at !== null)).toBe(true);
    await store.close();
  });

  test('a file of the current schema written before names were recorded opens, gets its names, and works on', async () => {
    // exactly what the previous runner left: every migration applied, user_version set, no names table
    const path = tmp.file('unnamed.db');
    const old = new Database(path);
    old.pragma('journal_mode = WAL');
    for (const m of MIGRATIONS) old.exec(m.sqlite);
    old.pragma(`user_version = ${MIGRATIONS.length}`);
    old.close();

    const store = new SqliteCheckpointer({ path });
    const db = store.connection;
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(sqliteVersions(db)).toEqual(MIGRATIONS.map((m, i) => ({ version: i + 1, name: m.name, applied_at: null })));
    expect((await store.put(step('a', 0))).seq).toBe(0);
    await store.close();
    // opening again changes nothing
    const again = new SqliteCheckpointer({ path });
    expect(sqliteVersions(again.connection)).toEqual(
      MIGRATIONS.map((m, i) => ({ version: i + 1, name: m.name, applied_at: null })),
    );
    await again.close();
  });

  test('an entry appended later applies on a file of today, and its rows stay', async () => {
    const path = tmp.file('today.db');
    const store = new SqliteCheckpointer({ path });
    await store.put(step('a', 0));
    await store.close();
    const db = new Database(path);
    migrateSqlite(db, [...MIGRATIONS, NEXT]);
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length + 1);
    expect(sqliteVersions(db).map((v) => v.name)).toEqual([...MIGRATIONS, NEXT].map((m) => m.name));
    expect(db.prepare(`SELECT execution_id, note FROM executions`).all()).toEqual([{ execution_id: 'a', note: null }]);
    // and the code of today still opens it: a version past its list is left as it is
    db.close();
    const newer = new SqliteCheckpointer({ path });
    expect(newer.connection.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length + 1);
    expect((await newer.put(step('a', 1))).seq).toBe(1);
    await newer.close();
  });
});

const ready = await pgReady('store migrations: postgres');

describe.skipIf(!ready)('postgres runner', () => {
  let db: TestDatabase;
  let raw: postgres.Sql;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_migrations');
    raw = postgres(db.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await raw?.end({ timeout: 2 });
    await db?.drop();
  });
  const pgVersions = async (schema: string) =>
    (await raw.unsafe(`SELECT version, name FROM "${schema}".waymark_migrations ORDER BY version`)).map((r) => [
      r.version as number,
      r.name as string | null,
    ]);

  test('both runners end at the same version, with the same names', async () => {
    const pg = new PostgresCheckpointer({ url: db.url, schema: 'fresh', max: 2 });
    await pg.setup();
    const sqlite = new SqliteCheckpointer({ path: ':memory:' });
    const sqliteAt = sqliteVersions(sqlite.connection).map((v) => [v.version, v.name]);
    expect(await pgVersions('fresh')).toEqual(sqliteAt);
    expect(sqliteAt).toHaveLength(MIGRATIONS.length);
    expect(sqlite.connection.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    await pg.close();
    await sqlite.close();
  });

  test('a schema of the current version written before names were recorded opens, gets the column and its names, and works on', async () => {
    // exactly what the previous runner left: a version table without names, every migration applied
    await raw.unsafe(`CREATE SCHEMA unnamed`);
    await raw.unsafe(
      `CREATE TABLE unnamed.waymark_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    for (const [i, m] of MIGRATIONS.entries()) {
      await raw.unsafe(postgresText(m, 'unnamed'));
      await raw.unsafe(`INSERT INTO unnamed.waymark_migrations (version) VALUES (${i + 1})`);
    }
    const store = new PostgresCheckpointer({ url: db.url, schema: 'unnamed', max: 2 });
    expect((await store.put(step('a', 0))).seq).toBe(0);
    expect(await pgVersions('unnamed')).toEqual(MIGRATIONS.map((m, i) => [i + 1, m.name]));
    await store.close();
    // opening again changes nothing
    const again = new PostgresCheckpointer({ url: db.url, schema: 'unnamed', max: 2 });
    await again.setup();
    expect(await pgVersions('unnamed')).toEqual(MIGRATIONS.map((m, i) => [i + 1, m.name]));
    await again.close();
  });

  test('an entry appended later applies on a schema of today, and its rows stay', async () => {
    const store = new PostgresCheckpointer({ url: db.url, schema: 'today', max: 2 });
    await store.put(step('a', 0));
    await store.close();
    await raw.begin((tx) =>
      migratePostgres(tx as unknown as Parameters<typeof migratePostgres>[0], 'today', [...MIGRATIONS, NEXT]),
    );
    expect((await pgVersions('today')).map(([, name]) => name)).toEqual([...MIGRATIONS, NEXT].map((m) => m.name));
    expect(await raw`SELECT execution_id, note FROM today.executions`).toEqual([{ execution_id: 'a', note: null }]);
    const newer = new PostgresCheckpointer({ url: db.url, schema: 'today', max: 2 });
    expect((await newer.put(step('a', 1))).seq).toBe(1);
    await newer.close();
  });
});
