/**
 * A run's newest row says what its summary does not: why a failed run failed (its end marker's error), a cancelled
 * run's reason (its cancel marker's), and the checkpoint a running LangGraph thread may wait at. One read gives a
 * page of runs their newest rows; each of those is derived from it. Project-scoped; nothing here writes.
 */
import { and, eq } from 'drizzle-orm';
import { runErrorOf, type RunError } from '../../shared/errors.js';
import { cancelReason, type Checkpoint, isCancelMarker } from '../../shared/rows.js';
import { isGraphAgentPath } from '../../support/langgraph.js';
import type { PlaneDb } from '../db/open.js';
import { executions } from '../db/schema.js';
import { rowsAt } from './rows-at.js';

/** What a run's summary says of it that decides whether its newest row is read. */
export interface RunFacts {
  executionId: string;
  status: string;
  lastSeq: number;
  agent?: string | null;
}

/** A run whose newest row says more than its summary: failed, cancelled, or a running LangGraph thread. */
const tellsMore = (r: RunFacts) =>
  r.status === 'failed' || r.status === 'cancelled' || (r.status === 'running' && isGraphAgentPath(r.agent));

/** The newest row (seq `lastSeq`) of each of `runs` whose newest row says more than its summary, by execution id: one read. */
export async function newestRows(
  db: PlaneDb,
  projectId: string,
  runs: readonly RunFacts[],
): Promise<Map<string, Checkpoint>> {
  const wanted = runs.filter(tellsMore);
  const rows = await rowsAt(
    db,
    projectId,
    wanted.map((e) => ({ executionId: e.executionId, seq: e.lastSeq })),
    { row: true },
  );
  return new Map(rows.map((r) => [r.executionId, r.row!]));
}

/** Why a failed run failed: the error its run-end marker carries (`nodeOutput.error`); null for any other run. */
export function endError(run: RunFacts, newest: ReadonlyMap<string, Checkpoint>): RunError | null {
  const end = run.status === 'failed' ? newest.get(run.executionId) : undefined;
  return end ? runErrorOf(end.nodeOutput) : null;
}

/**
 * A cancelled run's reason (null: none was given), from its cancel marker, its newest row (a row after the marker is
 * refused); undefined for a run not cancelled.
 */
export function cancelReasonOf(run: RunFacts, newest: ReadonlyMap<string, Checkpoint>): string | null | undefined {
  if (run.status !== 'cancelled') return undefined;
  const m = newest.get(run.executionId);
  return m && isCancelMarker(m) ? cancelReason(m) : null;
}

/** The run's summary facts (null: no such run), for a read of one run. */
export async function runFacts(db: PlaneDb, projectId: string, executionId: string): Promise<RunFacts | null> {
  const [e] = await db
    .select({
      executionId: executions.executionId,
      status: executions.status,
      lastSeq: executions.lastSeq,
      agent: executions.agent,
    })
    .from(executions)
    .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)));
  return e ?? null;
}
