/**
 * The Postgres store's listings (recoverRuns, `waymark runs`, the local
 * inspector's pauses, prune's walk) page by execution id in byte order,
 * `COLLATE "C"` on both sides (client/postgres/reads.ts, delete.ts), on a
 * database that orders text by a locale. Migration 0006 gives that order an
 * index; without it each page scanned and sorted every run. The queries below
 * have the listings' shape (the cursor's comparison, the order, the limit);
 * the planner must answer them from the index, on 20,000 runs, analysed.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const ready = await pgReady('postgres listing indexes');

describe.skipIf(!ready)('postgres byte-order listings use their index', () => {
  let db: TestDatabase;
  let sql: postgres.Sql;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_listing_index', { locale: 'en-US' });
    const store = new PostgresCheckpointer({ url: db.url, schema: 'w' });
    await store.setup();
    await store.close();
    sql = postgres(db.url, { max: 1, onnotice: () => {} });
    await sql.unsafe(`INSERT INTO w.executions (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at)
      SELECT 'Run-' || g, 1, 'x', 'turn:0', CASE WHEN g % 2 = 0 THEN 'run_end' ELSE 'llm_call' END, 'completed', now() FROM generate_series(1, 20000) g`);
    await sql.unsafe(`INSERT INTO w.pending_interrupts (execution_id, checkpoint_id, node_id, reason, agent_path, created_at)
      SELECT 'Run-' || g, 'c', 'turn:0', 'r', 'agent:x', '' FROM generate_series(1, 20000) g`);
    await sql.unsafe('ANALYZE w.executions; ANALYZE w.pending_interrupts');
  }, 120_000);
  afterAll(async () => {
    await sql?.end({ timeout: 2 });
    await db?.drop();
  });

  const plan = async (query: string) => JSON.stringify(await sql.unsafe(`EXPLAIN (FORMAT JSON) ${query}`));

  it('the run listing, the pause listing and the prune walk page from the COLLATE "C" indexes', async () => {
    expect(await plan(`SELECT * FROM w.executions e WHERE e.execution_id COLLATE "C" > 'Run-2' ORDER BY e.execution_id COLLATE "C" LIMIT 500`)).toContain('"Index Name":"executions_id_bytes"');
    expect(await plan(`SELECT * FROM w.pending_interrupts WHERE execution_id COLLATE "C" > 'Run-2' ORDER BY execution_id COLLATE "C" LIMIT 500`)).toContain(
      '"Index Name":"pending_interrupts_id_bytes"',
    );
    expect(await plan(`SELECT e.execution_id FROM w.executions e WHERE e.last_step = 'run_end' AND e.execution_id COLLATE "C" > 'Run-2' ORDER BY e.execution_id COLLATE "C" LIMIT 500`)).toContain(
      '"Index Name":"executions_id_bytes"',
    );
  });
});
