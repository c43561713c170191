/**
 * LangGraph threads on the plane: the interrupt a thread waits at, read from
 * its newest row and that checkpoint's write batches (the rule is
 * support/langgraph.ts's). A run's summary knows rows and store pauses only, so
 * a thread waiting at `interrupt()` is `running` there: the inspector asks
 * here. Project-scoped; nothing here writes.
 */
import { and, eq, like, or } from 'drizzle-orm';
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import { graphCheckpointOf, graphPause, graphWriteKeyStart, isGraphAgentPath } from '../../support/langgraph.js';
import { likeStart } from '../db/like.js';
import type { PlaneDb } from '../db/open.js';
import { checkpoints, executions, idempotency } from '../db/schema.js';

/** What a run's summary says of it that decides whether it may wait at an interrupt. */
export interface RunFacts {
  executionId: string;
  status: string;
  lastSeq: number;
  agent?: string | null;
}

/** The interrupts these runs wait at, by execution id: only running LangGraph threads are read (two reads each). */
export async function graphPauses(
  db: PlaneDb,
  projectId: string,
  runs: RunFacts[],
): Promise<Map<string, PendingInterrupt>> {
  const out = new Map<string, PendingInterrupt>();
  const threads = runs.filter((r) => r.status === 'running' && isGraphAgentPath(r.agent));
  if (!threads.length) return out;
  const newest = await db
    .select({ row: checkpoints.row })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.projectId, projectId),
        or(...threads.map((t) => and(eq(checkpoints.executionId, t.executionId), eq(checkpoints.seq, t.lastSeq)))),
      ),
    );
  for (const { row } of newest) {
    const last = row as Checkpoint;
    const ref = graphCheckpointOf(last);
    if (!ref) continue;
    const entries = await db
      .select({ row: idempotency.row })
      .from(idempotency)
      .where(
        and(
          eq(idempotency.projectId, projectId),
          eq(idempotency.executionId, last.executionId),
          like(idempotency.key, likeStart(graphWriteKeyStart(ref.checkpoint_id))),
        ),
      );
    const pause = graphPause(
      last,
      entries.map((e) => e.row as IdempotencyEntry),
    );
    if (pause) out.set(last.executionId, pause);
  }
  return out;
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
