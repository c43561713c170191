/**
 * Which writers a run concerns: those that delivered rows of it or restored
 * it naming themselves (`run_contacts`), and its owner (`run_owners`). The
 * writers' feeds (writer-changes.ts, writer-decisions.ts), their wakes and a
 * worker's listing of run requests ask it the same way.
 */
import { type SQL, sql } from 'drizzle-orm';

/** The run `run` (an execution id column) is one `writerId` touched (delivered rows of, restored naming itself) or owns. */
export function touchedBy(projectId: string, writerId: string, run: SQL): SQL {
  return sql`(EXISTS (SELECT 1 FROM run_contacts c
                      WHERE c.project_id = ${projectId} AND c.execution_id = ${run} AND c.writer_id = ${writerId})
              OR EXISTS (SELECT 1 FROM run_owners o
                         WHERE o.project_id = ${projectId} AND o.execution_id = ${run} AND o.writer_id = ${writerId}))`;
}

/**
 * Each row of `rows` (a CTE's name, with an `execution_id` column) once per writer that touched or owns its run,
 * that writer as `writer_id`: who a feed's entries concern (writer-wakes.ts).
 */
export function touchingWriters(projectId: string, rows: SQL): SQL {
  return sql`SELECT r.*, c.writer_id FROM ${rows} r
    JOIN run_contacts c ON c.project_id = ${projectId} AND c.execution_id = r.execution_id
    UNION
    SELECT r.*, o.writer_id FROM ${rows} r
    JOIN run_owners o ON o.project_id = ${projectId} AND o.execution_id = r.execution_id`;
}
