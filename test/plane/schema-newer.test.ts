/**
 * A plane refuses to start on a database a newer plane migrated (SCHEMA_NEWER, naming both migrations) and changes
 * nothing there; without the check it would start on a schema it does not know and fail every write. The newer plane
 * is stood in for by a migration record dated after this build's newest, as drizzle writes one.
 */
import { PGlite } from '@electric-sql/pglite';
import { readFileSync } from 'node:fs';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { openPlaneDatabase } from '../../plane/db/open.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';

const pg = await pgReady('a newer schema on postgres');
const tmp = scratchDir('waymark-schema-newer-');
const journal = JSON.parse(readFileSync(new URL('../../drizzle/meta/_journal.json', import.meta.url), 'utf8')) as {
  entries: { when: number; tag: string }[];
};
const newestKnown = journal.entries[journal.entries.length - 1];
/** A migration a newer plane applied: dated a day after this build's newest. */
const LATER = newestKnown.when + 86_400_000;
const NEWER = `INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('from-a-newer-plane', ${LATER})`;
const COUNT = 'SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations';
let tdb: TestDatabase | undefined;
afterAll(async () => {
  tmp.cleanup();
  await tdb?.drop();
});

const refusal = {
  code: 'SCHEMA_NEWER',
  message: expect.stringContaining(`this build knows migrations up to ${newestKnown.tag}`),
  details: { applied: LATER, known: newestKnown.tag },
};

describe('a database a newer plane migrated', () => {
  it('PGlite data dir: the start is refused with SCHEMA_NEWER naming both, and nothing is migrated', async () => {
    const dir = tmp.file('plane');
    await (await openPlaneDatabase({ dataDir: dir })).close();
    const lite = new PGlite(dir);
    await lite.exec(NEWER);
    const before = (await lite.query<{ n: number }>(COUNT)).rows[0].n;
    await lite.close();
    const err = await openPlaneDatabase({ dataDir: dir }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toMatchObject(refusal);
    expect((err as Error).message).toContain(`the data dir ${dir} was migrated by a newer waymark plane`);
    // the refused open released the data dir and left the migrations as they were
    const again = new PGlite(dir);
    expect((await again.query<{ n: number }>(COUNT)).rows[0].n).toBe(before);
    await again.close();
  }, 120_000);

  it.skipIf(!pg)(
    'Postgres: the start is refused with SCHEMA_NEWER, and nothing is migrated',
    async () => {
      tdb = await createTestDatabase('waymark_schema_newer');
      await (await openPlaneDatabase({ databaseUrl: tdb.url })).close();
      const sql = postgres(tdb.url, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(NEWER);
        const [{ n: before }] = await sql.unsafe<{ n: number }[]>(COUNT);
        await expect(openPlaneDatabase({ databaseUrl: tdb.url })).rejects.toMatchObject(refusal);
        const [{ n: after }] = await sql.unsafe<{ n: number }[]>(COUNT);
        expect(after).toBe(before);
        // the migration lock was let go: another open waits for nothing and is refused the same way
        await expect(openPlaneDatabase({ databaseUrl: tdb.url })).rejects.toMatchObject({ code: 'SCHEMA_NEWER' });
      } finally {
        await sql.end({ timeout: 2 });
      }
    },
    120_000,
  );
});
