/**
 * The run list and one run: its summary, when its writers started and last
 * wrote it, why it failed, its claim conflicts, its model usage, its fork
 * links and its takeovers. Project-scoped; nothing here writes.
 */
import { and, asc, eq, gt, inArray, like, lt, or, sql } from 'drizzle-orm';
import { ErrorCode } from '../../shared/errors.js';
import type { Checkpoint } from '../../shared/rows.js';
import type { Json } from '../../shared/json.js';
import { sumUsage, type UsageTotal } from '../../shared/usage.js';
import { likeContains, likeStart } from '../db/like.js';
import type { PlaneDb } from '../db/open.js';
import { checkpoints, claimConflicts, executions, runOwners, runTakeovers } from '../db/schema.js';
import { GRAPH_AGENT_PATH } from '../../support/langgraph.js';
import type { RunState } from '../../shared/protocol.js';
import { type LeaseView, runState } from '../../support/run-words.js';
import { capped, type Counted } from '../../support/count.js';
import { decodeCursor, encodeCursor, isExecCursor } from './cursor.js';
import { graphPauses } from './graph-threads.js';
import { rowsAt } from './rows-at.js';
import { endError, newestRows, type RunFacts } from './newest-rows.js';

export interface ExecutionFilter {
  status?: string;
  /** With status `paused`: the running LangGraph threads too (one may wait at an interrupt, which its summary does not know; the caller reads them). */
  graphThreadsToo?: boolean;
  writer?: string;
  updatedSince?: string;
  q?: string;
  /** runs whose agent path contains this (any case) */
  agent?: string;
  /** failed runs whose error (their end marker's, as `runErrorOf` reads it) has this code */
  errorCode?: string;
  /** only the runs that need attention (inspector/source.ts `RunsQuery.attention` says which) */
  attention?: { pausedBefore: string };
  cursor?: string;
  limit: number;
}

/** A LangGraph thread's run, by its agent path (it holds no lease of its own: never stale). */
const graphThread = or(eq(executions.agent, GRAPH_AGENT_PATH), like(executions.agent, `${GRAPH_AGENT_PATH}/%`))!;

/**
 * The run list's filters as conditions on `executions` (its cursor apart: the count reads without it). A subquery
 * names the project as a constant, not through its correlation with `executions`: so the statement is routed to
 * the project's shard alone (schema.ts).
 */
function executionConds(projectId: string, f: ExecutionFilter) {
  const conds = [eq(executions.projectId, projectId)];
  if (f.status === 'paused' && f.graphThreadsToo) {
    conds.push(or(eq(executions.status, 'paused'), and(eq(executions.status, 'running'), graphThread))!);
  } else if (f.status) conds.push(eq(executions.status, f.status));
  if (f.writer) conds.push(eq(executions.writerId, f.writer));
  if (f.updatedSince)
    conds.push(sql`${executions.updatedAt} >= ${new Date(f.updatedSince).toISOString()}::timestamptz`);
  if (f.q) conds.push(sql`${executions.executionId} LIKE ${likeStart(f.q)}`);
  if (f.agent) conds.push(sql`${executions.agent} ILIKE ${likeContains(f.agent)}`);
  if (f.errorCode)
    conds.push(
      eq(executions.status, 'failed'),
      sql`EXISTS (SELECT 1 FROM ${checkpoints} WHERE ${checkpoints.projectId} = ${projectId}
        AND ${checkpoints.executionId} = ${executions.executionId} AND ${checkpoints.seq} = ${executions.lastSeq}
        AND coalesce(${checkpoints.row}->'nodeOutput'->'error'->>'code', ${ErrorCode.RUN_FAILED}) = ${f.errorCode})`,
    );
  if (f.attention) {
    const pausedBefore = new Date(f.attention.pausedBefore).toISOString();
    conds.push(
      or(
        eq(executions.status, 'failed'),
        // stale: its owner's hold expired without a release or an end (the runner crashed or stalled)
        and(
          eq(executions.status, 'running'),
          sql`NOT coalesce(${graphThread}, false)`,
          sql`EXISTS (SELECT 1 FROM ${runOwners} WHERE ${runOwners.projectId} = ${projectId}
            AND ${runOwners.executionId} = ${executions.executionId} AND ${runOwners.state} = 'held'
            AND ${runOwners.expiresAt} <= now())`,
        ),
        and(eq(executions.status, 'paused'), sql`${executions.updatedAt} < ${pausedBefore}::timestamptz`),
        sql`${executions.holeCount} > 0`,
        sql`${executions.rowCount} <> ${executions.lastSeq} + 1`,
        sql`EXISTS (SELECT 1 FROM ${claimConflicts} WHERE ${claimConflicts.projectId} = ${projectId}
          AND ${claimConflicts.executionId} = ${executions.executionId})`,
      )!,
    );
  }
  return conds;
}

