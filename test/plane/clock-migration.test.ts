/**
 * Migration 0016 (project_clocks): a database at migration 0015, whose feeds drew their keys from sequences, is
 * migrated; each project's clocks start above every key issued before, in that project or any other (a client's saved
 * cursor may be a key whose row retention pruned since, or a run deleted), so the keys drawn after it are above them
 * all; a project with no rows yet starts above them too. The sequences are gone.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import { changeFeed } from '../../plane/changes.js';
import { ingestBatch } from '../../plane/ingest.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';

const pg = await pgReady('the clocks migration');

const MIGRATIONS = new URL('../../drizzle/', import.meta.url);

/** A copy of the migrations folder whose journal stops at `last` (its index). */
function migrationsUpTo(last: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'waymark-migrations-'));
  cpSync(MIGRATIONS, dir, { recursive: true });
  const journal = JSON.parse(readFileSync(join(dir, 'meta/_journal.json'), 'utf8')) as { entries: { idx: number }[] };
  journal.entries = journal.entries.filter((e) => e.idx <= last);
  writeFileSync(join(dir, 'meta/_journal.json'), JSON.stringify(journal));
  return dir;
}

/** Each feed's keys: its table, its key column, its clock. */
const FEEDS = [
  { table: 'executions', column: 'change_seq', clock: 'changes' },
  { table: 'execution_tombstones', column: 'change_seq', clock: 'changes' },
  { table: 'decisions', column: 'feed_seq', clock: 'decisions' },
  { table: 'pending_interrupts', column: 'opened_seq', clock: 'pauses' },
  { table: 'quarantine', column: 'id', clock: 'quarantine' },
  { table: 'claim_conflicts', column: 'id', clock: 'conflicts' },
  { table: 'run_requests', column: 'seq', clock: 'requests' },
] as const;

