import { afterAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import postgres from 'postgres';
import { openStore } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { nativeBinding } from '../../client/sqlite/driver.js';
import { hasCode } from '../../shared/errors.js';
import type { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-open-store-');
afterAll(() => tmp.cleanup());

describe('openStore(spec)', () => {
  it('refuses an empty spec and an unknown scheme with INVALID_OPTIONS instead of opening a throwaway database (a mistyped sqlite: included: no file is made)', async () => {
    for (const spec of [
      '',
      '   ',
      'mysql://127.0.0.1/db',
      'nonsense://x',
      `sqlit:${tmp.file('typo.db')}`,
      'file:runs.db',
      'SQLITE:runs.db',
    ]) {
      const e = await openStore(spec).catch((x) => x);
      expect(hasCode(e, 'INVALID_OPTIONS'), `${JSON.stringify(spec)}: ${e}`).toBe(true);
      expect(existsSync(spec)).toBe(false);
    }
    expect(existsSync(tmp.file('typo.db'))).toBe(false);
    expect(String(await openStore('sqlit:runs.db').catch((x) => x))).toContain("'sqlit:' is not a store scheme");
    // a file whose name really holds a colon opens by a path (as the message says)
    const s = await openStore(tmp.file('odd:name.db'));
    expect(s).toBeInstanceOf(SqliteCheckpointer);
    await s.close();
    expect(existsSync(tmp.file('odd:name.db'))).toBe(true);
  });

  it('opens a SQLite store from a path, sqlite:<path> and :memory:, and refuses a missing file with mustExist', async () => {
    for (const spec of [tmp.file('a.db'), `sqlite:${tmp.file('b.db')}`, ':memory:']) {
      const s = await openStore(spec);
      expect(s).toBeInstanceOf(SqliteCheckpointer);
      await s.close();
    }
    const e = await openStore(tmp.file('missing.db'), { mustExist: true }).catch((x) => x);
    expect(hasCode(e, 'STORE_NOT_FOUND')).toBe(true);
  });
});

const pg = await pgReady('openStore: postgres specs');
describe.runIf(pg)('openStore(postgres spec)', () => {
  it('names the schema with #schema or ?schema= (the parameter is not sent to the server); two different schemas are refused', async () => {
    const db = await createTestDatabase('waymark_open_store');
    try {
      const withParam = new URL(db.url);
      withParam.searchParams.set('schema', 'wm_param');
      for (const [spec, schema] of [
        [`${db.url}#wm_hash`, 'wm_hash'],
        [withParam.toString(), 'wm_param'],
        [`postgres:${withParam}#wm_param`, 'wm_param'],
        [db.url, 'waymark'],
      ] as const) {
        const s = (await openStore(spec)) as PostgresCheckpointer;
        expect([spec, s.schema]).toEqual([spec, schema]);
        await s.close();
      }
      // a reader (mustExist) is refused a schema without a store, and nothing is created there
      const missing = await openStore(`${db.url}#wm_typo`, { mustExist: true }).catch((x) => x);
      expect(hasCode(missing, 'STORE_NOT_FOUND'), String(missing)).toBe(true);
      expect(String(missing.message)).toContain("no store in schema 'wm_typo'");
      const probe = (await openStore(`${db.url}#wm_hash`, { mustExist: true })) as PostgresCheckpointer;
      expect(await probe.exists()).toBe(true);
      await probe.close();
      const sql = postgres(db.url, { max: 1, onnotice: () => {} });
      expect(await sql`SELECT 1 FROM pg_namespace WHERE nspname = 'wm_typo'`).toHaveLength(0);
      await sql.end();
      const e = await openStore(`${withParam}#other`).catch((x) => x);
      expect(hasCode(e, 'INVALID_OPTIONS'), String(e)).toBe(true);
      expect(String(e.message)).toContain('?schema=wm_param and #other');
    } finally {
      await db.drop();
    }
  });
});

describe("better-sqlite3's addon", () => {
  it('is found without the bindings search (given to every open as nativeBinding), and a store opens with it', async () => {
    const path = nativeBinding();
    expect(path).toMatch(/better-sqlite3[\\/]build[\\/]Release[\\/]better_sqlite3\.node$/);
    expect(existsSync(path!)).toBe(true);
    expect(nativeBinding()).toBe(path);
    const store = new SqliteCheckpointer({ path: ':memory:' });
    expect(
      (
        await store.put({
          executionId: 'nb',
          nodeId: 'turn:0',
          turn: 0,
          step: 'llm_call',
          status: 'completed',
          agentPath: 'agent:x',
          state: {},
        })
      ).seq,
    ).toBe(0);
    await store.close();
  });
});
