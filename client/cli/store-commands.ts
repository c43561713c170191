/** `waymark runs` and `waymark inspect`: read a local store and print it, as a table or as JSON. */
import { printable } from '../../support/terminal.js';
import type { Checkpoint, Json } from '../../shared/index.js';
import type { Checkpointer, ExecutionState, ExecutionSummary } from '../checkpointer.js';
import { sumUsage, usageLine } from '../../shared/usage.js';
import { localTime, table } from '../../support/format.js';
import { ErrorCode, runErrorOf, WaymarkError, type RunError } from '../../shared/errors.js';
import { cancelReason } from '../store/cancel.js';
import { lostAtPlane, runLostAtPlane } from '../replica/branch.js';
import {
  holdOf,
  holdWords,
  isGraphThread,
  LOST_BADGE,
  type LostAtPlane,
  lostWords,
  isClaimRow,
  resumeAnswer,
} from '../../support/run-words.js';

type Out = (line: string) => void;

const STATE_LABEL: Record<ExecutionSummary['state'], string> = {
  running: 'running/crashed (no marker)',
  paused: 'paused',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

export interface RunFilter {
  state?: ExecutionState;
  /** only runs whose newest row is at or after this time */
  since?: Date;
  limit?: number;
}

/** `--since`: an ISO time, or an age such as 90s, 30m, 2h, 7d. Null when it is neither. */
export function parseSince(text: string, now = Date.now()): Date | null {
  const age = /^(\d+)(s|m|h|d)$/.exec(text);
  if (age) return new Date(now - Number(age[1]) * { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[age[2] as 's']);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text)) return null;
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** Why a run failed, from its run-end marker; null for any other row. */
function errorOf(end: Checkpoint | null): RunError | null {
  if (end && end.step === 'run_end' && end.status === 'cancelled') {
    return { code: ErrorCode.RUN_CANCELLED, message: cancelReason(end) ?? 'cancelled (no reason given)' };
  }
  return end && end.step === 'run_end' && end.status === 'failed' ? runErrorOf(end.nodeOutput) : null;
}

/** Every run matching `filter`, paged through the store in execution-id order (no fixed limit). */
async function matchingRuns(
  store: Checkpointer,
  filter: RunFilter,
): Promise<(ExecutionSummary & { error: RunError | null })[]> {
  const found: (ExecutionSummary & { error: RunError | null })[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await store.listExecutions({ afterExecutionId: after, limit: 500, state: filter.state });
    if (!page.length) return found;
    for (const e of page) {
      if (filter.since && new Date(e.updatedAt) < filter.since) continue;
      found.push({
        ...e,
        error: e.state === 'failed' || e.state === 'cancelled' ? errorOf(await store.latest(e.executionId)) : null,
      });
      if (filter.limit !== undefined && found.length >= filter.limit) return found;
    }
    after = page[page.length - 1].executionId;
  }
}

export async function listRuns(store: Checkpointer, out: Out, o: RunFilter & { json?: boolean } = {}): Promise<number> {
  const runs = await matchingRuns(store, o);
  // runs this store lost at the plane, whatever their state here (read once for the listing): the plane's record of
  // them is another branch, and they are not this store's to recover as they stand
  const lost = runs.length ? await lostAtPlane(store) : new Map<string, LostAtPlane>();
  if (o.json) {
    out(
      JSON.stringify(
        runs.map((e) => ({ ...e, lostAtPlane: lost.get(e.executionId) ?? null })),
        null,
        2,
      ),
    );
    return runs.length;
  }
  if (runs.length === 0) {
    out(o.state || o.since ? 'no runs match' : 'no runs in this store');
    return 0;
  }
  const rows: string[][] = [['EXECUTION', 'STATE', 'ROWS', 'LAST NODE', 'UPDATED', 'LEASE', 'ERROR']];
  for (const e of runs) {
    const state = isGraphThread({ status: e.state, lastNodeId: e.lastNodeId })
      ? 'LangGraph thread (no marker)'
      : STATE_LABEL[e.state];
    rows.push([
      e.executionId,
      lost.has(e.executionId) ? `${state}, ${LOST_BADGE}` : state,
      String(e.rowCount),
      e.lastNodeId,
      localTime(e.updatedAt),
      leaseLabel(e, lost.has(e.executionId)),
      e.error ? `${e.error.code}: ${e.error.message}` : '',
    ]);
  }
  table(rows, out);
  return runs.length;
}

/**
 * What the lease says about a run without a marker (support/run-words.ts, as the inspectors say it): a live
 * runner holds it, or nobody does (its runner died: STALE once the lease expired, or free) and `recoverRuns`
 * would take it, unless this store lost the run at the plane (`lostAtPlane`: its rows refused there).
 * Finished and paused runs hold no lease.
 */
export function leaseLabel(e: ExecutionSummary, lostAtPlane = false): string {
  const hold = holdOf({ status: e.state, lastNodeId: e.lastNodeId, lease: e.lease }, { lostAtPlane });
  return hold ? holdWords(hold, localTime).join('') : '';
}

/** A pause of the run and, when it was answered, the Resume value it was answered with. */
interface PauseView {
  seq: number;
  checkpointId: string;
  nodeId: string;
  reason: string | null;
  context: Json | null;
  state: 'open' | 'answered' | 'closed';
  answer: Json | null;
  /** An open pause's decision recorded for it (a screen, `waymark decide`, the plane) and not applied yet: a worker applies it. */
  decision: { approved: boolean; metadata: Json; decidedBy: string; decidedAt: string; source: string } | null;
}

export async function inspectRun(
  store: Checkpointer,
  executionId: string,
  out: Out,
  o: { json?: boolean } = {},
): Promise<boolean> {
  const rows: Checkpoint[] = [];
  for (let after = -1; ; ) {
    const page = await store.list(executionId, { afterSeq: after, limit: 500 });
    if (!page.length) break;
    rows.push(...page);
    after = page[page.length - 1].seq;
  }
  if (rows.length === 0) {
    if (!o.json)
      throw new WaymarkError(ErrorCode.EXECUTION_NOT_FOUND, `execution '${executionId}' has no rows in this store`, {
        details: { executionId },
      });
    out(JSON.stringify({ executionId, found: false }));
    return false;
  }
  const pending = await store.getPendingInterrupt(executionId);
  const idem = await store.listIdempotent(executionId);
  const pauses = await pausesOf(store, rows, pending?.checkpointId ?? null);
  const last = rows[rows.length - 1];
  const end = last.step === 'run_end' ? { status: last.status, error: errorOf(last) } : null;
  const usage = sumUsage(rows);
  const lost = await runLostAtPlane(store, executionId);

  if (o.json) {
    out(
      JSON.stringify(
        { executionId, found: true, end, usage, lostAtPlane: lost, rows, pauses, pending, idempotency: idem },
        null,
        2,
      ),
    );
    return true;
  }
  // each field from a run is escaped whole (a line break in it would fake a line of this output), as table cells are
  out(`execution ${printable(executionId)}`);
  table(
    [
      ['SEQ', 'NODE', 'STEP', 'STATUS', 'AGENT PATH', 'TIME'],
      ...rows.map((r) => [String(r.seq), r.nodeId, r.step, r.status, r.agentPath, localTime(r.createdAt)]),
    ],
    out,
  );
  out('');
  out(
    end
      ? `ended: ${end.status}${end.error ? `: ${printable(end.error.code)}: ${printable(end.error.message)}` : ''}`
      : pending
        ? 'ended: no (paused)'
        : 'ended: no (running, or crashed: no run-end marker)',
  );
  if (lost) {
    const w = lostWords(executionId, lost, (n) => `#${n}`);
    out(`${LOST_BADGE}: ${printable(w.what.join(''))}; ${printable(w.said)}`);
    out(`  to take the plane's branch: ${printable(w.take)}`);
  }
  for (const p of pauses) {
    const decided = p.decision
      ? `; decided ${p.decision.approved ? 'approve' : 'decline'} by ${printable(p.decision.decidedBy)} at ${localTime(p.decision.decidedAt)} via ${p.decision.source}, not applied yet: a decision worker applies it`
      : '';
    const said =
      p.state === 'answered'
        ? `answered with ${JSON.stringify(p.answer)}`
        : p.state === 'open'
          ? `open${decided}`
          : 'closed without an answer in this store';
    out(`pause at seq ${p.seq} (${printable(p.nodeId)}): ${printable(p.reason ?? '')}: ${said}`);
  }
  out(
    pending
      ? `pending interrupt: ${printable(pending.reason)} at ${printable(pending.nodeId)} (${printable(pending.agentPath)})\n  context: ${JSON.stringify(pending.context)}`
      : 'pending interrupt: none',
  );
  out(`usage: ${usageLine(usage)}`);
  out(`idempotency entries: ${idem.length}`);
  for (const e of idem) out(`  ${printable(e.key)} → ${JSON.stringify(e.result)}`);
  return true;
}

/**
 * Each pause row with its answer: a claim writes the pause's tool row again with
 * the answer appended to `resumes`, as a child of the pause row (agent.ts).
 */
async function pausesOf(store: Checkpointer, rows: Checkpoint[], openId: string | null): Promise<PauseView[]> {
  const views: PauseView[] = [];
  for (const r of rows) {
    if (r.step !== 'hitl_pause') continue;
    const next = rows.find((c) => c.seq > r.seq);
    const claim = isClaimRow(r, next) ? next : undefined;
    let answer: Json | null = null;
    if (claim) answer = resumeAnswer(await store.readState(claim)) as Json | null;
    const open = r.id === openId;
    const recorded = open ? await store.getDecision(r.executionId, r.id) : null;
    views.push({
      seq: r.seq,
      checkpointId: r.id,
      nodeId: r.nodeId,
      reason: r.interruptReason,
      context: r.interruptContext,
      state: open ? 'open' : claim ? 'answered' : 'closed',
      answer,
      decision:
        recorded && recorded.state === 'pending'
          ? {
              approved: recorded.approved,
              metadata: recorded.metadata as Json,
              decidedBy: recorded.decidedBy,
              decidedAt: recorded.decidedAt,
              source: recorded.source,
            }
          : null,
    });
  }
  return views;
}
