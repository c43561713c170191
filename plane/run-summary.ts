/**
 * A run's summary (its `executions` row: status, counts, newest row, holes),
 * recomputed from its rows and its pause by every path that changes them
 * (ingest, claims, releases, cancels), which also stamps the change feed.
 */
import { sql } from 'drizzle-orm';
import type { Tx } from './db/open.js';
import { stampChanges } from './changes.js';
import { placeholderFrom } from './clocks.js';
import { holeIsGap } from './reads/holes.js';

/**
 * Recompute the summaries of the given executions from their newest row and
 * their pause, in one statement, and stamp them (and the runs `deleted`, by
 * tombstones) in the change feed. Stamping draws from the project's `changes`
 * clock, whose row lock is held to commit: call this as the transaction's last step (see changes.ts).
 *
 * Every table the statement reads is given the project as a constant (not
 * only through a correlation or a join), so it is routed to one shard.
 */
export async function refreshExecutions(
  tx: Tx,
  projectId: string,
  executionIds: string[],
  deleted: ReadonlyMap<string, string> = new Map(),
): Promise<void> {
  if (!executionIds.length) return stampChanges(tx, projectId, [], deleted);
  const ids = sql.join(
    executionIds.map((id) => sql`${id}`),
    sql`, `,
  );
  await tx.execute(sql`
    INSERT INTO executions (project_id, execution_id, change_seq, status, row_count, last_seq, last_node_id, last_step, last_status, writer_id, agent, hole_count, created_at, updated_at)
    SELECT l.project_id, l.execution_id, -(${placeholderFrom()}::bigint + row_number() OVER ()),
      CASE WHEN p.state = 'open' AND l.status = 'interrupted' THEN 'paused'
           WHEN l.step = 'run_end' THEN CASE WHEN l.status IN ('failed', 'cancelled') THEN l.status ELSE 'completed' END
           ELSE 'running' END,
      n.cnt, l.seq, l.node_id, l.step, l.status, l.writer_id,
      (SELECT f.agent_path FROM checkpoints f WHERE f.project_id = ${projectId} AND f.execution_id = l.execution_id ORDER BY f.seq LIMIT 1),
      (SELECT count(*)::int FROM holes WHERE holes.project_id = ${projectId} AND holes.execution_id = l.execution_id AND ${holeIsGap(projectId)}),
      now(), date_trunc('milliseconds', now())
    FROM (
      SELECT DISTINCT ON (execution_id) project_id, execution_id, seq, node_id, step, status, writer_id
      FROM checkpoints WHERE project_id = ${projectId} AND execution_id IN (${ids})
      ORDER BY execution_id, seq DESC
    ) l
    JOIN (
      SELECT execution_id, count(*)::int AS cnt FROM checkpoints
      WHERE project_id = ${projectId} AND execution_id IN (${ids}) GROUP BY execution_id
    ) n ON n.execution_id = l.execution_id
    LEFT JOIN pending_interrupts p ON p.project_id = ${projectId} AND p.execution_id = l.execution_id
    ON CONFLICT (project_id, execution_id) DO UPDATE SET
      status = excluded.status, row_count = excluded.row_count, last_seq = excluded.last_seq,
      last_node_id = excluded.last_node_id, last_step = excluded.last_step, last_status = excluded.last_status,
      writer_id = excluded.writer_id, agent = excluded.agent, hole_count = excluded.hole_count, updated_at = excluded.updated_at`);
  await stampChanges(tx, projectId, executionIds, deleted);
}
