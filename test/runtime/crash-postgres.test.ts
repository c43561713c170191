import { afterAll, beforeAll, describe } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { runCrashSuite } from './crash-suite.js';

const ready = await pgReady('crash: postgres');

describe.skipIf(!ready)('crash on postgres', () => {
  let db: TestDatabase;
  let n = 0;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_crash');
  });
  afterAll(async () => db?.drop());
  runCrashSuite({
    name: 'postgres',
    async make() {
      const schema = `c${++n}`;
      const store = new PostgresCheckpointer({ url: db.url, schema, max: 4 });
      await store.setup();
      return { spec: `postgres:${db.url}#${schema}`, store, close: () => store.close() };
    },
  });
});
