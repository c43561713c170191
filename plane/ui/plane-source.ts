/**
 * The plane's `InspectorSource`: one project's reads, each a call of
 * plane/read.ts (the same queries the plane's HTTP API answers from). Run list
 * items carry their usage, summed for the page in one query.
 */
import type { PlaneDb } from '../db/open.js';
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
import type { InspectorSource } from './source.js';

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
  };
}
