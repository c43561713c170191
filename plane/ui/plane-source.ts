/**
 * The plane's `InspectorSource`: one project's reads, each a call of
 * plane/reads/ (the same queries the plane's HTTP API answers from). Run list
 * items carry their usage, summed for the page in one query. Approvals are
 * plane/decisions.ts's: the inbox (`listPauses`), the feed as the list of
 * decisions, and `recordDecision` (the same rules as the HTTP endpoint).
 */
import { and, asc, eq } from 'drizzle-orm';
import type { PlaneDb } from '../db/open.js';
import { claims, decisions } from '../db/schema.js';
import { decisionFeed, decisionView, feedCursor, listPauses, recordDecision } from '../decisions.js';
import { listClaimConflicts } from '../reads/claim-conflicts.js';
import {
  countExecutions,
  executionPage,
  forkLinks,
  listTakeovers,
  type RunPart,
  type RunSummaryRead,
  runHolds,
  runStateFacts,
  runSummary,
  runUsage,
  runWithNewest,
  usageByRun,
} from '../reads/executions.js';
import { graphPauses } from '../reads/graph-threads.js';
import { listHoles } from '../reads/holes.js';
import { cancelReasonOf, runFacts } from '../reads/newest-rows.js';
import { pauseAnswer, pauseState } from '../reads/pauses.js';
import { listQuarantine } from '../reads/quarantine.js';
import { rowAt, stateAt, timelineRows } from '../reads/rows.js';
import { idempotencyListing } from '../restore.js';
import type { InspectorSource } from '../../inspector/source.js';
import { LIMITS } from '../../shared/limits.js';
import { type Checkpoint, ExecutionId, WriterId } from '../../shared/rows.js';
import { CONTROL_CHARACTER } from '../../shared/text.js';
import { GRAPH_WRITE_KEY_PREFIX, isGraphAgentPath } from '../../support/langgraph.js';
import { pauseStand } from '../../support/run-words.js';
import { RUN_COUNT_CAP } from '../../support/count.js';

// What a page's query or path names goes into queries as it is. A value no stored id or seq can be (U+0000,
// which Postgres text cannot hold; a seq past int4) matches nothing here, as it matches nothing in a local
// store: the pages answer as for any run or row that is not there, never a database error.
const mayBeRun = (id: string) => ExecutionId.safeParse(id).success;
/** A search text of the run list (a run id's prefix, an agent, an error code): any text without control characters ('.' included: '.hidden' starts with it). */
const mayBePrefix = (q: string) => !CONTROL_CHARACTER.test(q);
const mayBeSeq = (seq: number) => seq >= 0 && seq <= LIMITS.maxSeq;
const NO_RUNS = { items: [], nextCursor: null, count: { n: 0, more: false } };

