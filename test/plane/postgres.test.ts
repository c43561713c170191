import { afterAll, beforeAll, describe } from 'vitest';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { runPlaneSuite } from './suite.js';

const ready = await pgReady('plane on postgres');

describe.skipIf(!ready)('plane on postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_plane');
  });
  afterAll(async () => db?.drop());
  runPlaneSuite('postgres', () => ({ url: db.url }));
});
