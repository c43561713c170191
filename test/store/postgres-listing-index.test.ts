/**
 * The Postgres store's listings (recoverRuns, `waymark runs`, the local
 * inspector's pauses) page by execution id in byte order, `COLLATE "C"` on
 * both sides (client/postgres/reads.ts), on a database that orders text by a
 * locale. Migration 0006 gives that order an index; without it each page
 * scanned and sorted every run. The statements the store itself sends are
 * captured (postgres.js `debug`) and explained on 20,000 runs, 1% of them
 * paused, analysed: the planner must page them from the index. (Prune's walk
 * compares and sorts the same way and has the same index; its plan depends on
 * how many runs are old enough and is not asserted here.)
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const ready = await pgReady('postgres listing indexes');

describe.skipIf(!ready)('postgres byte-order listings use their index', () => {
  let db: TestDatabase;
  let sql: postgres.Sql;
  let store: PostgresCheckpointer;
  const sent: { query: string; params: unknown[] }[] = [];
  beforeAll(async () => {
    db = await createTestDatabase('waymark_listing_index', { locale: 'en-US' });
    sql = postgres(db.url, {
      max: 1,
      onnotice: () => {},
      debug: (_c, query, params) => void sent.push({ query, params: params as unknown[] }),
    });
    store = new PostgresCheckpointer({ sql, schema: 'w' });
    await store.setup();
    await sql.unsafe(`INSERT INTO w.executions (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at)
      SELECT 'Run-' || g, 4, 'x', 'run_end', CASE WHEN g % 100 = 0 THEN 'hitl_pause' ELSE 'run_end' END,
             CASE WHEN g % 100 = 0 THEN 'interrupted' ELSE 'completed' END, now() FROM generate_series(1, 20000) g`);
    await sql.unsafe(`INSERT INTO w.pending_interrupts (execution_id, checkpoint_id, node_id, reason, agent_path, created_at)
      SELECT 'Run-' || g, 'c', 'turn:0', 'r', 'agent:x', '' FROM generate_series(100, 20000, 100) g`);
    await sql.unsafe('ANALYZE w.executions; ANALYZE w.pending_interrupts');
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    await sql?.end({ timeout: 2 });
    await db?.drop();
  });

  /** The plan of the statement the store sent last whose text matches `like`. */
  const planOf = async (like: RegExp) => {
    const last = sent.filter((s) => like.test(s.query)).pop();
    expect(last, String(like)).toBeDefined();
    return JSON.stringify(await sql.unsafe(`EXPLAIN (FORMAT JSON) ${last!.query}`, last!.params as never[]));
  };

  it('the run listing and the pause listing, as the store sends them, page from the COLLATE "C" indexes', async () => {
    expect(await store.listExecutions({ afterExecutionId: 'Run-2', limit: 500 })).toHaveLength(500);
    expect(await planOf(/FROM "w"\."executions" e/)).toContain('"Index Name":"executions_id_bytes"');
    expect(await store.listPendingInterrupts({ afterExecutionId: 'Run-2', limit: 50 })).toHaveLength(50);
    expect(await planOf(/FROM "w"\."pending_interrupts" WHERE execution_id COLLATE "C" >/)).toContain(
      '"Index Name":"pending_interrupts_id_bytes"',
    );
  });
});
