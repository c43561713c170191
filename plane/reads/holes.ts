/**
 * The holes of a run: the rows the plane refused, and the seqs below a held
 * row that never arrived. Project-scoped; nothing here writes.
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import type { HoleView } from '../../shared/protocol.js';
import type { PlaneDb } from '../db/open.js';
import { checkpoints, executions, holes } from '../db/schema.js';

/**
 * Which holes are gaps in the plane's copy of a run (a SQL condition on a
 * `holes` row of project `projectId`). A `seq_conflict` is not a gap when the
 * plane holds a row at that seq and no later row of the refused writer: that
 * writer continued the run on another branch (an offline double resume), every
 * row of its branch was refused, and the plane's own chain is whole. It stays
 * in `holes` (and the quarantine): a later row of that writer accepted at a
 * free seq would follow a row the plane refused, and makes every hole of its
 * branch a gap again.
 *
 * The subqueries name the project as a constant, not through the correlation
 * with `holes`: a statement that says `project_id = constant` for each table
 * it reads is routed to that project's shard (Citus) or partition alone.
 */
export const holeIsGap = (projectId: string) => sql`NOT (holes.code = 'seq_conflict'
  AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.project_id = ${projectId} AND c.execution_id = holes.execution_id AND c.seq = holes.seq)
  AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.project_id = ${projectId} AND c.execution_id = holes.execution_id AND c.seq > holes.seq AND c.writer_id = holes.writer_id))`;

/**
 * The holes of one execution by seq: each row the plane refused (at most one
 * per seq), leaving out the refused rows of another branch (see `holeIsGap`),
 * then each run of seqs below a held row that never arrived and was not
 * refused either (code `missing`, at its first seq, named by the writer and
 * arrival of the row after it). Both leave the rows after them undecodable here.
 *
 * `known`: what a read of the run's summary this request made says (executions.ts `runSummary`): its counts, and
 * whether the plane holds any refused row of it; neither is read again.
 */
export async function listHoles(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  known?: { rowCount: number; lastSeq: number; anyRefused: boolean },
): Promise<HoleView[]> {
  const rows =
    known && !known.anyRefused
      ? []
      : await db
          .select()
          .from(holes)
          .where(and(eq(holes.projectId, projectId), eq(holes.executionId, executionId), holeIsGap(projectId)))
          .orderBy(asc(holes.seq));
  const refused: HoleView[] = rows.map((h) => ({
    seq: h.seq,
    code: h.code,
    reason: h.reason,
    writerId: h.writerId,
    rowId: h.rowId,
    at: h.at.toISOString(),
  }));
  // the run's summary says whether a seq is missing at all: only then are its rows walked for where
  const [summary] = known
    ? [known]
    : await db
        .select({ rowCount: executions.rowCount, lastSeq: executions.lastSeq })
        .from(executions)
        .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)));
  if (!summary || summary.rowCount === summary.lastSeq + 1) return refused;
  const t = db
    .select({
      seq: checkpoints.seq,
      prev: sql<number>`lag(${checkpoints.seq}, 1, -1) OVER (ORDER BY ${checkpoints.seq})`.as('prev'),
      writerId: checkpoints.writerId,
      at: checkpoints.receivedAt,
    })
    .from(checkpoints)
    .where(and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId)))
    .as('t');
  const gaps = await db.select().from(t).where(sql`${t.seq} > ${t.prev} + 1`).orderBy(asc(t.seq));
  const missing: HoleView[] = [];
  for (const g of gaps) {
    // the seqs between two held rows, less those a refusal already names (walked by the refusals, never seq by seq)
    let from = Number(g.prev) + 1;
    for (const at of [...refused.map((h) => h.seq).filter((q) => q >= from && q < g.seq), g.seq]) {
      if (from < at) {
        const span = from === at - 1 ? `row ${from}` : `rows ${from}-${at - 1}`;
        missing.push({
          seq: from,
          code: 'missing',
          reason: `${span} never reached this plane (row ${g.seq} did)`,
          writerId: g.writerId,
          rowId: null,
          at: g.at.toISOString(),
        });
      }
      from = at + 1;
    }
  }
  return [...refused, ...missing].sort((a, b) => a.seq - b.seq);
}
