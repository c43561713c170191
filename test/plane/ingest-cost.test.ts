/**
 * What one ingest of one row costs the plane's database, as the run it joins grows: every statement the ingest
 * sends, EXPLAIN ANALYZEd (in a transaction rolled back) for the rows it reads from `checkpoints`. A batch updates
 * its run's summary from the batch and one index probe per part (the newest row, the first row's agent), never by
 * reading the run again: the rows read stay the same for a run of 50 rows and one of 3,000. A count of rows, not a
 * time: a re-read of the run shows on any machine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestBatch } from '../../plane/ingest.js';
import { createKey } from '../../plane/auth.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';

/** The part of PGlite this test replays statements on. */
interface PgliteLike {
  transaction<T>(
    fn: (tx: { query<R>(sql: string, params: unknown[]): Promise<{ rows: R[] }> }) => Promise<T>,
  ): Promise<T>;
}
interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

let database: PlaneDatabase;
/** The statements the plane sent while a trace is on (`statementsOf`), else null. */
let sent: { sql: string; params: unknown[] }[] | null = null;
let projectId: string;

/** Rows of `checkpoints` a plan's scans returned (each scan node's rows × loops). */
function checkpointRows(node: PlanNode): number {
  const own = node['Relation Name'] === 'checkpoints' ? (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1) : 0;
  return own + (node.Plans ?? []).reduce((n, p) => n + checkpointRows(p), 0);
}

/** The statements the plane sends while `work` runs, with their parameters (the database's StatementTrace). */
async function statementsOf(work: () => Promise<unknown>): Promise<{ sql: string; params: unknown[] }[]> {
  sent = [];
  try {
    await work();
    return sent;
  } finally {
    sent = null;
  }
}

/** Rows read from `checkpoints` by the statements of one ingest of `rows`, each replayed under EXPLAIN ANALYZE. */
async function rowsReadToIngest(rows: OutboxEvent[]): Promise<{ total: number; by: string[] }> {
  const statements = await statementsOf(() => ingestBatch(database.db, projectId, 'writer-a', undefined, rows));
  // replayed on the plane's PGlite with their parameters, each in a transaction rolled back (EXPLAIN ANALYZE runs it)
  const client = (database.db as unknown as { $client: PgliteLike }).$client;
  let total = 0;
  const by: string[] = [];
  for (const s of statements) {
    if (!/^\s*(select|insert|update|delete|with)\b/i.test(s.sql)) continue;
    await client
      .transaction(async (tx) => {
        const r = await tx.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${s.sql}`,
          s.params,
        );
        const n = checkpointRows(r.rows[0]['QUERY PLAN'][0].Plan);
        total += n;
        if (n) by.push(`${n} ← ${s.sql.replace(/\s+/g, ' ').slice(0, 140)}`);
        throw new Error('rollback');
      })
      .catch((e: Error) => {
        if (e.message !== 'rollback') throw e;
      });
  }
  return { total, by };
}

/** A run of `n` rows at the plane, and the event of its next row. */
async function runOf(executionId: string, n: number): Promise<OutboxEvent> {
  const events = await eventsOf(async (s) => {
    for (let i = 0; i <= n; i++) await s.put(step(executionId, i));
  }, 'writer-a');
  for (let i = 0; i < n; i += 500) {
    const r = await ingestBatch(database.db, projectId, 'writer-a', undefined, events.slice(i, Math.min(i + 500, n)));
    expect(r.rejected).toBe(0);
  }
  return events[n];
}

beforeAll(async () => {
  database = await openTestPlaneDatabase('pglite', { logQuery: (sql, params) => sent?.push({ sql, params }) });
  projectId = (await createKey(database.db, { createProject: true, project: 'cost', scopes: ['ingest'] })).projectId;
}, 120_000);
afterAll(async () => database?.close());

describe('one ingest of a row of each of two runs', () => {
  it('reads as many rows of checkpoints when the runs hold 3,000 rows each as when they hold 50', async () => {
    const short = await rowsReadToIngest([await runOf('short-a', 50), await runOf('short-b', 50)]);
    const long = await rowsReadToIngest([await runOf('long-a', 3000), await runOf('long-b', 3000)]);
    const by = `runs of 50:\n${short.by.join('\n')}\nruns of 3,000:\n${long.by.join('\n')}`;
    expect(long.total, by).toBe(short.total);
    // per run: its newest row, the row before the new one, its first row's agent, the new row's id
    expect(long.total, by).toBeLessThanOrEqual(12);
  }, 120_000);
});
