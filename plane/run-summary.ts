/**
 * A run's summary (its `executions` row: status, counts, newest row, holes),
 * updated from what changed and its pause by every path that changes them
 * (ingest, claims, releases, cancels), which also stamps the change feed.
 */
import { sql } from 'drizzle-orm';
import type { Tx } from './db/open.js';
import { stampChanges } from './changes.js';
import { placeholderFrom } from './clocks.js';
import { holeIsGap } from './reads/holes.js';

/**
 * Bring the summaries of the given executions up to date, in one statement,
 * and stamp them (and the runs `deleted`, by tombstones) in the change feed.
 * A summary is updated from what changed, never by reading its run again: its
 * count grows by the rows the caller inserted (`added`, per execution; a run
 * deleted in the same transaction starts again from the rows inserted after
 * its deletion), its newest row and its first row's agent are one index probe
 * each, and its status follows from the newest row and the pause. The cost of
 * a refresh does not grow with the run (test/plane/ingest-cost.test.ts).
 * The count is added under the summary row's lock (`row_count + n` in the
 * upsert), so two transactions adding rows to one run sum exactly.
 *
 * Stamping draws from the project's `changes` clock, whose row lock is held to
 * commit: call this as the transaction's last step (see changes.ts).
 *
 * Every table the statement reads is given the project as a constant (not
 * only through a correlation or a join), so it is routed to one shard.
 */
export async function refreshExecutions(
  tx: Tx,
  projectId: string,
  executionIds: string[],
  changed: { added?: ReadonlyMap<string, number>; deleted?: ReadonlyMap<string, string> } = {},
): Promise<void> {
  const deleted = changed.deleted ?? new Map<string, string>();
  if (!executionIds.length) return stampChanges(tx, projectId, [], deleted);
  const runs = JSON.stringify(executionIds.map((e) => ({ e, n: changed.added?.get(e) ?? 0 })));
  await tx.execute(sql`
    INSERT INTO executions (project_id, execution_id, change_seq, status, row_count, last_seq, last_node_id, last_step, last_status, writer_id, agent, hole_count, created_at, updated_at)
    SELECT ${projectId}, t.e, -(${placeholderFrom()}::bigint + row_number() OVER ()),
      CASE WHEN p.state = 'open' AND l.status = 'interrupted' THEN 'paused'
           WHEN l.step = 'run_end' THEN CASE WHEN l.status IN ('failed', 'cancelled') THEN l.status ELSE 'completed' END
           ELSE 'running' END,
      t.n, l.seq, l.node_id, l.step, l.status, l.writer_id,
      (SELECT f.agent_path FROM checkpoints f WHERE f.project_id = ${projectId} AND f.execution_id = t.e ORDER BY f.seq LIMIT 1),
      (SELECT count(*)::int FROM holes WHERE holes.project_id = ${projectId} AND holes.execution_id = t.e AND ${holeIsGap(projectId)}),
      now(), date_trunc('milliseconds', now())
    FROM jsonb_to_recordset(${runs}::jsonb) AS t(e text, n int)
    JOIN LATERAL (
      SELECT seq, node_id, step, status, writer_id FROM checkpoints
      WHERE project_id = ${projectId} AND execution_id = t.e ORDER BY seq DESC LIMIT 1
    ) l ON true
    LEFT JOIN pending_interrupts p ON p.project_id = ${projectId} AND p.execution_id = t.e
    ON CONFLICT (project_id, execution_id) DO UPDATE SET
      status = excluded.status, row_count = executions.row_count + excluded.row_count, last_seq = excluded.last_seq,
      last_node_id = excluded.last_node_id, last_step = excluded.last_step, last_status = excluded.last_status,
      writer_id = excluded.writer_id, agent = excluded.agent, hole_count = excluded.hole_count, updated_at = excluded.updated_at`);
  await stampChanges(tx, projectId, executionIds, deleted);
}