/**
 * The run list query. Its ORDER BY matches the `executions_recent` and
 * `executions_status_recent` indexes exactly (DESC NULLS LAST), so a page is
 * an index range scan, never a sort of the project's runs; every filter is a
 * condition of it, read as the scan goes.
 */
export function executionsQuery(db: PlaneDb, projectId: string, f: ExecutionFilter) {
  const cur = decodeCursor(f.cursor, isExecCursor);
  const conds = executionConds(projectId, f);
  if (cur) {
    const at = sql`${cur[0]}::timestamptz`;
    conds.push(
      or(
        sql`${executions.updatedAt} < ${at}`,
        and(sql`${executions.updatedAt} = ${at}`, lt(executions.executionId, cur[1])),
      )!,
    );
  }
  return db
    .select()
    .from(executions)
    .where(and(...conds))
    .orderBy(sql`${executions.updatedAt} DESC NULLS LAST`, sql`${executions.executionId} DESC NULLS LAST`)
    .limit(f.limit + 1);
}

/**
 * How many runs the list's filters match (every page, its cursor apart), counted up to `cap`: `more` past it.
 * `atMost`: with status running or paused, LangGraph threads are among them, which the page reads one by one
 * (one waiting at an interrupt is paused there, not running), so `n` may count some the pages leave out.
 */
export async function countExecutions(
  db: PlaneDb,
  projectId: string,
  f: ExecutionFilter,
  cap: number,
): Promise<Counted> {
  const conds = executionConds(projectId, f);
  const matched = db
    .select({ one: sql<number>`1`.as('one') })
    .from(executions)
    .where(and(...conds))
    .limit(cap + 1)
    .as('matched');
  const [{ n }] = await db.select({ n: sql<number>`count(*)::int` }).from(matched);
  const threads =
    f.status === 'running' || f.status === 'paused'
      ? await db
          .select({ one: sql<number>`1` })
          .from(executions)
          .where(and(...conds, eq(executions.status, 'running'), graphThread))
          .limit(1)
      : [];
  return { ...capped(Number(n), cap), atMost: threads.length > 0 };
}

/**
 * One page of the run list, and the newest rows of its runs that say more than their summaries (newest-rows.ts): a
 * caller deriving more of them (a cancel's reason, a thread's interrupt) reads no row again.
 */
export async function executionPage(db: PlaneDb, projectId: string, f: ExecutionFilter) {
  const rows = await executionsQuery(db, projectId, f);
  const page = rows.slice(0, f.limit);
  const last = page[page.length - 1];
  const newest = await newestRows(db, projectId, page);
  const conflicted = await conflictCounts(
    db,
    projectId,
    page.map((e) => e.executionId),
  );
  const spans = await writerSpans(db, projectId, page);
  return {
    items: page.map((e) => ({
      ...executionView(e),
      ...spans.get(e.executionId)!,
      error: endError(e, newest),
      claimConflicts: conflicted.get(e.executionId) ?? 0,
    })),
    nextCursor: rows.length > f.limit && last ? encodeCursor([last.updatedAt.toISOString(), last.executionId]) : null,
    newest,
  };
}

/** The API's listing: a page of runs, each with the state the inspector shows it in (`withStates`). */
export async function listExecutions(db: PlaneDb, projectId: string, f: ExecutionFilter) {
  const { items, nextCursor, newest } = await executionPage(db, projectId, f);
  return { items: await withStates(db, projectId, items, newest), nextCursor };
}

/**
 * What a run's summary does not say of these runs: the interrupt each running LangGraph thread waits at
 * (graph-threads.ts; its summary says running) and the plane's hold of every other running run (`runHolds`).
 * `newest`: their newest rows, as `executionPage` read them (read here when not given).
 */