describe.skipIf(!pg)('migration 0016: the feeds draw from per-project clocks', () => {
  let tdb: TestDatabase;
  let sql: postgres.Sql;
  let folder = '';
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_clock_migration');
    sql = postgres(tdb.url, { max: 1, onnotice: () => {}, fetch_types: false });
    folder = migrationsUpTo(15);
  });
  afterAll(async () => {
    await sql?.end({ timeout: 2 });
    await tdb?.drop();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('starts every clock of every project above every key issued before; later keys are above them', async () => {
    await migrate(drizzle(sql, { casing: 'snake_case' }), { migrationsFolder: folder });
    // two projects with rows in every feed, drawn from the sequences (interleaved, as they were); a third without any
    await sql`INSERT INTO projects (id, name) VALUES ('p-a', 'p-a'), ('p-b', 'p-b'), ('p-empty', 'p-empty')`;
    for (let i = 0; i < 3; i++)
      for (const p of ['p-a', 'p-b']) {
        const run = `${p}-run-${i}`;
        await sql`INSERT INTO executions (project_id, execution_id, status) VALUES (${p}, ${run}, 'running')`;
        await sql`INSERT INTO execution_tombstones (project_id, execution_id, writer_id, change_seq)
          VALUES (${p}, ${`${run}-gone`}, 'w', nextval(pg_get_serial_sequence('executions', 'change_seq')))`;
        await sql`INSERT INTO decisions (project_id, execution_id, checkpoint_id, decision_id, approved, metadata, decided_by, source, decided_at)
          VALUES (${p}, ${run}, ${`${run}-cp`}, ${`${run}-d`}, true, '{}', 'x', 'plane', '2026-12-07T00:00:00.000Z')`;
        await sql`INSERT INTO pending_interrupts (project_id, execution_id, checkpoint_id, row, state)
          VALUES (${p}, ${run}, ${`${run}-cp`}, '{}', 'open')`;
        await sql`INSERT INTO quarantine (project_id, writer_id, code, reason, payload) VALUES (${p}, 'w', 'invalid', 'r', '{}')`;
        await sql`INSERT INTO claim_conflicts (project_id, execution_id, checkpoint_id, winner_writer_id, loser_writer_id, source)
          VALUES (${p}, ${run}, ${`${run}-cp`}, 'w1', 'w2', 'ingest')`;
        await sql`INSERT INTO run_requests (project_id, request_id, execution_id, action, checkpoint_id, checkpoint_seq, requested_by, key_id, state)
          VALUES (${p}, ${`${run}-q`}, ${run}, 'retry', ${`${run}-cp`}, 0, 'x', 'k', 'open')`;
      }
    // every key issued, per feed (its clock): the newest was p-b's, then pruned (retention deletes a run's rows, and
    // tombstones age out); a client of p-b may hold it as its cursor
    const issued = new Map<string, number>();
    for (const f of FEEDS) {
      const [{ max }] = await sql.unsafe<{ max: string }[]>(`SELECT max(${f.column}) AS max FROM ${f.table}`);
      issued.set(f.clock, Math.max(issued.get(f.clock) ?? 0, Number(max)));
      await sql.unsafe(
        `DELETE FROM ${f.table} WHERE project_id = 'p-b' AND ${f.column} = (SELECT max(${f.column}) FROM ${f.table})`,
      );
    }

    // migrated by the plane at its start
    const plane = await openTestPlaneDatabase({ url: tdb.url });
    try {
      const clocks = await sql<{ project_id: string; clock: string; value: string }[]>`
        SELECT project_id, clock, value FROM project_clocks ORDER BY project_id, clock`;
      expect(clocks.map((c) => `${c.project_id} ${c.clock}`)).toEqual(
        ['p-a', 'p-b', 'p-empty'].flatMap((p) =>
          ['changes', 'conflicts', 'decisions', 'pauses', 'quarantine', 'requests'].map((c) => `${p} ${c}`),
        ),
      );
      for (const c of clocks)
        expect(Number(c.value), `${c.project_id} ${c.clock}`).toBeGreaterThanOrEqual(issued.get(c.clock)!);
      const [{ n }] = await sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname = 'public' AND c.relkind = 'S'`;
      expect(n, 'sequences left').toBe(0);

      // keys drawn after the migration, in a project with rows and in one without: above every key issued before
      for (const project of ['p-b', 'p-empty']) {
        const { projectId } = await createKey(plane.db, { project, scopes: ['ingest'] });
        const run = `${project}-after`;
        const rows = await eventsOf(async (s) => {
          await s.put(step(run, 0));
          await s.recordInterrupt(pause(run, 1) as never, { reason: 'approve', context: {} } as never);
        }, 'w-after');
        const out = await ingestBatch(plane.db, projectId, 'w-after', undefined, [
          ...rows,
          { kind: 'checkpoint', id: 'refused' },
        ]);
        expect(out.rejected).toBe(1);
        const feed = await changeFeed(plane.db, projectId, issued.get('changes')!, 10);
        expect(feed.items.map((i) => i.executionId)).toEqual([run]);
        const [q] = await sql<
          { id: string }[]
        >`SELECT id FROM quarantine WHERE project_id = ${projectId} AND row_id = 'refused'`;
        expect(Number(q.id)).toBeGreaterThan(issued.get('quarantine')!);
        const [o] = await sql<{ opened_seq: string }[]>`
          SELECT opened_seq FROM pending_interrupts WHERE project_id = ${projectId} AND execution_id = ${run}`;
        expect(Number(o.opened_seq)).toBeGreaterThan(issued.get('pauses')!);
      }

      // a plane of the version before, still running beside the migrated database, fails its writes: its stamps
      // (nextval of the column's sequence, gone: NULL) and its inserts that took the sequence's default are refused,
      // never committed as a row no feed shows
      const older = [
        sql`UPDATE executions SET change_seq = nextval(pg_get_serial_sequence('executions', 'change_seq'))
            WHERE project_id = 'p-a'`,
        sql`INSERT INTO executions (project_id, execution_id, status) VALUES ('p-a', 'older-run', 'running')`,
        sql`INSERT INTO execution_tombstones (project_id, execution_id, writer_id, change_seq)
            VALUES ('p-a', 'older-gone', 'w', nextval(pg_get_serial_sequence('executions', 'change_seq')))`,
        sql`INSERT INTO quarantine (project_id, writer_id, code, reason, payload) VALUES ('p-a', 'w', 'invalid', 'r', '{}')`,
        sql`INSERT INTO pending_interrupts (project_id, execution_id, checkpoint_id, row, state)
            VALUES ('p-a', 'older-run', 'older-cp', '{}', 'open')`,
      ];
      for (const statement of older) await expect(statement).rejects.toMatchObject({ code: '23502' });
    } finally {
      await plane.close();
    }
  }, 60_000);
});
