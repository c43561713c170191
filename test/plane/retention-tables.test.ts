/**
 * Retention over every table that holds a run's data, project by project in bounded transactions, on PGlite and
 * on Postgres: a pruned run leaves no row in any table keyed by (project_id, execution_id); a finished run with an
 * open pause, a held claim or a held owner is kept; a cancelled run is finished like a completed one; each prune
 * transaction touches one project and at most PRUNE_BATCH runs, seen by a trigger on every run table that records
 * each deleted row with its transaction id; a dry run lists what the prune deletes and deletes nothing.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTableColumns, getTableName, is, sql } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import { rowsOf } from '../../plane/db/open.js';
import * as schema from '../../plane/db/schema.js';
import { PRUNE_BATCH, pruneRuns, RUN_TABLES } from '../../plane/retention.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, step } from '../helpers/rows.js';

const pg = await pgReady('retention tables on postgres');
const DAY = 86_400;

/**
 * Every table of the schema with both a `project_id` and an `execution_id` column (`projectId`, `executionId`: the
 * schema's names, snake-cased by the database handle): the tables of a run's data.
 */
const TABLES_OF_A_RUN = (Object.values(schema).filter((t) => is(t, PgTable)) as PgTable[]).filter((t) => {
  const columns = getTableColumns(t);
  return 'projectId' in columns && 'executionId' in columns;
});

describe('the one list of run tables', () => {
  it("every schema table with project_id and execution_id is in retention's RUN_TABLES (the summary, executions, deleted first)", () => {
    const derived = TABLES_OF_A_RUN.map(getTableName)
      .filter((n) => n !== 'executions')
      .sort();
    expect(derived.length).toBeGreaterThanOrEqual(14);
    expect(RUN_TABLES.map(getTableName).sort()).toEqual(derived);
  });
});

let counter = 1_000_000;
/** A value for every column without a default: unique text and numbers, an applied claim, a non-open pause, a released owner. */
function rowFor(t: PgTable, projectId: string, executionId: string): Record<string, unknown> {
  const row: Record<string, unknown> = { projectId, executionId };
  for (const [key, c] of Object.entries(getTableColumns(t))) {
    if (key in row || c.hasDefault) continue;
    const type = c.columnType;
    if (type === 'PgText') row[key] = `${getTableName(t)}.${key}.${executionId}.${counter++}`;
    else if (type === 'PgInteger' || type === 'PgBigInt53') row[key] = counter++;
    else if (type === 'PgJsonb') row[key] = {};
    else if (type === 'PgBoolean') row[key] = false;
    else if (type === 'PgTimestamp') row[key] = new Date();
    else throw new Error(`rowFor: no value for ${getTableName(t)}.${key} (${type})`);
  }
  return row;
}

