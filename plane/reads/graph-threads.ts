/**
 * LangGraph threads on the plane: the interrupt a thread waits at, read from
 * its newest row and that checkpoint's write batches (the rule is
 * support/langgraph.ts's). A run's summary knows rows and store pauses only, so
 * a thread waiting at `interrupt()` is `running` there: the inspector asks
 * here. Project-scoped; nothing here writes.
 */
import { and, eq, like } from 'drizzle-orm';
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import { graphCheckpointOf, graphPause, graphWriteKeyStart, isGraphAgentPath } from '../../support/langgraph.js';
import { likeStart } from '../db/like.js';
import type { PlaneDb } from '../db/open.js';
import { idempotency } from '../db/schema.js';
import { newestRows, type RunFacts } from './newest-rows.js';

/**
 * The interrupts these runs wait at, by execution id: only running LangGraph threads are read, from their newest
 * rows (`newest`, newest-rows.ts, read here when not given) and one read of write batches each.
 */
export async function graphPauses(
  db: PlaneDb,
  projectId: string,
  runs: readonly RunFacts[],
  newest?: ReadonlyMap<string, Checkpoint>,
): Promise<Map<string, PendingInterrupt>> {
  const out = new Map<string, PendingInterrupt>();
  const threads = runs.filter((r) => r.status === 'running' && isGraphAgentPath(r.agent));
  if (!threads.length) return out;
  const rows = newest ?? (await newestRows(db, projectId, threads));
  for (const t of threads) {
    const last = rows.get(t.executionId);
    if (!last) continue;
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
