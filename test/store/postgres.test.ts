import { afterAll, beforeAll, describe } from 'vitest';
import postgres from 'postgres';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { runStoreSuite } from '../../client/testing/index.js';

const ready = await pgReady('store contract: postgres');

describe.skipIf(!ready)('postgres adapter', () => {
  let db: TestDatabase;
  let raw: postgres.Sql;
  let n = 0;
  beforeAll(async () => {
    // a database that orders text by a locale, not by bytes: the store's listings must page the same either way
    db = await createTestDatabase('waymark_store', { locale: 'en-US' });
    raw = postgres(db.url, { max: 2, onnotice: () => {} });
  });
  afterAll(async () => {
    await raw?.end({ timeout: 2 });
    await db?.drop();
  });

  runStoreSuite({
    name: 'postgres',
    async make({ faults }) {
      const schema = `s${++n}`;
      const store = new PostgresCheckpointer({ url: db.url, schema, max: 4, faults });
      return {
        store,
        async corrupt(rowId, column, text) {
          await raw.unsafe(`UPDATE "${schema}".checkpoints SET ${column} = $1 WHERE id = $2`, [text, rowId]);
        },
        async reopen() {
          const other = new PostgresCheckpointer({ url: db.url, schema, max: 2 });
          await other.setup();
          return other;
        },
        close: () => store.close(),
      };
    },
  });
});