export async function runStateFacts(
  db: PlaneDb,
  projectId: string,
  runs: readonly RunFacts[],
  newest?: ReadonlyMap<string, Checkpoint>,
) {
  const paused = await graphPauses(db, projectId, runs, newest);
  const holds = await runHolds(
    db,
    projectId,
    runs.filter((r) => r.status === 'running' && !paused.has(r.executionId)).map((r) => r.executionId),
  );
  return { paused, holds };
}

/** `runs`, each with `state`: what the inspector shows it as (support/run-words.ts `runState`: stale, a thread paused). */
export async function withStates<T extends ReturnType<typeof executionView>>(
  db: PlaneDb,
  projectId: string,
  runs: T[],
  newest?: ReadonlyMap<string, Checkpoint>,
): Promise<(T & { state: RunState })[]> {
  const { paused, holds } = await runStateFacts(db, projectId, runs, newest);
  return runs.map((r) => ({
    ...r,
    state: runState({ ...r, lease: holds.get(r.executionId) ?? null }, { graphPaused: paused.has(r.executionId) }),
  }));
}

export function executionView(e: typeof executions.$inferSelect) {
  return {
    executionId: e.executionId,
    status: e.status as 'running' | 'paused' | 'completed' | 'failed' | 'cancelled',
    rowCount: e.rowCount,
    lastSeq: e.lastSeq,
    lastNodeId: e.lastNodeId,
    lastStep: e.lastStep,
    agent: e.agent,
    writerId: e.writerId,
    // a refused row, or a seq below the newest that never arrived (its writer's outbox lost it, or it is still on its way)
    complete: e.holeCount === 0 && e.rowCount === e.lastSeq + 1,
    holeCount: e.holeCount,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
  };
}

/** A part of a run the plane may hold beside its rows, as `runSummary` says whether it holds any. */
export type RunPart = 'holes' | 'takeovers' | 'quarantine' | 'decisions' | 'pause';

/**
 * One run's summary row and, in the same read, how many claim conflicts it has and whether the plane holds any of
 * each `RunPart` of it (a refused row, a takeover, a quarantined row, a decision, a pause): a reader of a whole run
 * (its page) skips the reads of the parts it has none of. Null: no such run.
 */
export async function runSummary(db: PlaneDb, projectId: string, executionId: string) {
  // correlated on the summary row by name (a column of a one-table select is written without its table); the
  // project a constant, so the statement is routed to the project's shard alone (schema.ts)
  const of = (table: string) =>
    sql`FROM ${sql.raw(table)} x WHERE x.project_id = ${projectId} AND x.execution_id = executions.execution_id`;
  const any = (table: string) => sql`EXISTS (SELECT 1 ${of(table)})`;
  const [r] = await db
    .select({
      row: executions,
      claimConflicts: sql`(SELECT count(*)::int ${of('claim_conflicts')})`,
      holes: any('holes'),
      takeovers: any('run_takeovers'),
      quarantine: any('quarantine'),
      decisions: any('decisions'),
      pause: any('pending_interrupts'),
    })
    .from(executions)
    .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)));
  if (!r) return null;
  const has: Record<RunPart, boolean> = {
    holes: r.holes === true,
    takeovers: r.takeovers === true,
    quarantine: r.quarantine === true,
    decisions: r.decisions === true,
    pause: r.pause === true,
  };
  return { row: r.row, claimConflicts: Number(r.claimConflicts), has };
}
export type RunSummaryRead = NonNullable<Awaited<ReturnType<typeof runSummary>>>;

/**
 * A run from its summary read (`runSummary`), and its newest row when that says more than its summary (as
 * `executionPage`): what the inspector's page shows of it.
 */
export async function runWithNewest(db: PlaneDb, projectId: string, s: RunSummaryRead) {
  const newest = await newestRows(db, projectId, [s.row]);
  return {
    run: { ...executionView(s.row), error: endError(s.row, newest), claimConflicts: s.claimConflicts },
    newest,
  };
}

