/**
 * The inspector's `InspectorSource` over a local store (`waymark ui`): every
 * read is a call of the Checkpointer contract on the live store, so a run
 * written while the UI runs shows on the next reload (nothing is copied).
 *
 * What differs from the plane's source, and why:
 * - the run list is in execution-id order (the store's order; a default id is
 *   a UUIDv7, so that is creation order), paged by the last id shown; its
 *   filters are applied as the store's runs are read, and its count reads
 *   them from the first up to 1,000 matches;
 * - a local store holds its runs whole: no holes, and no claim conflicts or
 *   takeovers (the plane arbitrates those), so those members are left out and
 *   the pages hide their parts; the runs forked from a run are not listed
 *   (the store has no index of fork origins);
 * - what this store knows of the plane's verdict instead: a run it lost there
 *   (its newest rows refused for another branch, `lostAtPlane`), whatever its
 *   status here, read once per listing or page;
 * - a pause shows while it is open (a claim removes the pending row here);
 *   a LangGraph thread waiting at an `interrupt()` has no pending row (its
 *   interrupt is a pending write of its newest checkpoint): it is read from
 *   there, and the thread is paused, not running;
 *   once answered, the run's last pause shows with the writer of the row after it (who claimed it);
 * - the quarantine is the outbox's entries the plane refused, and the sync
 *   status page is the outbox's (`waymark sync status`);
 * - approvals: the inbox is the store's open pauses (in execution-id order,
 *   the store's), each with its decision; a decision is recorded with
 *   `store.recordDecision` (source `local`: it travels to a connected plane
 *   through the outbox) and applied by the application's worker
 *   (`serveDecisions`), never by the UI.
 */
import { ErrorCode, hasCode, runErrorOf, WaymarkError } from '../../shared/errors.js';
import type { Json } from '../../shared/json.js';
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import type { UsageTotal } from '../../shared/usage.js';
import type { Checkpointer, ExecutionState, ExecutionSummary } from '../checkpointer.js';
import { lostAtPlane, lostRuns, runLostAtPlane } from '../replica/branch.js';
import { refusedOnPlane } from '../cli/sync-commands.js';
import { planeRefusal } from '../replica/refusal.js';
import { summaryState } from '../store/summary.js';
import { holdOf, isClaimRow, type LostAtPlane, resumeAnswer } from '../../support/run-words.js';
import { capped, type Counted, RUN_COUNT_CAP } from '../../support/count.js';
import { cancelReason, isCancelMarker } from '../store/cancel.js';
import { decide } from '../runtime/decide.js';
import {
  graphCheckpointOf,
  graphPause,
  graphWriteKey,
  graphWriteKeyStart,
  isGraphWriteKey,
} from '../../support/langgraph.js';
import {
  type DecisionShown,
  type InboxItem,
  type InspectorSource,
  isUnder,
  type Paged,
  type RunSummary,
} from '../../inspector/source.js';
import type { RunItem } from '../../inspector/runs-page.js';
import type { QuarantineItem } from '../../inspector/quarantine-page.js';
import type { SyncStatus } from '../../inspector/sync-page.js';

/** How many rows or runs one store read takes while a page is assembled. */
const CHUNK = 500;

/**
 * Whether a run (its state as shown) needs a person (`RunsQuery.attention`): failed; stale (running, its lease
 * expired without a release, as `holdOf` says: a LangGraph thread never is); paused since before
 * `pausedBefore`. A local store has no claim conflicts and no holes.
 */
function needsAttention(e: ExecutionSummary, pausedBefore: number): boolean {
  if (e.state === 'failed') return true;
  if (e.state === 'running')
    return holdOf({ status: e.state, lastNodeId: e.lastNodeId, lease: e.lease })?.kind === 'stale';
  return e.state === 'paused' && Date.parse(e.updatedAt) < pausedBefore;
}

const encode = (v: string | number) => Buffer.from(JSON.stringify(v)).toString('base64url');
function decode<T extends string | number>(cursor: string | undefined, kind: 'string' | 'number'): T | undefined {
  if (!cursor) return undefined;
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (kind === 'string' ? typeof v === 'string' : Number.isSafeInteger(v)) return v as T;
  } catch {
    // not one of ours
  }
  throw new WaymarkError(ErrorCode.BAD_CURSOR, 'cursor is not one this store issued');
}

