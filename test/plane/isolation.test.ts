/**
 * The plane's writing transactions run at read committed whatever the database's default: the clocks' commit order
 * (plane/clocks.ts) and the run owners' locks rely on a statement seeing what committed before it and on a row lock
 * that waits and then reads the row's newest version. On a database whose default is serializable, two ingests of
 * one project that draw from the same clock at once would otherwise fail with a serialization failure (40001).
 */
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import { type PlaneDatabase, rowsOf } from '../../plane/db/open.js';
import { ingestBatch } from '../../plane/ingest.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, step } from '../helpers/rows.js';

const pg = await pgReady('write isolation on postgres');
const WRITERS = 8;
const ROUNDS = 6;

let tdb: TestDatabase;
let database: PlaneDatabase;
let projectId: string;

beforeAll(async () => {
  if (!pg) return;
  tdb = await createTestDatabase('waymark_isolation');
  const admin = postgres(tdb.url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`ALTER DATABASE "${tdb.name}" SET default_transaction_isolation = 'serializable'`);
  } finally {
    await admin.end({ timeout: 2 });
  }
  database = await openTestPlaneDatabase({ url: tdb.url });
  projectId = (await createKey(database.db, { createProject: true, project: 'iso', scopes: ['ingest'] })).projectId;
}, 120_000);
afterAll(async () => {
  await database?.close();
  await tdb?.drop();
});

describe.skipIf(!pg)('on a database whose default isolation is serializable', () => {
  it('concurrent ingests of one project all commit, each run stamped with its own change seq', async () => {
    const [{ iso }] = rowsOf<{ iso: string }>(
      await database.db.execute(sql`SELECT current_setting('transaction_isolation') AS iso`),
    );
    expect(iso).toBe('serializable');
    const batches = await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        eventsOf(async (s) => {
          for (let i = 0; i < ROUNDS; i++) await s.put(step(`run-${w}`, i));
        }, `writer-${w}`),
      ),
    );
    const failures: string[] = [];
    // each writer sends its run's rows one batch at a time, all writers at once: every batch draws the project's
    // `changes` clock
    await Promise.all(
      batches.map(async (events, w) => {
        for (const e of events)
          await ingestBatch(database.db, projectId, `writer-${w}`, undefined, [e]).catch((err: Error) =>
            failures.push(`writer-${w}: ${(err.cause as Error | undefined)?.message ?? err.message.slice(-200)}`),
          );
      }),
    );
    expect(failures).toEqual([]);
    const seqs = rowsOf<{ change_seq: string }>(
      await database.db.execute(sql`SELECT change_seq FROM executions WHERE project_id = ${projectId}`),
    );
    expect(seqs.length).toBe(WRITERS);
    expect(new Set(seqs.map((s) => s.change_seq)).size).toBe(WRITERS);
  }, 120_000);
});
