/**
 * The writers (GET /v1/writers): each one's last contact, rows and backlog,
 * and the name of the API key it sends with. Project-scoped; nothing here writes.
 */
import { and, asc, desc, eq, isNotNull } from 'drizzle-orm';
import type { PlaneDb } from '../db/open.js';
import { apiKeys, holes, writers } from '../db/schema.js';
import { holeIsGap } from './holes.js';

/**
 * A key's name for its writers, as stored: null when blank (the admin API checks names, but the keys table holds
 * any text). Its characters a terminal acts on are escaped where it is shown (inspector/layout.tsx `Writer`), not here.
 */
const shownKeyName = (name: string | null) => (name?.trim() ? name : null);

export async function listWriters(db: PlaneDb, projectId: string) {
  const rows = await db
    .select({ w: writers, keyName: apiKeys.name })
    .from(writers)
    .leftJoin(apiKeys, eq(apiKeys.id, writers.keyId))
    .where(eq(writers.projectId, projectId))
    .orderBy(desc(writers.lastSeen));
  // runs whose copy here is incomplete because this writer's row was refused (what its machine should know)
  const gaps = await db
    .selectDistinct({ writerId: holes.writerId, executionId: holes.executionId })
    .from(holes)
    .where(and(eq(holes.projectId, projectId), holeIsGap(projectId)))
    .orderBy(asc(holes.writerId), asc(holes.executionId));
  const incomplete = new Map<string, string[]>();
  for (const g of gaps) incomplete.set(g.writerId, [...(incomplete.get(g.writerId) ?? []), g.executionId]);
  return rows.map(({ w, keyName }) => ({
    incompleteRuns: incomplete.get(w.writerId) ?? [],
    writerId: w.writerId,
    keyName: shownKeyName(keyName),
    firstSeen: w.firstSeen.toISOString(),
    lastSeen: w.lastSeen.toISOString(),
    rowsAcked: w.rowsAcked,
    rowsRejected: w.rowsRejected,
    backlogRows: w.backlogRows,
    backlogBytes: w.backlogBytes,
    oldestPendingAt: w.oldestPendingAt,
  }));
}

/**
 * Each writer of the project that sent with a key, by id → that key's name: what the inspector calls the writer
 * ("name (short id)"). One read of the writers table, which the writers page lists whole too.
 */
export async function writerNames(db: PlaneDb, projectId: string): Promise<Map<string, string>> {
  const rows = await db
    .select({ writerId: writers.writerId, name: apiKeys.name })
    .from(writers)
    .innerJoin(apiKeys, eq(apiKeys.id, writers.keyId))
    .where(and(eq(writers.projectId, projectId), isNotNull(writers.keyId)));
  const out = new Map<string, string>();
  for (const r of rows) {
    const name = shownKeyName(r.name);
    if (name) out.set(r.writerId, name);
  }
  return out;
}
