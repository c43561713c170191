import { afterAll, beforeAll, describe } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { runLeaseProcessSuite } from './lease-suite.js';

const ready = await pgReady('leases: postgres');

describe.skipIf(!ready)('leases on postgres', () => {
  let db: TestDatabase;
  let n = 0;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_lease');
  });
  afterAll(async () => db?.drop());
  runLeaseProcessSuite({
    name: 'postgres',
    async make() {
      const schema = `l${++n}`;
      const store = new PostgresCheckpointer({ url: db.url, schema, max: 4 });
      await store.setup();
      return { spec: `postgres:${db.url}#${schema}`, store, close: () => store.close() };
    },
  });
});
