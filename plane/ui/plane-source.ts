/**
 * The plane's `InspectorSource`: one project's reads, each a call of
 * plane/read.ts (the same queries the plane's HTTP API answers from). Run list
 * items carry their usage, summed for the page in one query. Approvals are
 * plane/decisions.ts's: the inbox (`listPauses`), the feed as the list of
 * decisions, and `recordDecision` (the same rules as the HTTP endpoint).
 */
import { and, asc, eq } from 'drizzle-orm';
import type { PlaneDb } from '../db/open.js';
import { claims, decisions } from '../db/schema.js';
import { decisionFeed, decisionView, feedCursor, listPauses, recordDecision } from '../decisions.js';
import {
  forkLinks,
  getExecution,
  listClaimConflicts,
  listExecutions,
  listHoles,
  listIdempotency,
  listQuarantine,
  listRows,
  listTakeovers,
  pauseState,
  runUsage,
  stateAt,
  usageByRun,
} from '../read.js';
import type { InspectorSource } from '../../inspector/source.js';

export function planeSource(db: PlaneDb, projectId: string): InspectorSource {
  return {
    async listRuns(q) {
      const page = await listExecutions(db, projectId, q);
      const usage = await usageByRun(
        db,
        projectId,
        page.items.map((i) => i.executionId),
      );
      return { items: page.items.map((i) => ({ ...i, usage: usage.get(i.executionId) ?? null })), nextCursor: page.nextCursor };
    },
    getRun: (id) => getExecution(db, projectId, id),
    listRows: (id, o) => listRows(db, projectId, id, o),
    stateAt: (id, seq) => stateAt(db, projectId, id, seq),
    pauseState: (id) => pauseState(db, projectId, id),
    listIdempotency: (id) => listIdempotency(db, projectId, id),
    runUsage: (id) => runUsage(db, projectId, id),
    listQuarantine: (o) => listQuarantine(db, projectId, o),
    forkLinks: (id) => forkLinks(db, projectId, id),
    listHoles: (id) => listHoles(db, projectId, id),
    listClaimConflicts: (id) => listClaimConflicts(db, projectId, id),
    listTakeovers: (id) => listTakeovers(db, projectId, id),
    listPauses: (o) => listPauses(db, projectId, o),
    async listDecisions(o) {
      // the feed's own order and cursor (a DB sequence); one more than a page says whether another follows
      const page = await decisionFeed(db, projectId, feedCursor(o.cursor), o.limit + 1);
      const items = page.items.slice(0, o.limit);
      return { items, nextCursor: page.items.length > o.limit ? String(items[items.length - 1].feedSeq) : null };
    },
    async runDecisions(executionId) {
      const rows = await db
        .select({ d: decisions, claim: claims })
        .from(decisions)
        .leftJoin(claims, and(eq(claims.projectId, decisions.projectId), eq(claims.checkpointId, decisions.checkpointId)))
        .where(and(eq(decisions.projectId, projectId), eq(decisions.executionId, executionId)))
        .orderBy(asc(decisions.feedSeq));
      return rows.map((r) => decisionView(r.d, r.claim));
    },
    recordDecision: (executionId, req, decidedBy) => recordDecision(db, projectId, executionId, req, decidedBy, 'plane'),
  };
}
