import { afterAll, beforeAll, describe } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { runRuntimeSuite } from './suite.js';

const ready = await pgReady('runtime: postgres');

describe.skipIf(!ready)('runtime on postgres', () => {
  let db: TestDatabase;
  let n = 0;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_rt');
  });
  afterAll(async () => db?.drop());
  runRuntimeSuite({
    name: 'postgres',
    async make(options) {
      const store = new PostgresCheckpointer({ url: db.url, schema: `rt${++n}`, max: 6, faults: options?.faults });
      return { store, close: () => store.close() };
    },
  });
});
