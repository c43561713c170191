/**
 * The plane suite (test/plane/suite.ts) on Postgres with every tenant table hash-partitioned by project_id
 * (test/helpers/partition.ts), the layout a distributed Postgres routes by: the same routes give the same answers
 * when a project's rows live in one partition of each table and no key spans projects.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { openPlaneDatabase } from '../../plane/db/open.js';
import { PARTITIONS, partitionTenantTables } from '../helpers/partition.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { runPlaneSuite } from './suite.js';

const ready = await pgReady('plane on hash-partitioned postgres');

describe.skipIf(!ready)('plane on postgres, tenant tables hash-partitioned by project_id', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_plane_partitioned');
    // the schema as the plane makes it (its migrations), then each tenant table partitioned
    await (await openPlaneDatabase({ databaseUrl: db.url, max: 1 })).close();
    const pg = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      const tenant = await partitionTenantTables(pg);
      const [{ n }] = await pg<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid
        WHERE c.relname IN ${pg(tenant)}`;
      expect(n, 'every tenant table partitioned').toBe(tenant.length);
      expect(tenant.length).toBeGreaterThan(10);
      const [{ parts }] = await pg<{ parts: number }[]>`
        SELECT count(*)::int AS parts FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhparent WHERE c.relname = 'checkpoints'`;
      expect(parts).toBe(PARTITIONS);
    } finally {
      await pg.end({ timeout: 2 });
    }
  }, 120_000);
  afterAll(async () => db?.drop());
  runPlaneSuite('postgres, hash-partitioned by project_id', () => ({ url: db.url }));
});
