/**
 * Claim conflicts (GET /v1/conflicts, and a run's): pauses claimed by more
 * than one writer, with the side effects both may have run. Project-scoped;
 * nothing here writes (claims are arbitrated in claims.ts).
 */
import { and, asc, eq, or } from 'drizzle-orm';
import type { PlaneDb } from '../db/open.js';
import { claimConflicts, events, quarantine } from '../db/schema.js';

export async function listClaimConflicts(db: PlaneDb, projectId: string, executionId?: string) {
  const rows = await db
    .select()
    .from(claimConflicts)
    .where(
      and(
        eq(claimConflicts.projectId, projectId),
        executionId ? eq(claimConflicts.executionId, executionId) : undefined,
      ),
    )
    .orderBy(asc(claimConflicts.id));
  const effects = await doubleEffects(db, projectId, rows);
  return rows.map((c) => ({
    executionId: c.executionId,
    checkpointId: c.checkpointId,
    winnerWriterId: c.winnerWriterId,
    loserWriterId: c.loserWriterId,
    source: c.source,
    at: c.at.toISOString(),
    sideEffects: effects.get(`${c.executionId}\u0000${c.loserWriterId}`) ?? [],
  }));
}

/**
 * The idempotent side effects both writers of a claim conflict recorded: each
 * had its own cache offline, so each may have run the effect (a card charged
 * twice). A key counts when the winner and the loser both sent an entry for it,
 * accepted (same result) or refused as a conflict (another result).
 */
async function doubleEffects(
  db: PlaneDb,
  projectId: string,
  conflicts: { executionId: string; winnerWriterId: string; loserWriterId: string }[],
) {
  const out = new Map<string, string[]>();
  for (const c of conflicts) {
    const id = `${c.executionId}\u0000${c.loserWriterId}`;
    if (out.has(id)) continue;
    const recorded = await db
      .select({ key: events.key, writerId: events.writerId })
      .from(events)
      .where(
        and(
          eq(events.projectId, projectId),
          eq(events.executionId, c.executionId),
          eq(events.kind, 'idempotency'),
          or(eq(events.writerId, c.winnerWriterId), eq(events.writerId, c.loserWriterId)),
        ),
      );
    const refused = await db
      .select({ payload: quarantine.payload })
      .from(quarantine)
      .where(
        and(
          eq(quarantine.projectId, projectId),
          eq(quarantine.executionId, c.executionId),
          eq(quarantine.kind, 'idempotency'),
          eq(quarantine.writerId, c.loserWriterId),
        ),
      );
    const byWinner = new Set(recorded.filter((r) => r.writerId === c.winnerWriterId).map((r) => r.key));
    const byLoser = new Set(recorded.filter((r) => r.writerId === c.loserWriterId).map((r) => r.key));
    for (const q of refused) {
      try {
        byLoser.add((JSON.parse(q.payload) as { row?: { key?: string } }).row?.key ?? null);
      } catch {
        // a truncated payload: its key is not readable
      }
    }
    out.set(id, [...byLoser].filter((k): k is string => k !== null && byWinner.has(k)).sort());
  }
  return out;
}