interface DrainNote {
  state: string;
  at: string;
  lastError: string | null;
  lastErrorAt?: string | null;
  lastSuccessAt?: string | null;
  lastAckAt: string | null;
}

export function localSource(store: Checkpointer): InspectorSource {
  const first = async (executionId: string) => (await store.list(executionId, { limit: 1 }))[0] ?? null;
  const errorOf = (state: string, last: Checkpoint | null) =>
    state === 'failed' && last ? runErrorOf(last.nodeOutput) : null;
  /** A cancelled run's reason, from its marker (the run's last row); absent for a run not cancelled. */
  const reasonOf = (last: Checkpoint | null) => (isCancelMarker(last) ? { cancelReason: cancelReason(last!) } : {});

  /**
   * The interrupt a LangGraph thread waits at, read from its newest checkpoint's write batches; null when `last` is
   * no graph row or the thread is not waiting. `exact`: every entry of the run is read for the time the interrupt was
   * stored; otherwise point lookups of the checkpoint's batches (whose lookup carries no time: the row's is given).
   */
  async function graphPauseOf(last: Checkpoint | null, exact = false): Promise<PendingInterrupt | null> {
    const ref = graphCheckpointOf(last);
    if (!last || !ref) return null;
    if (exact) {
      const start = graphWriteKeyStart(ref.checkpoint_id);
      const entries = await store.listIdempotent(last.executionId);
      return graphPause(
        last,
        entries.filter((e) => e.key.startsWith(start)),
      );
    }
    const entries: IdempotencyEntry[] = [];
    for (let slot = 0; ; slot++) {
      const key = graphWriteKey(ref.checkpoint_id, slot);
      const found = await store.getIdempotent(last.executionId, key);
      if (!found.hit) break;
      entries.push({ executionId: last.executionId, key, result: found.result, createdAt: last.createdAt });
    }
    return graphPause(last, entries);
  }

  /** A run's state: the store's, but a LangGraph thread the store calls running may wait at an interrupt. */
  async function stateOf(state: ExecutionState, last: Checkpoint | null): Promise<ExecutionState> {
    return state === 'running' && (await graphPauseOf(last)) ? 'paused' : state;
  }

  async function runItem(
    e: ExecutionSummary,
    last: Checkpoint | null,
    usage: UsageTotal,
    lost: Map<string, LostAtPlane>,
    read?: Checkpoint | null,
  ): Promise<RunItem> {
    const start = read === undefined ? await first(e.executionId) : read;
    return {
      executionId: e.executionId,
      status: e.state,
      rowCount: e.rowCount,
      lastNodeId: e.lastNodeId,
      agent: start?.agentPath ?? null,
      writerId: last?.writerId ?? null,
      createdAt: start?.createdAt ?? e.updatedAt,
      updatedAt: e.updatedAt,
      error: errorOf(e.state, last),
      ...reasonOf(last),
      complete: true,
      holeCount: 0,
      claimConflicts: 0,
      startedAt: start?.createdAt ?? null,
      lastWriteAt: last?.createdAt ?? null,
      usage: usage.calls > 0 ? usage : null,
      lease: e.lease,
      lostAtPlane: lost.get(e.executionId) ?? null,
    };
  }

  /** The outbox's quarantined entries, oldest first, from `after` on, kept when `keep` says so, up to `limit` + 1. */
  async function quarantined(after: string | undefined, limit: number, keep: (executionId: string) => boolean) {
    const found: QuarantineItem[] = [];
    for (;;) {
      const page = await store.listQuarantined({ afterId: after, limit: CHUNK });
      for (const q of page) {
        if (!keep(q.executionId)) continue;
        const r = planeRefusal(q.reason) ?? { code: 'refused', reason: q.reason };
        found.push({
          id: q.id,
          writerId: store.writerId,
          kind: q.kind,
          executionId: q.executionId,
          code: r.code,
          reason: r.reason,
          receivedAt: q.createdAt,
        });
        if (found.length > limit) return found;
      }
      if (page.length < CHUNK) return found;
      after = page[page.length - 1].id;
    }
  }

  return {
    async listRuns(q): Promise<Paged<RunItem> & { count: Counted }> {
      const after = decode<string>(q.cursor, 'string');
      const since = q.updatedSince ? Date.parse(q.updatedSince) : null;
      const pausedBefore = q.attention ? Date.parse(q.attention.pausedBefore) : null;
      const wanted = q.status as ExecutionState | undefined;
      const agent = q.agent?.toLowerCase();
      // an error code is a failed run's: the store lists the failed ones (none, when another status is asked for)
      if (q.errorCode && wanted && wanted !== 'failed')
        return { items: [], nextCursor: null, count: { n: 0, more: false } };
      const storeState = q.errorCode ? 'failed' : wanted === 'paused' ? undefined : wanted;
      /** A run that matches: its summary with its state as shown, and the rows read to decide (read once, kept for its item). */
      type Match = { e: ExecutionSummary; last?: Checkpoint | null; start?: Checkpoint | null };
      const latest = async (m: Match) =>
        m.last === undefined ? (m.last = await store.latest(m.e.executionId)) : m.last;
      const matchOf = async (e: ExecutionSummary): Promise<Match | null> => {
        // the filters a summary answers first; a row is read only for a filter that needs it
        if (wanted === 'paused' && e.state !== 'paused' && e.state !== 'running') return null;
        if (q.q && !e.executionId.startsWith(q.q)) return null;
        if (since !== null && Date.parse(e.updatedAt) < since) return null;
        const m: Match = { e };
        // a thread paused at an interrupt is running to the store: paused here
        const state = e.state === 'running' ? await stateOf(e.state, await latest(m)) : e.state;
        if (wanted && state !== wanted) return null;
        m.e = { ...e, state };
        if (pausedBefore !== null && !needsAttention(m.e, pausedBefore)) return null;
        if (q.writer && (await latest(m))?.writerId !== q.writer) return null;
        if (q.errorCode && errorOf(state, await latest(m))?.code !== q.errorCode) return null;
        if (agent !== undefined) {
          m.start = await first(e.executionId);
          if (!m.start?.agentPath.toLowerCase().includes(agent)) return null;
        }
        return m;
      };
      const found: Match[] = [];
      let more = false;
      let counted = 0;
      // one scan from the first run, in the store's order: each run is read once, counted, and listed past the
      // cursor until the page is full; once the count passes its cap, the scan skips on to the cursor (the runs
      // before it were only counted) and ends as soon as the page is full
      let from: string | undefined;
      scan: for (;;) {
        if (counted > RUN_COUNT_CAP && after !== undefined && (from === undefined || from < after)) from = after;
        const page = await store.listExecutions({ afterExecutionId: from, limit: CHUNK, state: storeState });
        for (const e of page) {
          const listed = after === undefined || e.executionId > after;
          if (!listed && counted > RUN_COUNT_CAP) continue;
          const m = await matchOf(e);
          if (!m) continue;
          counted++;
          if (listed && found.length < q.limit) found.push(m);
          else if (listed) more = true;
          if (more && counted > RUN_COUNT_CAP) break scan;
        }
        if (page.length < CHUNK) break;
        from = page[page.length - 1].executionId;
      }
      // usage of the whole page in one read of the rows that carry it, not every row of every run
      const usage = await store.usageTotals(found.map((f) => f.e.executionId));
      // read once for the page, whatever the runs' statuses: a run that ended here may have ended on a refused branch
      const lost = await lostAtPlane(store);
      const items = await Promise.all(
        found.map(async (f) => runItem(f.e, await latest(f), usage.get(f.e.executionId)!, lost, f.start)),
      );
      return {
        items,
        nextCursor: more ? encode(items[items.length - 1].executionId) : null,
        count: capped(counted, RUN_COUNT_CAP),
      };
    },

    async getRun(executionId): Promise<RunSummary | null> {
      const last = await store.latest(executionId);
      if (!last) return null;
      const paused = (await store.getPendingInterrupt(executionId)) !== null;
      const state = await stateOf(summaryState(last.step, last.status, paused), last);
      return {
        executionId,
        status: state,
        rowCount: last.seq + 1,
        lastSeq: last.seq,
        writerId: last.writerId,
        updatedAt: last.createdAt,
        error: errorOf(state, last),
        ...reasonOf(last),
        complete: true,
        holeCount: 0,
        lastNodeId: last.nodeId,
        lease: state === 'running' ? await store.getLease(executionId) : null,
        lostAtPlane: await runLostAtPlane(store, executionId),
      };
    },

    async listRows(executionId, q) {
      // the store filters by step; an agent path is filtered here, reading on in chunks until the page is full
      const asc = q.after !== undefined;
      const want = q.limit + 1;
      const found: Checkpoint[] = [];
      let bound = asc ? q.after : q.before;
      for (;;) {
        const rows = await store.list(executionId, {
          ...(asc ? { afterSeq: bound } : { beforeSeq: bound, order: 'desc' as const }),
          step: q.step,
          limit: q.agentPath === undefined ? want - found.length : CHUNK,
        });
        for (const r of rows) if (q.agentPath === undefined || isUnder(r.agentPath, q.agentPath)) found.push(r);
        if (found.length >= want || rows.length < (q.agentPath === undefined ? want : CHUNK)) break;
        bound = rows[rows.length - 1].seq;
      }
      const page = found.slice(0, q.limit);
      return { items: asc ? page : page.reverse(), more: found.length > q.limit };
    },

    async getRow(executionId, seq) {
      const [row] = await store.list(executionId, { afterSeq: seq - 1, limit: 1 });
      return row?.seq === seq ? row : null;
    },

    async stateAt(executionId, seq) {
      const [row] = await store.list(executionId, { afterSeq: seq - 1, limit: 1 });
      if (!row || row.seq !== seq) return null;
      return (await store.readState(row)) as Awaited<ReturnType<InspectorSource['stateAt']>>;
    },

    async pauseState(executionId) {
      const pending = await store.getPendingInterrupt(executionId);
      if (pending) return { pending, state: 'open', claimedBy: null, claimedAt: null, claim: null };
      // a LangGraph thread's newest checkpoint, when it is the run's newest row (a cancel marker ends a cancelled
      // thread): read by its step, so a run of another kind reads no row here
      const [graphRow] = await store.list(executionId, { step: 'graph_step', order: 'desc', limit: 1 });
      const newest = graphRow && (await store.list(executionId, { afterSeq: graphRow.seq, limit: 1 })).length === 0;
      const interrupt = newest ? await graphPauseOf(graphRow, true) : null;
      if (interrupt)
        return { pending: interrupt, state: 'open', claimedBy: null, claimedAt: null, claim: null, graph: true };
      // none open: the run's last pause, answered (its pause rows only, newest first), and the writer whose row followed it (who claimed it)
      let pause: Checkpoint | undefined;
      for (let before: number | undefined; !pause; ) {
        const rows = await store.list(executionId, {
          step: 'hitl_pause',
          order: 'desc',
          beforeSeq: before,
          limit: CHUNK,
        });
        pause = rows.find((r) => r.status === 'interrupted');
        if (rows.length < CHUNK) break;
        before = rows[rows.length - 1].seq;
      }
      if (!pause) return null;
      const [next = null] = await store.list(executionId, { afterSeq: pause.seq, limit: 1 });
      // a cancel closed it: nobody claimed it (the marker's writer cancelled the run)
      const cancelled = isCancelMarker(next);
      return {
        pending: {
          executionId,
          checkpointId: pause.id,
          nodeId: pause.nodeId,
          reason: pause.interruptReason ?? 'pause',
          context: pause.interruptContext,
          agentPath: pause.agentPath,
          createdAt: pause.createdAt,
        },
        state: cancelled ? 'cancelled' : 'answered',
        claimedBy: cancelled ? null : (next?.writerId ?? null),
        claimedAt: cancelled ? null : (next?.createdAt ?? null),
        claim: null,
        // the claim row (the pause's tool row again, its child) carries the answer
        answer: isClaimRow(pause, next) ? (resumeAnswer(await store.readState(next!)) as Json | null) : null,
      };
    },

    async listIdempotency(executionId, o) {
      // the store answers every entry (this process's own file or database); the page is cut here, by key
      const after = decode<string>(o.cursor, 'string');
      let all = await store.listIdempotent(executionId);
      // a LangGraph thread's pending writes are the saver's, not effect results
      if (all.some((e) => isGraphWriteKey(e.key)) && graphCheckpointOf(await first(executionId)))
        all = all.filter((e) => !isGraphWriteKey(e.key));
      all = all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const rest = after === undefined ? all : all.filter((e) => e.key > after);
      const page = rest.slice(0, o.limit);
      return { items: page, nextCursor: rest.length > o.limit ? encode(page[page.length - 1].key) : null };
    },

    async runUsage(executionId) {
      return (await store.usageTotals([executionId])).get(executionId)!;
    },

    async listQuarantine(o) {
      const items = await quarantined(
        decode<string>(o.cursor, 'string'),
        o.limit,
        (id) => o.executionId === undefined || id === o.executionId,
      );
      const page = items.slice(0, o.limit);
      return { items: page, nextCursor: items.length > o.limit ? encode(String(page[page.length - 1].id)) : null };
    },

    async forkLinks(executionId) {
      const origin = await first(executionId);
      const from =
        origin?.step === 'fork_origin'
          ? (origin.nodeInput as { executionId?: string; checkpointId?: string; step?: string } | null)
          : null;
      if (!from?.executionId || !from.checkpointId) return { forkOf: null };
      // the row it was forked at, for a link that lands on its page of the timeline
      const at = await store.getById(from.checkpointId);
      return {
        forkOf: {
          executionId: from.executionId,
          checkpointId: from.checkpointId,
          step: from.step ?? 'step',
          seq: at?.executionId === from.executionId ? at.seq : null,
        },
      };
    },

    async listPauses(o): Promise<Paged<InboxItem>> {
      const after = decode<string>(o.cursor, 'string');
      const open = await store.listPendingInterrupts({ afterExecutionId: after, limit: o.limit + 1 });
      const page = open.slice(0, o.limit);
      const now = Date.now();
      const items: InboxItem[] = [];
      for (const p of page) {
        items.push({
          ...p,
          ageMs: Math.max(0, now - Date.parse(p.createdAt)),
          state: 'open',
          decision: await store.getDecision(p.executionId, p.checkpointId),
        });
      }
      return { items, nextCursor: open.length > o.limit ? encode(page[page.length - 1].executionId) : null };
    },

    async listDecisions(o): Promise<Paged<DecisionShown>> {
      try {
        return await store.listDecisions({ cursor: o.cursor, limit: o.limit });
      } catch (e) {
        if (hasCode(e, ErrorCode.INVALID_OPTIONS))
          throw new WaymarkError(ErrorCode.BAD_CURSOR, 'cursor is not one this store issued');
        throw e;
      }
    },

    async runDecisions(executionId): Promise<DecisionShown[]> {
      // the decisions of the run's pauses held here, through the decisions' own index (not the run's rows), in chunks
      const found: DecisionShown[] = [];
      for (let cursor: string | undefined; ; ) {
        const page = await store.listDecisions({ executionId, cursor, limit: CHUNK });
        found.push(...page.items.filter((d) => d.held));
        if (!page.nextCursor) return found;
        cursor = page.nextCursor;
      }
    },

    async recordDecision(executionId, req, decidedBy): Promise<DecisionShown> {
      await decide(store, executionId, { ...req, decidedBy });
      return (await store.getDecision(executionId, req.checkpointId))!;
    },

    async syncStatus(): Promise<SyncStatus> {
      const s = await store.outboxStats();
      const note = await store.getMeta('drain');
      const d = note ? (JSON.parse(note) as DrainNote) : null;
      const { incomplete, diverged } = await refusedOnPlane(store);
      return {
        writerId: store.writerId,
        ...s,
        drain: d
          ? {
              state: d.state,
              at: d.at,
              lastSuccessAt: d.lastSuccessAt ?? null,
              lastAckAt: d.lastAckAt,
              lastError: d.lastError,
              lastErrorAt: d.lastErrorAt ?? null,
            }
          : null,
        incomplete: [...incomplete],
        diverged: [...diverged],
        lost: [...(await lostRuns(store))],
      };
    },
  };
}