/** One run, when its writers started and last wrote it, and its newest row when that says more than its summary (as `executionPage`); null: no such run. */
export async function executionWithNewest(db: PlaneDb, projectId: string, executionId: string) {
  const s = await runSummary(db, projectId, executionId);
  if (!s) return null;
  const { run, newest } = await runWithNewest(db, projectId, s);
  const { error, claimConflicts: conflicts, ...view } = run;
  const spans = (await writerSpans(db, projectId, [s.row])).get(executionId)!;
  return { run: { ...view, ...spans, error, claimConflicts: conflicts }, newest };
}

/** One run as the API shows it, with its state (`withStates`); null: no such run. */
export async function getExecution(db: PlaneDb, projectId: string, executionId: string) {
  const found = await executionWithNewest(db, projectId, executionId);
  return found && (await withStates(db, projectId, [found.run], found.newest))[0];
}

/**
 * When each run started and last wrote by its writers' clocks (the createdAt of
 * its first and newest rows): informational, as row times are, but the run's
 * own times, not when the plane happened to receive it. One read of two rows a run (rows-at.ts).
 */
async function writerSpans(db: PlaneDb, projectId: string, page: (typeof executions.$inferSelect)[]) {
  const out = new Map<string, { startedAt: string | null; lastWriteAt: string | null }>();
  for (const e of page) out.set(e.executionId, { startedAt: null, lastWriteAt: null });
  if (!page.length) return out;
  const lastSeq = new Map(page.map((e) => [e.executionId, e.lastSeq]));
  const keys = page.flatMap((e) => [
    { executionId: e.executionId, seq: 0 },
    { executionId: e.executionId, seq: e.lastSeq },
  ]);
  for (const r of await rowsAt(db, projectId, keys, { row: false })) {
    const span = out.get(r.executionId)!;
    if (r.seq === 0) span.startedAt = r.createdAt;
    if (r.seq === lastSeq.get(r.executionId)) span.lastWriteAt = r.createdAt;
  }
  return out;
}

/** How many claim conflicts each of these runs has (a marker in the run list). */
async function conflictCounts(db: PlaneDb, projectId: string, executionIds: string[]): Promise<Map<string, number>> {
  if (!executionIds.length) return new Map();
  const rows = await db
    .select({ executionId: claimConflicts.executionId, n: sql<number>`count(*)::int` })
    .from(claimConflicts)
    .where(and(eq(claimConflicts.projectId, projectId), inArray(claimConflicts.executionId, executionIds)))
    .groupBy(claimConflicts.executionId);
  return new Map(rows.map((r) => [r.executionId, Number(r.n)]));
}

/**
 * Model usage of each of these runs (a page of the run list): the rows that
 * carry usage, read in one query and summed here.
 */
export async function usageByRun(
  db: PlaneDb,
  projectId: string,
  executionIds: string[],
): Promise<Map<string, UsageTotal>> {
  if (!executionIds.length) return new Map();
  const rows = await db
    .select({ executionId: checkpoints.executionId, nodeOutput: sql<Json | null>`${checkpoints.row}->'nodeOutput'` })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.projectId, projectId),
        inArray(checkpoints.executionId, executionIds),
        sql`jsonb_typeof(${checkpoints.row}->'nodeOutput') = 'object'`,
        sql`jsonb_typeof(${checkpoints.row}->'nodeOutput'->'usage') = 'array'`,
      ),
    );
  const by = new Map<string, { nodeOutput: Json | null }[]>();
  for (const r of rows) {
    const list = by.get(r.executionId) ?? [];
    list.push({ nodeOutput: r.nodeOutput });
    by.set(r.executionId, list);
  }
  return new Map([...by].map(([id, list]) => [id, sumUsage(list)]));
}

/**
 * The run's model usage: the sum of `nodeOutput.usage` over all its rows (see
 * shared/usage.ts), read page by page so no run is too long to count.
 */
export async function runUsage(db: PlaneDb, projectId: string, executionId: string): Promise<UsageTotal> {
  const outputs: { nodeOutput: Json | null }[] = [];
  for (let after = -1; ; ) {
    const page = await db
      .select({ seq: checkpoints.seq, nodeOutput: sql<Json | null>`${checkpoints.row}->'nodeOutput'` })
      .from(checkpoints)
      .where(
        and(
          eq(checkpoints.projectId, projectId),
          eq(checkpoints.executionId, executionId),
          gt(checkpoints.seq, after),
          sql`jsonb_typeof(${checkpoints.row}->'nodeOutput') = 'object'`,
          sql`jsonb_typeof(${checkpoints.row}->'nodeOutput'->'usage') = 'array'`,
        ),
      )
      .orderBy(asc(checkpoints.seq))
      .limit(1000);
    for (const r of page) outputs.push({ nodeOutput: r.nodeOutput });
    if (page.length < 1000) break;
    after = page[page.length - 1].seq;
  }
  return sumUsage(outputs);
}

