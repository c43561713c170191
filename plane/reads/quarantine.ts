/** The quarantine (GET /v1/quarantine): the rows the plane refused. Project-scoped; nothing here writes. */
import { and, asc, eq, gt } from 'drizzle-orm';
import type { PlaneDb } from '../db/open.js';
import { quarantine } from '../db/schema.js';
import { decodeCursor, encodeCursor, isIdCursor } from './cursor.js';

/**
 * The project's quarantine (or one execution's), oldest first, paged by id.
 * Ids are drawn in commit order per project (ingest.ts stampQuarantine): a
 * reader following the cursor never misses a record committed while it pages.
 */
export async function listQuarantine(
  db: PlaneDb,
  projectId: string,
  o: { cursor?: string; limit: number; executionId?: string },
) {
  const after = decodeCursor(o.cursor, isIdCursor) ?? 0;
  const rows = await db
    .select()
    .from(quarantine)
    .where(
      and(
        eq(quarantine.projectId, projectId),
        gt(quarantine.id, after),
        o.executionId ? eq(quarantine.executionId, o.executionId) : undefined,
      ),
    )
    .orderBy(asc(quarantine.id))
    .limit(o.limit + 1);
  const page = rows.slice(0, o.limit);
  return {
    items: page.map((q) => ({
      id: q.id,
      writerId: q.writerId,
      rowId: q.rowId,
      kind: q.kind,
      executionId: q.executionId,
      code: q.code,
      reason: q.reason,
      payload: q.payload,
      truncated: q.truncated,
      receivedAt: q.receivedAt.toISOString(),
    })),
    nextCursor: rows.length > o.limit ? encodeCursor(page[page.length - 1].id) : null,
  };
}