function retentionTablesSuite(name: string, kind: () => 'pglite' | { url: string }) {
  describe(`retention over every run table on ${name}`, () => {
    let plane: TestPlane;
    const keys: Record<string, { admin: string; ingest: string }> = {};
    const projectIds: Record<string, string> = {};
    const q = async <T>(query: ReturnType<typeof sql>) => rowsOf<T>(await plane.database.db.execute(query));

    async function project(name: string) {
      keys[name] = { admin: await plane.key(name, ['admin']), ingest: await plane.key(name, ['ingest']) };
      const [{ id }] = await q<{ id: string }>(sql`SELECT id FROM projects WHERE name = ${name}`);
      projectIds[name] = id;
    }
    /** A run ingested as a writer sends it: its first row, then a run_end marker or a cancel. */
    async function ingestRun(projectName: string, id: string, end: 'completed' | 'failed' | 'cancelled') {
      const rows = await eventsOf(async (s) => {
        await s.put(step(id, 0));
        if (end === 'cancelled') await s.cancel(id, { reason: 'no longer needed' });
        else await s.put({ ...step(id, 1), nodeId: 'run_end', step: 'run_end', status: end });
      }, `w-${id}`);
      const r = await call(`${plane.url}/v1/ingest`, {
        key: keys[projectName].ingest,
        json: { protocol: 1, writerId: `w-${id}`, rows },
      });
      expect([r.status, r.body.rejected]).toEqual([200, 0]);
    }
    /** A row in every run table the run has none in yet. */
    async function fillEveryTable(projectName: string, id: string) {
      const projectId = projectIds[projectName];
      for (const t of TABLES_OF_A_RUN) {
        const [{ n }] = await q<{ n: number }>(
          sql`SELECT count(*)::int AS n FROM ${t} WHERE project_id = ${projectId} AND execution_id = ${id}`,
        );
        if (!n) await plane.database.db.insert(t).values(rowFor(t, projectId, id) as never);
      }
    }
    /** How many rows of the run each run table holds. */
    async function rowsOfRun(projectName: string, id: string) {
      const out: Record<string, number> = {};
      for (const t of TABLES_OF_A_RUN) {
        const [{ n }] = await q<{ n: number }>(
          sql`SELECT count(*)::int AS n FROM ${t} WHERE project_id = ${projectIds[projectName]} AND execution_id = ${id}`,
        );
        out[getTableName(t)] = n;
      }
      return out;
    }
    const age = (projectName: string, days: number) =>
      q(
        sql`UPDATE executions SET updated_at = now() - ${days} * interval '1 day' WHERE project_id = ${projectIds[projectName]}`,
      );
    const prune = async (projectName: string, dryRun = false) => {
      const r = await call(`${plane.url}/v1/admin/prune`, {
        key: keys[projectName].admin,
        json: { olderThanSeconds: 30 * DAY, dryRun },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (r.body.items as { executionId: string }[]).map((i) => i.executionId).sort();
    };

    beforeAll(async () => {
      plane = await startTestPlane(kind());
      for (const p of ['every', 'kept', 'dry']) await project(p);
    }, 120_000);
    afterAll(async () => plane?.close());

    it('a finished run with rows in every run table is pruned from all of them; a cancelled run is finished too', async () => {
      await ingestRun('every', 'done-old', 'completed');
      await ingestRun('every', 'cancelled-old', 'cancelled');
      await ingestRun('every', 'done-recent', 'completed');
      for (const id of ['done-old', 'cancelled-old', 'done-recent']) await fillEveryTable('every', id);
      await age('every', 40);
      await q(sql`UPDATE executions SET updated_at = now() WHERE execution_id = 'done-recent'`);
      const before = await rowsOfRun('every', 'done-old');
      expect(Object.entries(before).filter(([, n]) => n === 0)).toEqual([]);

      expect(await prune('every')).toEqual(['cancelled-old', 'done-old']);
      for (const id of ['done-old', 'cancelled-old']) {
        const left = Object.entries(await rowsOfRun('every', id)).filter(([, n]) => n > 0);
        expect(left, `rows of ${id} left`).toEqual([]);
      }
      expect(Object.entries(await rowsOfRun('every', 'done-recent')).filter(([, n]) => n === 0)).toEqual([]);
    });

    it('a finished run with an open pause, a held claim or a held owner is kept; an expired owner, a held owner without an expiry or a claim older than the age does not keep it', async () => {
      for (const id of [
        'open-pause',
        'held-claim',
        'held-owner',
        'expired-owner',
        'owner-no-expiry',
        'old-claim',
        'plain',
      ])
        await ingestRun('kept', id, 'completed');
      const projectId = projectIds.kept;
      await plane.database.db
        .insert(schema.pendingInterrupts)
        .values({ ...rowFor(schema.pendingInterrupts, projectId, 'open-pause'), state: 'open' } as never);
      await plane.database.db
        .insert(schema.claims)
        .values({ ...rowFor(schema.claims, projectId, 'held-claim'), appliedAt: null } as never);
      // a claim never applied, from before the age (a pause a cancel closed under it): it holds nothing any more
      await plane.database.db.insert(schema.claims).values({
        ...rowFor(schema.claims, projectId, 'old-claim'),
        appliedAt: null,
        claimedAt: new Date(Date.now() - 400 * DAY * 1000),
      } as never);
      await q(
        sql`UPDATE run_owners SET state = 'held', expires_at = now() + interval '1 hour' WHERE project_id = ${projectId} AND execution_id = 'held-owner'`,
      );
      // held with no expiry: not live, as owners.ts judges a hold
      await q(
        sql`UPDATE run_owners SET state = 'held', expires_at = NULL WHERE project_id = ${projectId} AND execution_id = 'owner-no-expiry'`,
      );
      await q(
        sql`UPDATE run_owners SET state = 'held', expires_at = now() - interval '1 hour' WHERE project_id = ${projectId} AND execution_id = 'expired-owner'`,
      );
      await age('kept', 40);
      expect(await prune('kept')).toEqual(['expired-owner', 'old-claim', 'owner-no-expiry', 'plain']);
      for (const id of ['open-pause', 'held-claim', 'held-owner']) {
        const rows = await rowsOfRun('kept', id);
        expect(rows.executions, id).toBe(1);
        expect(rows.checkpoints, id).toBe(2);
      }
    });

    it('a dry run lists exactly the runs the prune then deletes, and deletes nothing', async () => {
      for (const [id, end] of [
        ['dry-done', 'completed'],
        ['dry-failed', 'failed'],
        ['dry-cancelled', 'cancelled'],
        ['dry-held', 'completed'],
      ] as const) {
        await ingestRun('dry', id, end);
        await fillEveryTable('dry', id);
      }
      await plane.database.db
        .insert(schema.claims)
        .values({ ...rowFor(schema.claims, projectIds.dry, 'dry-held'), appliedAt: null } as never);
      await age('dry', 40);
      const snapshot = async () => {
        const out: Record<string, Record<string, number>> = {};
        for (const id of ['dry-done', 'dry-failed', 'dry-cancelled', 'dry-held']) out[id] = await rowsOfRun('dry', id);
        return out;
      };
      const before = await snapshot();
      const listed = await prune('dry', true);
      expect(listed).toEqual(['dry-cancelled', 'dry-done', 'dry-failed']);
      expect(await snapshot()).toEqual(before);
      expect(await prune('dry')).toEqual(listed);
    });

    // last: it prunes every project
    it('two projects of more runs than one batch each: every transaction touches one project and at most PRUNE_BATCH runs', async () => {
      const n = PRUNE_BATCH + PRUNE_BATCH / 2;
      for (const p of ['bulk-a', 'bulk-b']) {
        await project(p);
        const id = projectIds[p];
        await q(sql`
          INSERT INTO executions (project_id, execution_id, change_seq, status, row_count, last_seq, updated_at)
          SELECT ${id}, 'bulk-' || g, -g, 'completed', 1, 0, now() - interval '40 days' FROM generate_series(1, ${n}::int) g`);
        await q(sql`
          INSERT INTO checkpoints (project_id, id, execution_id, seq, node_id, step, status, agent_path, writer_id, created_at, row, hash)
          SELECT ${id}, 'cp-' || g, 'bulk-' || g, 0, 'turn:0', 'llm_call', 'completed', 'agent:t', 'w', '2026-01-01T00:00:00Z', '{}'::jsonb, 'h'
          FROM generate_series(1, ${n}::int) g`);
        await q(sql`
          INSERT INTO events (project_id, id, kind, execution_id, writer_id, hash)
          SELECT ${id}, 'ev-' || g, 'execution_deleted', 'bulk-' || g, 'w', 'h' FROM generate_series(1, ${n}::int) g`);
      }
      // every deleted row of a run table, with the transaction that deleted it: the database's own record
      await q(
        sql`CREATE TABLE prune_trace (txid bigint NOT NULL, tbl text NOT NULL, project_id text, execution_id text)`,
      );
      await q(
        sql.raw(`CREATE FUNCTION prune_trace() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN INSERT INTO prune_trace VALUES (txid_current(), TG_TABLE_NAME, OLD.project_id, OLD.execution_id); RETURN OLD; END $$`),
      );
      for (const t of TABLES_OF_A_RUN)
        await q(
          sql.raw(
            `CREATE TRIGGER prune_trace AFTER DELETE ON "${getTableName(t)}" FOR EACH ROW EXECUTE FUNCTION prune_trace()`,
          ),
        );
      try {
        const batches: { project: string; runs: number }[] = [];
        const r = await pruneRuns(
          plane.database.db,
          { projectId: '', keyId: '', scopes: ['admin', 'operator'] },
          {
            olderThanSeconds: 30 * DAY,
            onBatch: (b) => batches.push({ project: b.project, runs: b.items.length }),
          },
        );
        // what the database saw: each transaction's deleted rows are of one project and of at most PRUNE_BATCH runs
        const txs = await q<{ txid: string; projects: number; runs: number }>(sql`
          SELECT txid::text, count(DISTINCT project_id)::int AS projects, count(DISTINCT execution_id)::int AS runs
          FROM prune_trace GROUP BY txid`);
        for (const tx of txs) {
          expect(tx.projects, `projects of transaction ${tx.txid}`).toBe(1);
          expect(tx.runs, `runs of transaction ${tx.txid}`).toBeLessThanOrEqual(PRUNE_BATCH);
        }
        const bulkTxs = await q<{ txs: number }>(sql`
          SELECT count(DISTINCT txid)::int AS txs FROM prune_trace
          WHERE project_id IN (${projectIds['bulk-a']}, ${projectIds['bulk-b']}) GROUP BY project_id`);
        expect(bulkTxs.map((x) => x.txs)).toEqual([2, 2]);
        for (const p of ['bulk-a', 'bulk-b']) {
          expect(r.items.filter((i) => i.project === p)).toHaveLength(n);
          expect(batches.filter((b) => b.project === p).map((b) => b.runs)).toEqual([PRUNE_BATCH, n - PRUNE_BATCH]);
          const [{ left }] = await q<{ left: number }>(
            sql`SELECT (SELECT count(*) FROM executions WHERE project_id = ${projectIds[p]})::int
                     + (SELECT count(*) FROM checkpoints WHERE project_id = ${projectIds[p]})::int
                     + (SELECT count(*) FROM events WHERE project_id = ${projectIds[p]})::int AS left`,
          );
          expect(left, p).toBe(0);
        }
      } finally {
        for (const t of TABLES_OF_A_RUN) await q(sql.raw(`DROP TRIGGER prune_trace ON "${getTableName(t)}"`));
        await q(sql`DROP FUNCTION prune_trace()`);
        await q(sql`DROP TABLE prune_trace`);
      }
    }, 120_000);
  });
}

retentionTablesSuite('PGlite', () => 'pglite');
describe.skipIf(!pg)('on Postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_retention_tables');
  });
  afterAll(async () => db?.drop());
  retentionTablesSuite('Postgres', () => ({ url: db.url }));
});

