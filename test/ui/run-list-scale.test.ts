/** The run list with 10,000 runs: paged, and its query served by an index (plan printed). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createPlaneApp } from '../../plane/app.js';
import { createKey } from '../../plane/auth.js';
import { countExecutions, executionsQuery } from '../../plane/reads/executions.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const pg = await pgReady('run list at scale on postgres');

for (const kind of ['pglite', 'postgres'] as const) {
  describe.skipIf(kind === 'postgres' && !pg)(`the run list with 10,000 runs (${kind})`, () => {
    let database: PlaneDatabase;
    let testDb: TestDatabase | null = null;
    let projectId = '';
    let key = '';
    beforeAll(async () => {
      if (kind === 'postgres') testDb = await createTestDatabase('waymark_scale');
      database = await openTestPlaneDatabase(kind === 'pglite' ? 'pglite' : { url: testDb!.url });
      const k = await createKey(database.db, { createProject: true, project: 'big', scopes: ['read'] });
      key = k.key;
      projectId = k.projectId;
      await database.db.execute(sql`
        INSERT INTO executions (project_id, execution_id, change_seq, status, row_count, last_seq, last_node_id, last_step, last_status, writer_id, created_at, updated_at)
        SELECT ${projectId}, 'run-' || lpad(i::text, 5, '0'), -i,
               (ARRAY['running','paused','completed','failed'])[1 + i % 4], 4, 3, 'run_end', 'run_end', 'completed', 'w-' || (i % 7),
               now(), date_trunc('milliseconds', now()) - (i || ' seconds')::interval
        FROM generate_series(1, 10000) AS i`);
      // (change seqs out of the feed's range: these runs are written around the plane, not through it)
      // other projects' runs share the table and must not leak in
      const other = await createKey(database.db, { createProject: true, project: 'other', scopes: ['read'] });
      await database.db.execute(sql`
        INSERT INTO executions (project_id, execution_id, change_seq, status, created_at, updated_at)
        SELECT ${other.projectId}, 'x-' || i, -i, 'running', now(), now() FROM generate_series(1, 2000) AS i`);
      await database.db.execute(sql`ANALYZE executions`);
    });
    afterAll(async () => {
      await database?.close();
      await testDb?.drop();
    });

    it('pages through every run in order, 50 at a time', async () => {
      const { app } = createPlaneApp({ database });
      let cursor: string | null = null;
      const seen: string[] = [];
      let pages = 0;
      do {
        const res: Response = await app.request(`/v1/executions?limit=1000${cursor ? `&cursor=${cursor}` : ''}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        const body = (await res.json()) as { items: { executionId: string }[]; nextCursor: string | null };
        seen.push(...body.items.map((e) => e.executionId));
        cursor = body.nextCursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(10);
      expect(seen.length).toBe(10_000);
      expect(seen[0]).toBe('run-00001');
      expect(seen[9999]).toBe('run-10000');
      const page = await app.request('/v1/executions?status=paused&limit=50', {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(((await page.json()) as { items: unknown[] }).items.length).toBe(50);
    });

    it("the inspector's count of the matches stops at its cap: exact below it, 'more' past it", async () => {
      const db = database.db;
      expect(await countExecutions(db, projectId, { limit: 50 }, 1000)).toEqual({ n: 1000, more: true, atMost: false });
      expect(await countExecutions(db, projectId, { status: 'failed', limit: 50 }, 5000)).toEqual({
        n: 2500,
        more: false,
        atMost: false,
      });
      // the cursor is no filter: every page counts the same
      expect(
        await countExecutions(db, projectId, { status: 'paused', graphThreadsToo: true, limit: 50 }, 2500),
      ).toEqual({ n: 2500, more: false, atMost: false });
      expect(await countExecutions(db, projectId, { q: 'run-0001', limit: 50 }, 1000)).toEqual({
        n: 10,
        more: false,
        atMost: false,
      });
    });

    it('the list query and the filtered list query use the executions indexes', async () => {
      // EXPLAIN the exact statement the app runs
      const explain = async (f: { status?: string }) => {
        const q = executionsQuery(database.db, projectId, { ...f, limit: 50 }).toSQL();
        const client = (database.db as unknown as { $client: { query?: Function; unsafe?: Function } }).$client;
        const r =
          kind === 'pglite'
            ? await client.query!(`EXPLAIN ${q.sql}`, q.params)
            : await client.unsafe!(`EXPLAIN ${q.sql}`, q.params);
        const rows = (Array.isArray(r) ? r : r.rows) as Record<string, string>[];
        return rows.map((x) => Object.values(x)[0]).join('\n');
      };
      const plain = await explain({});
      const filtered = await explain({ status: 'paused' });
      console.log(`[plan ${kind}] list:\n${plain}\n[plan ${kind}] status=paused:\n${filtered}`);
      expect(plain).toMatch(/Index Scan using executions_recent/);
      expect(plain).not.toMatch(/Sort/);
      expect(filtered).toMatch(/Index Scan using executions_status_recent/);
    });
  });
}