export function planeSource(db: PlaneDb, projectId: string): InspectorSource {
  /** The summaries of the runs this request read (`getRun`), by id. */
  const read = new Map<string, RunSummaryRead>();
  /** The rows of each run this request decoded states from, by seq. */
  const rows = new Map<string, Map<number, Checkpoint>>();
  /** Whether this request's read of the run says the plane holds none of `part` of it (unknown: false). */
  const noneOf = (id: string, part: RunPart) => read.get(id)?.has[part] === false;
  /** The run's summary facts: as this request read them, else read now. */
  const factsOf = async (id: string) => read.get(id)?.row ?? (await runFacts(db, projectId, id));
  return {
    async listRuns(q) {
      if (
        [q.q, q.agent, q.errorCode].some((t) => t && !mayBePrefix(t)) ||
        (q.writer && !WriterId.safeParse(q.writer).success)
      )
        return NO_RUNS;
      const page = await executionPage(db, projectId, { ...q, graphThreadsToo: true });
      const count = await countExecutions(db, projectId, { ...q, graphThreadsToo: true }, RUN_COUNT_CAP);
      const usage = await usageByRun(
        db,
        projectId,
        page.items.map((i) => i.executionId),
      );
      // a LangGraph thread waiting at an interrupt is running to the run summary (it has no store pause): paused here;
      // the hold of each other running run: a running run whose hold expired is stale (inspector/runs-page.tsx)
      const { paused, holds } = await runStateFacts(db, projectId, page.items, page.newest);
      return {
        items: page.items
          .map((i) => {
            const reason = cancelReasonOf(i, page.newest);
            return {
              ...i,
              status: paused.has(i.executionId) ? 'paused' : i.status,
              usage: usage.get(i.executionId) ?? null,
              lease: holds.get(i.executionId) ?? null,
              ...(reason !== undefined ? { cancelReason: reason } : {}),
            };
          })
          .filter((i) => !q.status || i.status === q.status),
        nextCursor: page.nextCursor,
        count,
      };
    },
    async getRun(id) {
      const summary = mayBeRun(id) ? await runSummary(db, projectId, id) : null;
      if (!summary) return null;
      read.set(id, summary);
      const { run, newest } = await runWithNewest(db, projectId, summary);
      const reason = cancelReasonOf(run, newest);
      if (reason !== undefined) return { ...run, cancelReason: reason };
      if ((await graphPauses(db, projectId, [run], newest)).has(id)) return { ...run, status: 'paused' };
      if (run.status !== 'running') return run;
      return { ...run, lease: (await runHolds(db, projectId, [id])).get(id) ?? null };
    },
    async listRows(id, q) {
      // a bound past any seq (the page asks for the rows before the newest) is no bound; an agent path with U+0000
      // is none a row can have
      if (q.agentPath !== undefined && !mayBePrefix(q.agentPath)) return { items: [], more: false };
      const bound = (v: number | undefined) => (v === undefined || v > LIMITS.maxSeq ? undefined : v);
      if (q.after !== undefined && q.after >= LIMITS.maxSeq) return { items: [], more: false };
      return timelineRows(db, projectId, id, { ...q, after: q.after, before: bound(q.before) });
    },
    async stateAt(id, seq) {
      if (!mayBeSeq(seq)) return null;
      // the diff decodes two rows of one chain: the second reads only the rows the first did not
      let known = rows.get(id);
      if (!known) rows.set(id, (known = new Map()));
      return stateAt(db, projectId, id, seq, known);
    },
    getRow: async (id, seq) => (mayBeSeq(seq) ? rowAt(db, projectId, id, seq) : null),
    async pauseState(id) {
      const pause = noneOf(id, 'pause') ? null : await pauseState(db, projectId, id);
      // the answer is shown for a resumed pause only
      if (pause && pauseStand(pause, false) === 'resumed')
        return { ...pause, answer: await pauseAnswer(db, projectId, id, pause.pending.checkpointId) };
      if (pause) return pause;
      const facts = await factsOf(id);
      const interrupt = facts && (await graphPauses(db, projectId, [facts])).get(id);
      return interrupt
        ? { pending: interrupt, state: 'open', claimedBy: null, claimedAt: null, claim: null, graph: true }
        : null;
    },
    async listIdempotency(id, o) {
      // a LangGraph thread's pending writes are the saver's, not effect results
      const thread = isGraphAgentPath((await factsOf(id))?.agent);
      return idempotencyListing(db, projectId, id, { ...o, ...(thread ? { hide: GRAPH_WRITE_KEY_PREFIX } : {}) });
    },
    runUsage: (id) => runUsage(db, projectId, id),
    listQuarantine: async (o) =>
      o.executionId !== undefined && !o.cursor && noneOf(o.executionId, 'quarantine')
        ? { items: [], nextCursor: null }
        : listQuarantine(db, projectId, o),
    forkLinks: (id) => forkLinks(db, projectId, id),
    async listHoles(id) {
      const s = read.get(id);
      return listHoles(
        db,
        projectId,
        id,
        s && { rowCount: s.row.rowCount, lastSeq: s.row.lastSeq, anyRefused: s.has.holes },
      );
    },
    listClaimConflicts: async (id) => (read.get(id)?.claimConflicts === 0 ? [] : listClaimConflicts(db, projectId, id)),
    listTakeovers: async (id) => (noneOf(id, 'takeovers') ? [] : listTakeovers(db, projectId, id)),
    listPauses: (o) => listPauses(db, projectId, o),
    async listDecisions(o) {
      // the feed's own order and cursor (its project clock, plane/clocks.ts); one more than a page says whether another follows
      const page = await decisionFeed(db, projectId, feedCursor(o.cursor), o.limit + 1);
      const items = page.items.slice(0, o.limit);
      return { items, nextCursor: page.items.length > o.limit ? String(items[items.length - 1].feedSeq) : null };
    },
    async runDecisions(executionId) {
      if (noneOf(executionId, 'decisions')) return [];
      const rows = await db
        .select({ d: decisions, claim: claims })
        .from(decisions)
        .leftJoin(
          claims,
          and(eq(claims.projectId, decisions.projectId), eq(claims.checkpointId, decisions.checkpointId)),
        )
        .where(and(eq(decisions.projectId, projectId), eq(decisions.executionId, executionId)))
        .orderBy(asc(decisions.feedSeq));
      return rows.map((r) => decisionView(r.d, r.claim));
    },
    recordDecision(executionId, req, decidedBy) {
      read.delete(executionId);
      rows.delete(executionId);
      return recordDecision(db, projectId, executionId, req, decidedBy, 'plane');
    },
  };
}
