/**
 * Read side of the plane: listings, rows, quarantine, writers, claim
 * conflicts and takeovers. Every query is project-scoped, and nothing here
 * writes (claims and takeovers are arbitrated in claims.ts). The restore
 * bundle's pages are in restore.ts.
 */
import { and, asc, desc, eq, gt, gte, inArray, lt, lte, or, sql } from 'drizzle-orm';
import { chainBase, decodeChain } from '../shared/codec.js';
import { ErrorCode, runErrorOf, type RunError } from '../shared/errors.js';
import { LIMITS } from '../shared/limits.js';
import { type Checkpoint, type Decision, ExecutionId, type PendingInterrupt } from '../shared/rows.js';
import type { Json } from '../shared/json.js';
import type { HoleView } from '../shared/protocol.js';
import { sumUsage, type UsageTotal } from '../shared/usage.js';
import type { PlaneDb } from './db/open.js';
import { HttpError } from './http/errors.js';
import {
  checkpoints,
  claimConflicts,
  claims,
  decisions,
  events,
  executions,
  holes,
  pendingInterrupts,
  quarantine,
  runTakeovers,
  writers,
} from './db/schema.js';
import { holeIsGap } from './ingest.js';

export const encodeCursor = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
export function decodeCursor<T>(c: string | undefined, check: (v: unknown) => v is T): T | undefined {
  if (!c) return undefined;
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown;
    if (check(v)) return v;
  } catch {
    /* fall through */
  }
  throw new CursorError();
}
/** A page cursor this plane did not issue: 400 BAD_CURSOR (a request's query names it). */
export class CursorError extends HttpError {
  constructor(message = 'cursor is not one this plane issued') {
    super(400, ErrorCode.BAD_CURSOR, message);
  }
}

// A cursor's values go into queries as they are, so each check admits only what the compared column can hold
// (a value it cannot is a database error, a 500): a cursor that passes is one this plane could have issued.

/** A seq: a row's (int4, 0..LIMITS.maxSeq). */
export const isSeqCursor = (v: unknown): v is number =>
  Number.isInteger(v) && (v as number) >= 0 && (v as number) <= LIMITS.maxSeq;
/** An id drawn from a bigserial, as the plane reads it (a JS number): a non-negative safe integer. */
export const isIdCursor = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
/**
 * A time as the plane writes it: `toISOString()` of its own clock, so canonical
 * (the parse gives back the same string) with a four-digit year of 0001–9999,
 * what Postgres reads (`Date.parse` also takes '1', '+275760-…' and year 0000).
 */
const isPlaneTime = (v: unknown): v is string =>
  typeof v === 'string' && /^(?!0000)\d{4}-/.test(v) && !Number.isNaN(Date.parse(v)) && new Date(v).toISOString() === v;
const isExecCursor = (v: unknown): v is [string, string] =>
  Array.isArray(v) && v.length === 2 && isPlaneTime(v[0]) && ExecutionId.safeParse(v[1]).success;

export interface ExecutionFilter {
  status?: string;
  writer?: string;
  updatedSince?: string;
  q?: string;
  cursor?: string;
  limit: number;
}

/**
 * The run list query. Its ORDER BY matches the `executions_recent` and
 * `executions_status_recent` indexes exactly (DESC NULLS LAST), so a page is
 * an index range scan, never a sort of the project's runs.
 */
