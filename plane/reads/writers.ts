/** The writers (GET /v1/writers): each one's last contact, rows and backlog. Project-scoped; nothing here writes. */
import { and, asc, desc, eq } from 'drizzle-orm';
import type { PlaneDb } from '../db/open.js';
import { holes, writers } from '../db/schema.js';
import { holeIsGap } from './holes.js';

export async function listWriters(db: PlaneDb, projectId: string) {
  const rows = await db.select().from(writers).where(eq(writers.projectId, projectId)).orderBy(desc(writers.lastSeen));
  // runs whose copy here is incomplete because this writer's row was refused (what its machine should know)
  const gaps = await db
    .selectDistinct({ writerId: holes.writerId, executionId: holes.executionId })
    .from(holes)
    .where(and(eq(holes.projectId, projectId), holeIsGap))
    .orderBy(asc(holes.writerId), asc(holes.executionId));
  const incomplete = new Map<string, string[]>();
  for (const g of gaps) incomplete.set(g.writerId, [...(incomplete.get(g.writerId) ?? []), g.executionId]);
  return rows.map((w) => ({
    incompleteRuns: incomplete.get(w.writerId) ?? [],
    writerId: w.writerId,
    firstSeen: w.firstSeen.toISOString(),
    lastSeen: w.lastSeen.toISOString(),
    rowsAcked: w.rowsAcked,
    rowsRejected: w.rowsRejected,
    backlogRows: w.backlogRows,
    backlogBytes: w.backlogBytes,
    oldestPendingAt: w.oldestPendingAt,
  }));
}
