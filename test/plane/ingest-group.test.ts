/**
 * One project's batches commit together (plane/ingest.ts, plane/group-commit.ts): batches that arrive while
 * `INGEST_IN_FLIGHT` of the project's transactions are under way in this plane process go together in the next
 * one, each applied as if alone (its own answer, its own failure), and a transaction refused as a whole is tried
 * again batch by batch. Counted by the group commit's own counts and checked against what the plane stores, on
 * PGlite and on Postgres; on Postgres a reader paging the change feed while the first transaction is held sees none
 * of the batches waiting behind it.
 */
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import { changeFeed } from '../../plane/changes.js';
import { type PlaneDatabase, rowsOf } from '../../plane/db/open.js';
import { INGEST_IN_FLIGHT, ingestBatch, ingestStats } from '../../plane/ingest.js';
import { listQuarantine } from '../../plane/reads/quarantine.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, step } from '../helpers/rows.js';
import { until } from '../helpers/until.js';

const pg = await pgReady('ingest group commit on postgres');
const BATCHES = 24;

/** A run's first `turns` rows, as its writer's drain sends them. */
function runRows(run: string, writerId: string, turns = 2): Promise<OutboxEvent[]> {
  return eventsOf(async (s) => {
    for (let i = 0; i < turns; i++) await s.put(step(run, i));
  }, writerId);
}

/** Every change the project's feed lists, in its order. */
async function feedOf(db: PlaneDatabase['db'], projectId: string): Promise<string[]> {
  const seen: string[] = [];
  let after = 0;
  for (;;) {
    const page = await changeFeed(db, projectId, after, 1000);
    if (!page.items.length) return seen;
    seen.push(...page.items.map((i) => i.executionId));
    after = Number(page.nextCursor);
  }
}

async function rowCounts(db: PlaneDatabase['db'], projectId: string): Promise<Map<string, number>> {
  const got = await db.execute<{ execution_id: string; n: number; summary: number }>(sql`
    SELECT c.execution_id, count(*)::int AS n, max(e.row_count)::int AS summary
    FROM checkpoints c JOIN executions e USING (project_id, execution_id)
    WHERE c.project_id = ${projectId} GROUP BY c.execution_id`);
  const rows = rowsOf<{ execution_id: string; n: number; summary: number }>(got);
  for (const r of rows) expect(r.summary, `the summary of ${r.execution_id} counts its rows`).toBe(r.n);
  return new Map(rows.map((r) => [r.execution_id, r.n]));
}

/**
 * Run `fn` with a row trigger on `table` that raises `message` when `when` holds of NEW (`timing`: BEFORE/AFTER and
 * the events), dropped after: a failure put exactly where a test needs it, on PGlite and Postgres alike.
 */
async function withFailure<T>(
  db: PlaneDatabase['db'],
  o: { table: string; timing: string; when: string; message: string },
  fn: () => Promise<T>,
): Promise<T> {
  await db.execute(
    sql.raw(`
      CREATE OR REPLACE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF ${o.when} THEN RAISE EXCEPTION '${o.message}'; END IF;
        RETURN NEW;
      END $$`),
  );
  await db.execute(
    sql.raw(`CREATE TRIGGER test_fail ${o.timing} ON ${o.table} FOR EACH ROW EXECUTE FUNCTION test_fail()`),
  );
  try {
    return await fn();
  } finally {
    await db.execute(sql.raw(`DROP TRIGGER test_fail ON ${o.table}`));
  }
}

const kinds: ('pglite' | 'postgres')[] = pg ? ['pglite', 'postgres'] : ['pglite'];

