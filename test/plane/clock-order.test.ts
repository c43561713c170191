/**
 * The keys the change feed, the quarantine, the approvals inbox and the decision feed page by are drawn from the
 * project's clocks (plane/clocks.ts) and commit in the order they are drawn. On Postgres a transaction that drew its
 * keys is held before its commit (a statement after the draw waits on a row a test connection locks) while two later
 * ones of the project are sent: they wait for the held one's clock rows, so a reader paging meanwhile sees none of
 * them, and once all commit it finds every entry, the held one's included. Were the keys drawn without holding the
 * clock to commit, the later ones would commit keys above the held one's and the reader would page past its place.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changeFeed } from '../../plane/changes.js';
import { decisionFeed, listPauses, recordDecision } from '../../plane/decisions.js';
import { ingestBatch } from '../../plane/ingest.js';
import { createKey } from '../../plane/auth.js';
import { listQuarantine } from '../../plane/reads/quarantine.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { until } from '../helpers/until.js';

const pg = await pgReady('clock order on postgres');

/** A run paused (its step, then its pause) and a checkpoint the plane refuses (its id `bad-<run>`), as one batch. */
async function pausedAndRefused(executionId: string, writerId: string) {
  const rows = await eventsOf(async (s) => {
    await s.put(step(executionId, 0));
    await s.recordInterrupt(pause(executionId, 1) as never, { reason: 'approve', context: { executionId } } as never);
  }, writerId);
  return [...rows, { kind: 'checkpoint', id: `bad-${executionId}` }];
}

/**
 * A reader of the three listings of a project, each paged one entry at a time from where it stopped: the change
 * feed by its cursor (the last seq seen), the quarantine and the inbox by theirs (a cursor is issued only when
 * more entries follow, so the reader stands on the entry before the newest).
 */
function reader(db: PlaneDatabase['db'], projectId: string) {
  const seen = { changes: [] as string[], quarantine: [] as string[], pauses: [] as string[] };
  let changes = 0;
  const cursors: { quarantine?: string; pauses?: string } = {};
  return {
    seen,
    /** Read one page of each listing; true when any had an entry. */
    async next(): Promise<boolean> {
      const c = await changeFeed(db, projectId, changes, 1);
      seen.changes.push(...c.items.map((i) => i.executionId));
      changes = Number(c.nextCursor);
      const q = await listQuarantine(db, projectId, { cursor: cursors.quarantine, limit: 1 });
      const p = await listPauses(db, projectId, { cursor: cursors.pauses, limit: 1 });
      // an entry at the cursor's end is read again until a later one moves the cursor past it: counted once
      for (const i of q.items) if (!seen.quarantine.includes(i.rowId!)) seen.quarantine.push(i.rowId!);
      for (const i of p.items) if (!seen.pauses.includes(i.executionId)) seen.pauses.push(i.executionId);
      if (q.nextCursor) cursors.quarantine = q.nextCursor;
      if (p.nextCursor) cursors.pauses = p.nextCursor;
      return c.items.length > 0 || Boolean(q.nextCursor) || Boolean(p.nextCursor);
    },
  };
}