export function executionsQuery(db: PlaneDb, projectId: string, f: ExecutionFilter) {
  const cur = decodeCursor(f.cursor, isExecCursor);
  const conds = [eq(executions.projectId, projectId)];
  if (f.status) conds.push(eq(executions.status, f.status));
  if (f.writer) conds.push(eq(executions.writerId, f.writer));
  if (f.updatedSince)
    conds.push(sql`${executions.updatedAt} >= ${new Date(f.updatedSince).toISOString()}::timestamptz`);
  if (f.q) conds.push(sql`${executions.executionId} LIKE ${`${f.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`);
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

export async function listExecutions(db: PlaneDb, projectId: string, f: ExecutionFilter) {
  const rows = await executionsQuery(db, projectId, f);
  const page = rows.slice(0, f.limit);
  const last = page[page.length - 1];
  const errors = await endErrors(db, projectId, page);
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
      error: errors.get(e.executionId) ?? null,
      claimConflicts: conflicted.get(e.executionId) ?? 0,
    })),
    nextCursor: rows.length > f.limit && last ? encodeCursor([last.updatedAt.toISOString(), last.executionId]) : null,
  };
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

export async function getExecution(db: PlaneDb, projectId: string, executionId: string) {
  const [e] = await db
    .select()
    .from(executions)
    .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)));
  if (!e) return null;
  return {
    ...executionView(e),
    ...(await writerSpans(db, projectId, [e])).get(executionId)!,
    error: (await endErrors(db, projectId, [e])).get(executionId) ?? null,
    claimConflicts: (await conflictCounts(db, projectId, [executionId])).get(executionId) ?? 0,
  };
}

/**
 * When each run started and last wrote by its writers' clocks (the createdAt of
 * its first and newest rows): informational, as row times are, but the run's
 * own times, not when the plane happened to receive it. Two point lookups a run.
 */
async function writerSpans(db: PlaneDb, projectId: string, page: (typeof executions.$inferSelect)[]) {
  const out = new Map<string, { startedAt: string | null; lastWriteAt: string | null }>();
  if (!page.length) return out;
  const rows = await db
    .select({ executionId: checkpoints.executionId, seq: checkpoints.seq, createdAt: checkpoints.createdAt })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.projectId, projectId),
        or(
          ...page.map((e) => and(eq(checkpoints.executionId, e.executionId), inArray(checkpoints.seq, [0, e.lastSeq]))),
        ),
      ),
    );
  for (const e of page) out.set(e.executionId, { startedAt: null, lastWriteAt: null });
  for (const r of rows) {
    const span = out.get(r.executionId)!;
    if (r.seq === 0) span.startedAt = r.createdAt;
    if (r.seq === page.find((e) => e.executionId === r.executionId)!.lastSeq) span.lastWriteAt = r.createdAt;
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

/** Why each failed run of `page` failed: the error its run-end marker carries (`nodeOutput.error`). */
async function endErrors(
  db: PlaneDb,
  projectId: string,
  page: (typeof executions.$inferSelect)[],
): Promise<Map<string, RunError>> {
  const failed = page.filter((e) => e.status === 'failed');
  if (!failed.length) return new Map();
  const ends = await db
    .select({ executionId: checkpoints.executionId, row: checkpoints.row })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.projectId, projectId),
        or(...failed.map((e) => and(eq(checkpoints.executionId, e.executionId), eq(checkpoints.seq, e.lastSeq)))),
      ),
    );
  return new Map(ends.map((r) => [r.executionId, runErrorOf((r.row as Checkpoint).nodeOutput)]));
}

/**
 * The holes of one execution by seq: each row the plane refused (at most one
 * per seq), leaving out the refused rows of another branch (see `holeIsGap`),
 * then each run of seqs below a held row that never arrived and was not
 * refused either (code `missing`, at its first seq, named by the writer and
 * arrival of the row after it). Both leave the rows after them undecodable here.
 */
export async function listHoles(db: PlaneDb, projectId: string, executionId: string): Promise<HoleView[]> {
  const rows = await db
    .select()
    .from(holes)
    .where(and(eq(holes.projectId, projectId), eq(holes.executionId, executionId), holeIsGap))
    .orderBy(asc(holes.seq));
  const refused: HoleView[] = rows.map((h) => ({
    seq: h.seq,
    code: h.code,
    reason: h.reason,
    writerId: h.writerId,
    rowId: h.rowId,
    at: h.at.toISOString(),
  }));
  // the run's summary says whether a seq is missing at all: only then are its rows walked for where
  const [summary] = await db
    .select({ rowCount: executions.rowCount, lastSeq: executions.lastSeq })
    .from(executions)
    .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)));
  if (!summary || summary.rowCount === summary.lastSeq + 1) return refused;
  const t = db
    .select({
      seq: checkpoints.seq,
      prev: sql<number>`lag(${checkpoints.seq}, 1, -1) OVER (ORDER BY ${checkpoints.seq})`.as('prev'),
      writerId: checkpoints.writerId,
      at: checkpoints.receivedAt,
    })
    .from(checkpoints)
    .where(and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId)))
    .as('t');
  const gaps = await db.select().from(t).where(sql`${t.seq} > ${t.prev} + 1`).orderBy(asc(t.seq));
  const missing: HoleView[] = [];
  for (const g of gaps) {
    // the seqs between two held rows, less those a refusal already names (walked by the refusals, never seq by seq)
    let from = Number(g.prev) + 1;
    for (const at of [...refused.map((h) => h.seq).filter((q) => q >= from && q < g.seq), g.seq]) {
      if (from < at) {
        const span = from === at - 1 ? `row ${from}` : `rows ${from}-${at - 1}`;
        missing.push({
          seq: from,
          code: 'missing',
          reason: `${span} never reached this plane (row ${g.seq} did)`,
          writerId: g.writerId,
          rowId: null,
          at: g.at.toISOString(),
        });
      }
      from = at + 1;
    }
  }
  return [...refused, ...missing].sort((a, b) => a.seq - b.seq);
}

/**
 * The most row bytes (as JSON text) one page of rows carries, whatever its
 * `limit`: 1000 rows of up to `LIMITS.rowBytes` each would be a gigabyte in
 * the plane's memory for one request. A page always carries at least one row
 * (a row is at most `LIMITS.rowBytes`), so paging always moves on.
 */
export const PAGE_BYTES = 8 * 1024 * 1024;

/**
 * One page of an execution's rows with seq in (after, upTo], in seq order: at
 * most `limit` rows and PAGE_BYTES of them (sizes read first, then only the
 * rows that fit), and whether rows are left after it.
 */
export async function rowPage(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  after: number,
  upTo: number | null,
  limit: number,
): Promise<{ rows: { seq: number; row: unknown }[]; more: boolean; bytes: number }> {
  const range = (last: number | null) =>
    and(
      eq(checkpoints.projectId, projectId),
      eq(checkpoints.executionId, executionId),
      gt(checkpoints.seq, after),
      last === null ? undefined : lte(checkpoints.seq, last),
    );
  const sizes = await db
    .select({ seq: checkpoints.seq, bytes: sql<number>`octet_length(${checkpoints.row}::text)` })
    .from(checkpoints)
    .where(range(upTo))
    .orderBy(asc(checkpoints.seq))
    .limit(limit + 1);
  const { take, bytes } = fitting(sizes, limit, PAGE_BYTES, true);
  if (take === 0) return { rows: [], more: false, bytes };
  const rows = await db
    .select({ seq: checkpoints.seq, row: checkpoints.row })
    .from(checkpoints)
    .where(range(sizes[take - 1].seq))
    .orderBy(asc(checkpoints.seq));
  return { rows, more: sizes.length > take, bytes };
}

/** How many of these sizes (in order, at most `limit`) fit in `budget` bytes, and their sum; the first always fits when `oneAnyway`. */
export function fitting(
  sizes: { bytes: number }[],
  limit: number,
  budget: number,
  oneAnyway: boolean,
): { take: number; bytes: number } {
  let bytes = 0;
  let take = 0;
  for (; take < Math.min(limit, sizes.length); take++) {
    const next = bytes + Number(sizes[take].bytes);
    if (next > budget && (take > 0 || !oneAnyway)) break;
    bytes = next;
  }
  return { take, bytes };
}

export async function listRows(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  o: { cursor?: string; limit: number },
) {
  const after = decodeCursor(o.cursor, isSeqCursor) ?? -1;
  // one snapshot for the sizes and the rows
  const { rows, more } = await db.transaction(
    (tx) => rowPage(tx as unknown as PlaneDb, projectId, executionId, after, null, o.limit),
    {
      isolationLevel: 'repeatable read',
      accessMode: 'read only',
    },
  );
  return {
    items: rows.map((r) => r.row as Checkpoint),
    nextCursor: more ? encodeCursor(rows[rows.length - 1].seq) : null,
  };
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

export async function openPause(db: PlaneDb, projectId: string, executionId: string): Promise<PendingInterrupt | null> {
  const [p] = await db
    .select()
    .from(pendingInterrupts)
    .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.executionId, executionId)));
  return p && p.state === 'open' ? (p.row as PendingInterrupt) : null;
}

export async function pauseState(db: PlaneDb, projectId: string, executionId: string) {
  const [p] = await db
    .select()
    .from(pendingInterrupts)
    .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.executionId, executionId)));
  if (!p) return null;
  const [c] = await db
    .select()
    .from(claims)
    .where(and(eq(claims.projectId, projectId), eq(claims.checkpointId, p.checkpointId)));
  return {
    pending: p.row as PendingInterrupt,
    state: p.state,
    claimedBy: p.claimedBy,
    claimedAt: p.claimedAt?.toISOString() ?? null,
    /** held: claimed at the plane, the holder's local claim not yet reported; applied: reported (final). */
    claim: c
      ? {
          writerId: c.writerId,
          source: c.source,
          claimedAt: c.claimedAt.toISOString(),
          appliedAt: c.appliedAt?.toISOString() ?? null,
          state: c.appliedAt ? ('applied' as const) : ('held' as const),
        }
      : null,
  };
}

/** A stored decision as the wire row. */
export function decisionOfRow(d: typeof decisions.$inferSelect): Decision {
  return {
    decisionId: d.decisionId,
    executionId: d.executionId,
    checkpointId: d.checkpointId,
    approved: d.approved,
    metadata: d.metadata as Decision['metadata'],
    decidedBy: d.decidedBy,
    source: d.source as Decision['source'],
    decidedAt: d.decidedAt,
  };
}

/** The decision recorded for a pause of this execution (by its checkpoint id), as the wire row; null when none. */
export async function pauseDecision(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  checkpointId: string,
): Promise<Decision | null> {
  const [d] = await db
    .select()
    .from(decisions)
    .where(
      and(
        eq(decisions.projectId, projectId),
        eq(decisions.checkpointId, checkpointId),
        eq(decisions.executionId, executionId),
      ),
    );
  return d ? decisionOfRow(d) : null;
}

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

/** The decoded state of one row: its snapshot chain, base to row, through the shared codec. */
export async function stateAt(db: PlaneDb, projectId: string, executionId: string, seq: number) {
  const [target] = await db
    .select({ row: checkpoints.row })
    .from(checkpoints)
    .where(
      and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId), eq(checkpoints.seq, seq)),
    );
  if (!target) return null;
  const row = target.row as Checkpoint;
  const chain = await db
    .select({ row: checkpoints.row })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.projectId, projectId),
        eq(checkpoints.executionId, executionId),
        gte(checkpoints.seq, chainBase(row)),
        lte(checkpoints.seq, seq),
      ),
    )
    .orderBy(asc(checkpoints.seq));
  return decodeChain(chain.map((c) => c.row as Checkpoint)).state;
}

/**
 * Fork links of a run: the run it was forked from (its seq-0 fork_origin row
 * names it) and the runs forked from it (their fork_origin rows name this one).
 */
export async function forkLinks(db: PlaneDb, projectId: string, executionId: string) {
  const [origin] = await db
    .select({ row: checkpoints.row })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.projectId, projectId),
        eq(checkpoints.executionId, executionId),
        eq(checkpoints.seq, 0),
        eq(checkpoints.step, 'fork_origin'),
      ),
    );
  const from = origin
    ? ((origin.row as Checkpoint).nodeInput as { executionId?: string; checkpointId?: string; step?: string } | null)
    : null;
  const forks = await db
    .select({
      executionId: checkpoints.executionId,
      checkpointId: sql<string>`${checkpoints.row}->'nodeInput'->>'checkpointId'`,
    })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.projectId, projectId),
        eq(checkpoints.seq, 0),
        eq(checkpoints.step, 'fork_origin'),
        sql`${checkpoints.row}->'nodeInput'->>'executionId' = ${executionId}`,
      ),
    )
    .orderBy(asc(checkpoints.executionId));
  return {
    forkOf:
      from?.executionId && from.checkpointId
        ? { executionId: from.executionId, checkpointId: from.checkpointId, step: from.step ?? 'step' }
        : null,
    forks,
  };
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