/**
 * Fork links of a run: the run it was forked from (its seq-0 fork_origin row
 * names it) and the runs forked from it (their fork_origin rows name this one),
 * in one read of those rows; the seq of the row it was forked at in a second,
 * only for a fork.
 */
export async function forkLinks(db: PlaneDb, projectId: string, executionId: string) {
  const c = checkpoints;
  const from = sql<string | null>`${c.row}->'nodeInput'->>'executionId'`;
  const links = await db
    .select({
      executionId: c.executionId,
      from,
      checkpointId: sql<string | null>`${c.row}->'nodeInput'->>'checkpointId'`,
      step: sql<string | null>`${c.row}->'nodeInput'->>'step'`,
    })
    .from(c)
    .where(
      and(
        eq(c.projectId, projectId),
        eq(c.seq, 0),
        eq(c.step, 'fork_origin'),
        or(eq(c.executionId, executionId), sql`${from} = ${executionId}`),
      ),
    )
    .orderBy(asc(c.executionId));
  const origin = links.find((l) => l.executionId === executionId);
  const forks = links
    .filter((l) => l.from === executionId)
    .map((l) => ({ executionId: l.executionId, checkpointId: l.checkpointId as string }));
  // the seq of the row it was forked at (null: not on this plane), for a link that lands on its page of the timeline
  const [at] =
    origin?.from && origin.checkpointId
      ? await db
          .select({ seq: c.seq })
          .from(c)
          .where(and(eq(c.projectId, projectId), eq(c.id, origin.checkpointId), eq(c.executionId, origin.from)))
      : [];
  return {
    forkOf:
      origin?.from && origin.checkpointId
        ? {
            executionId: origin.from,
            checkpointId: origin.checkpointId,
            step: origin.step ?? 'step',
            seq: at?.seq ?? null,
          }
        : null,
    forks,
  };
}

/**
 * The plane's hold of each of these runs (its owner record, owners.ts) as a
 * lease, by the plane's clock: the holder (the acquisition, or its writer for
 * one a row acquired) while held, and whether the hold still runs. A run with
 * no owner record is left out.
 */
export async function runHolds(
  db: PlaneDb,
  projectId: string,
  executionIds: string[],
): Promise<Map<string, LeaseView>> {
  if (!executionIds.length) return new Map();
  const rows = await db
    .select({
      executionId: runOwners.executionId,
      state: runOwners.state,
      holder: runOwners.holder,
      writerId: runOwners.writerId,
      expiresAt: runOwners.expiresAt,
      live: sql<boolean>`${runOwners.state} = 'held' AND ${runOwners.expiresAt} > now()`,
    })
    .from(runOwners)
    .where(and(eq(runOwners.projectId, projectId), inArray(runOwners.executionId, executionIds)));
  return new Map(
    rows.map((r) => {
      const held = r.state === 'held' && r.expiresAt !== null;
      return [
        r.executionId,
        {
          holder: held ? (r.holder ?? r.writerId) : null,
          expiresAt: held ? r.expiresAt!.toISOString() : null,
          live: held && r.live === true,
        },
      ];
    }),
  );
}

/** Takeovers of a run, oldest first: who took it from whom, at which seq, and the loser's last contact then (plane clock). */
export async function listTakeovers(db: PlaneDb, projectId: string, executionId: string) {
  const rows = await db
    .select()
    .from(runTakeovers)
    .where(and(eq(runTakeovers.projectId, projectId), eq(runTakeovers.executionId, executionId)))
    .orderBy(runTakeovers.fromSeq);
  return rows.map((r) => ({
    fromSeq: r.fromSeq,
    winnerWriterId: r.winnerWriterId,
    loserWriterId: r.loserWriterId,
    loserLastContactAt: r.loserLastContactAt?.toISOString() ?? null,
    at: r.at.toISOString(),
  }));
}