describe.skipIf(!pg)('the clocks on postgres: a batch that draws its keys first and commits last', () => {
  let tdb: TestDatabase;
  let plane: PlaneDatabase;
  /**
   * Two more plane processes' handles. Through this process the later batches start transactions of their own (the
   * project has fewer than INGEST_IN_FLIGHT under way); through the others they reach the database whatever that
   * number is.
   */
  let others: PlaneDatabase[];
  let sql: postgres.Sql;
  beforeAll(async () => {
    tdb = await createTestDatabase('waymark_clock_order');
    plane = await openTestPlaneDatabase({ url: tdb.url });
    others = [await openTestPlaneDatabase({ url: tdb.url }), await openTestPlaneDatabase({ url: tdb.url })];
    sql = postgres(tdb.url, { max: 2, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql?.end({ timeout: 2 });
    await plane?.close();
    for (const o of others ?? []) await o.close();
    await tdb?.drop();
  });

  /**
   * Run `first`, whose statement on `table` meeting `when` (a trigger's condition on NEW) waits on a row locked here
   * after the transaction drew its keys; then `later` (each a transaction of the same project), until each has
   * committed or waits on the held one; then `meanwhile` (a reader paging); then the held one is let go and all
   * commit.
   */
  async function holding(
    table: string,
    on: 'INSERT' | 'UPDATE',
    when: string,
    first: () => Promise<unknown>,
    later: (() => Promise<unknown>)[],
    meanwhile: () => Promise<void>,
  ): Promise<void> {
    await sql`CREATE TABLE IF NOT EXISTS test_barrier (n int)`;
    await sql`INSERT INTO test_barrier VALUES (1)`;
    await sql.unsafe(`
      CREATE OR REPLACE FUNCTION test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF ${when} THEN PERFORM 1 FROM test_barrier FOR UPDATE; END IF;
        RETURN NEW;
      END $$`);
    await sql.unsafe(`CREATE TRIGGER test_hold AFTER ${on} ON ${table} FOR EACH ROW EXECUTE FUNCTION test_hold()`);
    const blocker = await sql.reserve();
    let held = true;
    try {
      await blocker`BEGIN`;
      const [{ pid }] = await blocker<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      await blocker`SELECT 1 FROM test_barrier FOR UPDATE`;
      const held1 = first();
      await until('the held transaction waits on the barrier', async () => {
        const [w] = await sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND ${pid}::int = ANY(pg_blocking_pids(pid))`;
        return w.n > 0;
      });
      let done = 0;
      const rest = later.map((f) => f().then(() => done++));
      await until('the later transactions have committed or wait on the held one', async () => {
        if (done === later.length) return true;
        const [w] = await sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0
            AND NOT ${pid}::int = ANY(pg_blocking_pids(pid))`;
        return w.n >= later.length;
      });
      await meanwhile();
      await blocker`COMMIT`;
      held = false;
      await Promise.all([held1, ...rest]);
    } finally {
      if (held) await blocker`ROLLBACK`.catch(() => {});
      blocker.release();
      await sql.unsafe(`DROP TRIGGER IF EXISTS test_hold ON ${table}`);
      await sql`DELETE FROM test_barrier`;
    }
  }

  it.each(['this', 'other'] as const)(
    'holds the later batches until it commits: a reader never pages past its keys (change feed, quarantine, inbox); the later batches through %s plane process(es)',
    async (via) => {
      const { db } = plane;
      const { projectId } = await createKey(db, { project: `clocks-${via}`, scopes: ['ingest'], createProject: true });
      const ingest = async (run: string, through = db) => {
        const writer = `w-${run}`;
        const out = await ingestBatch(through, projectId, writer, undefined, await pausedAndRefused(run, writer));
        expect(out.rejected).toBe(1);
      };
      await ingest('r0');
      await ingest('r1');
      const r = reader(db, projectId);
      expect(await r.next()).toBe(true);
      // the held batch's last stamp (the inbox's, after the change feed's and the quarantine's) waits: it holds every
      // key it drew; two later batches, each a new run of the project, wait on its clocks, or (were the clocks not held
      // to commit) commit keys above its keys
      await holding(
        'pending_interrupts',
        'UPDATE',
        "NEW.execution_id = 'rA' AND NEW.opened_seq > 0",
        () => ingest('rA'),
        [
          () => ingest('rB', via === 'this' ? db : others[0].db),
          () => ingest('rC', via === 'this' ? db : others[1].db),
        ],
        async () => {
          while (await r.next());
          expect.soft(r.seen.changes, 'the change feed, while a batch is held').toEqual(['r0', 'r1']);
        },
      );
      while (await r.next());
      const runs = ['r0', 'r1', 'rA', 'rB', 'rC'];
      expect.soft(r.seen.changes.toSorted(), 'the change feed, paged').toEqual(runs);
      expect.soft(r.seen.quarantine.toSorted(), 'the quarantine, paged').toEqual(runs.map((x) => `bad-${x}`));
      expect.soft(r.seen.pauses.toSorted(), 'the inbox, paged').toEqual(runs);
      // the held batch drew first: its keys are below the later batches'
      expect(r.seen.changes.slice(0, 3)).toEqual(['r0', 'r1', 'rA']);
      const whole = await listQuarantine(db, projectId, { limit: 10 });
      expect(whole.items.map((i) => i.rowId).slice(0, 3)).toEqual(['bad-r0', 'bad-r1', 'bad-rA']);
    },
    60_000,
  );

  it('holds the later recordings until it commits: a follower of the decision feed never pages past its seq', async () => {
    const { db } = plane;
    const { projectId } = await createKey(db, { project: 'decided', scopes: ['ingest'], createProject: true });
    const runs = ['d0', 'd1', 'dA', 'dB', 'dC'];
    for (const run of runs)
      await ingestBatch(db, projectId, `w-${run}`, undefined, await pausedAndRefused(run, `w-${run}`));
    const pauses = new Map(
      (
        await sql<{ execution_id: string; checkpoint_id: string }[]>`
          SELECT execution_id, checkpoint_id FROM pending_interrupts WHERE project_id = ${projectId}`
      ).map((p) => [p.execution_id, p.checkpoint_id]),
    );
    const decide = (run: string) =>
      recordDecision(db, projectId, run, { checkpointId: pauses.get(run), approved: true }, 'approver');
    await decide('d0');
    await decide('d1');
    // a follower, one decision a page, its cursor the last seq it saw
    const seen: string[] = [];
    let after = 0;
    const follow = async () => {
      for (;;) {
        const page = await decisionFeed(db, projectId, after, 1);
        if (!page.items.length) return;
        seen.push(...page.items.map((d) => d.executionId));
        after = Number(page.nextCursor);
      }
    };
    await follow();
    // the held recording drew its seq (its clock's row lock, taken first) and inserted its decision; the later ones
    // wait on that clock, or (were it not held to commit) commit seqs above its seq
    await holding(
      'decisions',
      'INSERT',
      "NEW.execution_id = 'dA'",
      () => decide('dA'),
      [() => decide('dB'), () => decide('dC')],
      async () => {
        await follow();
        expect.soft(seen, 'the decision feed, while a recording is held').toEqual(['d0', 'd1']);
      },
    );
    await follow();
    expect(seen.toSorted(), 'the decision feed, followed').toEqual(runs);
    expect(seen.slice(0, 3)).toEqual(['d0', 'd1', 'dA']);
  }, 60_000);
});