describe.skipIf(!pg)('retention beside a late row (Postgres)', () => {
  let db: TestDatabase;
  let plane: TestPlane;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_retention_lock_order');
    plane = await startTestPlane({ url: db.url });
  }, 120_000);
  afterAll(async () => {
    await plane?.close();
    await db?.drop();
  });

  it('a prune and an ingest of a late row of one run lock in one order: neither deadlocks, and the run is kept', async () => {
    const ingest = await plane.key('late', ['ingest']);
    const id = 'late-row';
    const rows = await eventsOf(async (s) => {
      await s.put(step(id, 0));
      await s.put({ ...step(id, 1), nodeId: 'run_end', step: 'run_end', status: 'completed' });
    }, 'w1');
    expect(
      (await call(`${plane.url}/v1/ingest`, { key: ingest, json: { protocol: 1, writerId: 'w1', rows } })).status,
    ).toBe(200);
    const [{ projectId }] = rowsOf<{ projectId: string }>(
      await plane.database.db.execute(sql`SELECT id AS "projectId" FROM projects WHERE name = 'late'`),
    );
    await plane.database.db.execute(sql`UPDATE executions SET updated_at = now() - interval '40 days'`);
    const other = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      let locked: () => void = () => {};
      const ownerLocked = new Promise<void>((r) => (locked = r));
      // as ingest does for a late row: the run's owner record first, its summary last
      const late = other.begin(async (tx) => {
        await tx`SELECT 1 FROM run_owners WHERE project_id = ${projectId} AND execution_id = ${id} FOR UPDATE`;
        locked();
        await new Promise((r) => setTimeout(r, 500));
        await tx`UPDATE executions SET updated_at = now() WHERE project_id = ${projectId} AND execution_id = ${id}`;
      });
      await ownerLocked;
      const pruned = pruneRuns(
        plane.database.db,
        { projectId: '', keyId: '', scopes: ['admin', 'operator'] },
        { olderThanSeconds: 30 * DAY },
      );
      const [p, l] = await Promise.allSettled([pruned, late]);
      expect(p.status === 'rejected' ? String(p.reason) : 'ok').toBe('ok');
      expect(l.status === 'rejected' ? String(l.reason) : 'ok').toBe('ok');
      // the prune waited for the late row's transaction, then found the run updated: kept whole
      expect(p.status === 'fulfilled' && p.value.items).toEqual([]);
      const [{ n }] = rowsOf<{ n: number }>(
        await plane.database.db.execute(sql`SELECT count(*)::int AS n FROM checkpoints WHERE execution_id = ${id}`),
      );
      expect(n).toBe(2);
    } finally {
      await other.end({ timeout: 2 });
    }
  }, 120_000);
});