describe.each(kinds)('ingest group commit (%s)', (kind) => {
  let tdb: TestDatabase | null = null;
  let plane: PlaneDatabase;
  beforeAll(async () => {
    if (kind === 'postgres') tdb = await createTestDatabase('waymark_ingest_group');
    plane = await openTestPlaneDatabase(tdb ? { url: tdb.url } : 'pglite');
  });
  afterAll(async () => {
    await plane?.close();
    await tdb?.drop();
  });

  it(`${BATCHES} batches sent at once: the first ${INGEST_IN_FLIGHT} commit alone, the rest in one transaction, each answered and stored as if alone`, async () => {
    const { db } = plane;
    const { projectId } = await createKey(db, { project: 'together', scopes: ['ingest'], createProject: true });
    const batches = await Promise.all(
      Array.from({ length: BATCHES }, (_, i) => runRows(`run-${i}`, `w-${String(i).padStart(2, '0')}`)),
    );
    // one batch repeats another's row with a different payload, one sends a row the plane refuses, one repeats a row
    const copied = batches[6][0] as Extract<OutboxEvent, { kind: 'checkpoint' }>;
    batches[8] = [...batches[8], { ...copied, row: { ...copied.row, nodeId: 'other' } }];
    batches[7] = [...batches[7], { kind: 'checkpoint', id: 'bad-7' } as unknown as OutboxEvent];
    batches[9] = [...batches[9], batches[9][0]];
    const before = ingestStats(db);
    // sent in one tick: the first ones start their transactions at once, the rest wait for them and go together
    const answers = await Promise.all(
      batches.map((rows, i) => ingestBatch(db, projectId, `w-${String(i).padStart(2, '0')}`, undefined, rows)),
    );
    const after = ingestStats(db);
    expect(after.transactions - before.transactions, 'transactions').toBe(INGEST_IN_FLIGHT + 1);
    expect(after.batches - before.batches).toBe(BATCHES);
    expect(after.largest).toBe(BATCHES - INGEST_IN_FLIGHT);
    expect(after.apart - before.apart).toBe(0);
    answers.forEach((a, i) => {
      const extra = i === 7 || i === 8 || i === 9 ? 1 : 0;
      expect(a.results, `batch ${i}`).toHaveLength(2 + extra);
      expect(a.accepted, `batch ${i}`).toBe(2);
      expect(a.rejected, `batch ${i}`).toBe(i === 7 || i === 8 ? 1 : 0);
      expect(a.duplicate, `batch ${i}`).toBe(i === 9 ? 1 : 0);
    });
    // batch 6 came before batch 8 in the group (writer order): 8's copy of 6's row lost to 6's own
    expect(answers[8].results[2]).toMatchObject({ status: 'rejected', code: 'conflict' });
    expect(answers[7].results[2]).toMatchObject({ status: 'rejected', code: 'invalid' });
    const counts = await rowCounts(db, projectId);
    expect(counts.size).toBe(BATCHES);
    for (const [, n] of counts) expect(n).toBe(2);
    const feed = await feedOf(db, projectId);
    expect(feed.toSorted()).toEqual(batches.map((_, i) => `run-${i}`).toSorted());
    const quarantined = await listQuarantine(db, projectId, { limit: 10 });
    expect(quarantined.items.map((q) => q.rowId).toSorted()).toEqual([batches[6][0].id, 'bad-7'].toSorted());
    const acked = await db.execute<{ n: number }>(
      sql`SELECT sum(rows_acked)::int AS n FROM writers WHERE project_id = ${projectId}`,
    );
    const [{ n }] = rowsOf<{ n: number }>(acked);
    expect(n, 'rows counted on the writers').toBe(2 * BATCHES);
  }, 60_000);

  it('a batch that fails late in its group fails alone, leaving nothing of it; the others commit', async () => {
    const { db } = plane;
    const { projectId } = await createKey(db, { project: 'one-fails', scopes: ['ingest'], createProject: true });
    const runs = await Promise.all(
      Array.from({ length: INGEST_IN_FLIGHT + 4 }, (_, i) => runRows(`f-${i}`, `w-${i}`, 3)),
    );
    // every run's first row is on the plane; the group brings the next two of each
    for (const [i, rows] of runs.entries()) await ingestBatch(db, projectId, `w-${i}`, undefined, rows.slice(0, 1));
    // one of the group's batches (those after the first INGEST_IN_FLIGHT) fails at its last statement, after adding
    // rows to its run and quarantining a refused row; the batch after it refuses a row too
    const doomed = INGEST_IN_FLIGHT + 1;
    const batches = runs.map((rows, i) => [
      ...rows.slice(1),
      ...(i === doomed || i === doomed + 1 ? [{ kind: 'checkpoint', id: `bad-${i}` }] : []),
    ]);
    await withFailure(
      db,
      {
        table: 'writers',
        timing: 'BEFORE INSERT OR UPDATE',
        when: `NEW.writer_id = 'w-${doomed}'`,
        message: 'doomed batch',
      },
      async () => {
        const before = ingestStats(db);
        const answers = await Promise.allSettled(
          batches.map((rows, i) => ingestBatch(db, projectId, `w-${i}`, undefined, rows)),
        );
        // one transaction for the group, its doomed batch rolled back to its savepoint: none tried again alone
        const after = ingestStats(db);
        expect(after.transactions - before.transactions).toBe(INGEST_IN_FLIGHT + 1);
        expect(after.apart - before.apart, 'batches tried again alone').toBe(0);
        expect(after.batches - before.batches).toBe(batches.length - 1);
        answers.forEach((a, i) => {
          if (i === doomed)
            expect(
              a.status === 'rejected' && String((a.reason as { cause?: unknown }).cause ?? a.reason),
              'the doomed batch',
            ).toMatch(/doomed batch/);
          else {
            expect(a.status === 'fulfilled' && a.value.accepted, `batch ${i}`).toBe(2);
            expect(a.status === 'fulfilled' && a.value.rejected, `batch ${i}`).toBe(i === doomed + 1 ? 1 : 0);
          }
        });
        // each summary counts its run's rows (the doomed batch's rows, counted in its savepoint, were not kept)
        const counts = await rowCounts(db, projectId);
        expect(Object.fromEntries(counts)).toEqual(
          Object.fromEntries(runs.map((_, i) => [`f-${i}`, i === doomed ? 1 : 3])),
        );
        // one quarantine record, the project's first id: the doomed batch's record left no key drawn behind it
        const q = rowsOf<{ id: number; row_id: string }>(
          await db.execute(sql`SELECT id::int AS id, row_id FROM quarantine WHERE project_id = ${projectId}`),
        );
        expect(q).toEqual([{ id: 1, row_id: `bad-${doomed + 1}` }]);
        const acked = rowsOf<{ writer_id: string; rows_acked: number; rows_rejected: number }>(
          await db.execute(sql`
          SELECT writer_id, rows_acked::int, rows_rejected::int FROM writers
          WHERE project_id = ${projectId} AND writer_id IN (${`w-${doomed}`}, ${`w-${doomed + 1}`}) ORDER BY writer_id`),
        );
        expect(acked, "the doomed batch's writer keeps what it had").toEqual([
          { writer_id: `w-${doomed}`, rows_acked: 1, rows_rejected: 0 },
          { writer_id: `w-${doomed + 1}`, rows_acked: 3, rows_rejected: 1 },
        ]);
      },
    );
  }, 60_000);

  it.skipIf(kind !== 'postgres')(
    "a run whose owner record another transaction holds holds up its own batches only, not its project's others",
    async () => {
      const { db } = plane;
      const { projectId } = await createKey(db, { project: 'held-owner', scopes: ['ingest'], createProject: true });
      const held = await runRows('held-run', 'w-held', 3);
      await ingestBatch(db, projectId, 'w-held', undefined, held.slice(0, 1));
      const others = await Promise.all(Array.from({ length: 20 }, (_, i) => runRows(`free-${i}`, `w-free-${i}`)));
      const sqlc = postgres(tdb!.url, { max: 2, onnotice: () => {} });
      try {
        const heldAnswers = await sqlc.begin(async (blocker) => {
          await blocker`SELECT 1 FROM run_owners WHERE project_id = ${projectId} AND execution_id = 'held-run' FOR UPDATE`;
          // the held run's batches first, more of them than the project's transactions under way at once
          const waiting = Array.from({ length: INGEST_IN_FLIGHT + 1 }, () =>
            ingestBatch(db, projectId, 'w-held', undefined, held.slice(1)),
          );
          let settled = 0;
          for (const w of waiting)
            void w.then(
              () => settled++,
              () => settled++,
            );
          const answers = await Promise.all(
            others.map((rows, i) => ingestBatch(db, projectId, `w-free-${i}`, undefined, rows)),
          );
          for (const a of answers) expect(a.accepted).toBe(2);
          expect(settled, "the held run's batches, while its owner record is held").toBe(0);
          // they wait one after another: one transaction waits for the record, whatever the number of its batches
          const waitingOnLocks = async () =>
            (
              await sqlc<{ n: number }[]>`
                SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock'`
            )[0].n;
          await until('a transaction waits for the held record', async () => (await waitingOnLocks()) > 0);
          await new Promise((r) => setTimeout(r, 200));
          expect(await waitingOnLocks(), 'transactions waiting for the held record').toBe(1);
          return waiting;
        });
        const answers = await Promise.all(heldAnswers);
        // one of them stored the two rows; the others found them stored
        expect(answers.map((a) => a.accepted).toSorted()).toEqual([...Array(INGEST_IN_FLIGHT).fill(0), 2]);
        for (const a of answers) expect(a.accepted + a.duplicate).toBe(2);
        expect((await rowCounts(db, projectId)).get('held-run')).toBe(3);
      } finally {
        await sqlc.end({ timeout: 2 });
      }
    },
    60_000,
  );

  it('a group whose transaction fails as a whole is tried again batch by batch', async () => {
    const { db } = plane;
    const { projectId } = await createKey(db, { project: 'apart', scopes: ['ingest'], createProject: true });
    // the project's change clock exists; then any transaction stamping more than one run fails (a group of these
    // batches does, each alone does not)
    await ingestBatch(db, projectId, 'w-first', undefined, await runRows('first', 'w-first'));
    const batches = await Promise.all(
      Array.from({ length: INGEST_IN_FLIGHT + 6 }, (_, i) => runRows(`a-${i}`, `w-${i}`)),
    );
    await withFailure(
      db,
      {
        table: 'project_clocks',
        timing: 'BEFORE UPDATE',
        when: "NEW.clock = 'changes' AND NEW.value - OLD.value > 1",
        message: 'more than one run',
      },
      async () => {
        const before = ingestStats(db);
        const answers = await Promise.all(
          batches.map((rows, i) => ingestBatch(db, projectId, `w-${i}`, undefined, rows)),
        );
        for (const a of answers) expect(a.accepted).toBe(2);
        // the first INGEST_IN_FLIGHT alone, then the rest as a group whose transaction failed, each of them alone
        const after = ingestStats(db);
        expect(after.apart - before.apart, 'batches tried again alone').toBe(batches.length - INGEST_IN_FLIGHT);
        expect(after.transactions - before.transactions).toBe(batches.length);
        const counts = await rowCounts(db, projectId);
        expect(counts.size).toBe(batches.length + 1);
        for (const [, n] of counts) expect(n).toBe(2);
        expect((await feedOf(db, projectId)).toSorted()).toEqual([...counts.keys()].toSorted());
      },
    );
  }, 60_000);

  it.skipIf(kind !== 'postgres')(
    'batches waiting behind a held transaction commit after it, and a reader meanwhile sees none of them',
    async () => {
      const { db } = plane;
      const { projectId } = await createKey(db, { project: 'held', scopes: ['ingest'], createProject: true });
      await ingestBatch(db, projectId, 'w-early', undefined, await runRows('early', 'w-early'));
      const held = await runRows('held', 'w-held');
      const waiting = await Promise.all(Array.from({ length: 6 }, (_, i) => runRows(`later-${i}`, `w-l${i}`)));
      const sqlc = postgres(tdb!.url, { max: 2, onnotice: () => {} });
      try {
        await sqlc`CREATE TABLE test_barrier (n int)`;
        await sqlc`INSERT INTO test_barrier VALUES (1)`;
        // the held batch's transaction, after drawing its change keys, waits on the barrier row
        await sqlc.unsafe(`
          CREATE FUNCTION test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF NEW.execution_id = 'held' AND NEW.change_seq > 0 THEN PERFORM 1 FROM test_barrier FOR UPDATE; END IF;
            RETURN NEW;
          END $$`);
        await sqlc.unsafe(
          'CREATE TRIGGER test_hold AFTER UPDATE ON executions FOR EACH ROW EXECUTE FUNCTION test_hold()',
        );
        const answers = await sqlc.begin(async (blocker) => {
          await blocker`SELECT 1 FROM test_barrier FOR UPDATE`;
          const first = ingestBatch(db, projectId, 'w-held', undefined, held);
          await until('the held transaction waits on the barrier', async () => {
            const [w] = await sqlc<{ n: number }[]>`
              SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'`;
            return w.n > 0;
          });
          const rest = waiting.map((rows, i) => ingestBatch(db, projectId, `w-l${i}`, undefined, rows));
          // the first INGEST_IN_FLIGHT - 1 of them started transactions of their own, which wait on the held one's clocks
          expect(ingestStats(db).waiting(projectId), 'batches waiting in this process').toBe(
            waiting.length - (INGEST_IN_FLIGHT - 1),
          );
          expect(await feedOf(db, projectId), 'the feed while the first transaction is held').toEqual(['early']);
          return { first, rest };
        });
        expect((await answers.first).accepted).toBe(2);
        for (const a of await Promise.all(answers.rest)) expect(a.accepted).toBe(2);
        const feed = await feedOf(db, projectId);
        expect(feed.slice(0, 2)).toEqual(['early', 'held']);
        expect(feed.slice(2).toSorted()).toEqual(waiting.map((_, i) => `later-${i}`));
      } finally {
        await sqlc.unsafe('DROP TRIGGER IF EXISTS test_hold ON executions');
        await sqlc.end({ timeout: 2 });
      }
    },
    60_000,
  );
});
