/**
 * Run requests on the plane: a person's ask that the application act on a
 * run — `retry` a failed run (resume it without an answer, from its failed
 * step), `recover` a stale one (its runner's hold expired mid-run: take it over
 * and go on), `fork` a new run from one of its rows. The plane only RECORDS a
 * request and what the application reports of it: it never runs a step, never
 * writes a row of the run, never takes the run. The application's worker
 * (serveDecisions, client/runtime/requests.ts) applies each one.
 *
 * - A request names the row it acts on (`checkpointId`): the failed run's
 *   run-end marker (retry), the stale run's newest row (recover), the chosen
 *   row (fork). The worker acts only while the run's newest row is still that
 *   one (retry, recover: ResumeOptions.expectNewestId, MOVED_ON otherwise),
 *   so a request applied by two workers moves the run once.
 * - A fork request carries the fork's execution id, chosen here (a UUIDv7):
 *   applying it twice cannot make two forks. Its worker claims it first
 *   (`claimRequest`): of two machines one forks.
 * - At most one open request per run and action (a unique partial index): a
 *   second is REQUEST_OPEN naming the first.
 * - States: `open` until a worker reports; then `applied` (a worker applied
 *   it), `superseded` (the run moved on otherwise before any worker applied
 *   it) or `refused` (the application could not apply it: its code). An
 *   applied report wins over a superseded one (the worker that moved the run
 *   may report after another saw it moved).
 */
import { and, asc, desc, eq, gt, gte, lt, ne, or, sql } from 'drizzle-orm';
import { ErrorCode, issueProblems } from '../shared/errors.js';
import { uuidv7 } from '../shared/ids.js';
import { startWithin } from '../shared/json.js';
import { LIMITS } from '../shared/limits.js';
import {
  givenReason,
  RunRequestBody,
  type RunRequestClaim,
  RunRequestOutcome,
  type RunRequestAction,
  type RunRequestView,
} from '../shared/protocol.js';
import type { Checkpoint } from '../shared/rows.js';
import { type Hold, holdOf, recoverable } from '../support/run-words.js';
import { drawKeys } from './clocks.js';
import type { PlaneDb, Tx } from './db/open.js';
import { checkpoints, executions, runRequests } from './db/schema.js';
import { executionNotFound, refusal, requestNotFound } from './http/errors.js';
import type { RefusalCode } from '../shared/refusals.js';
import { decodeCursor, encodeCursor, isIdCursor } from './reads/cursor.js';
import { runHolds } from './reads/executions.js';
import { touchedBy } from './reads/touched.js';

type Conn = PlaneDb | Tx;
type Row = typeof runRequests.$inferSelect;

/** How long a fork request's claim holds another worker off (a claimer that died lets another fork after this). */
export const FORK_CLAIM_MS = 5 * 60_000;

/**
 * Draw the seq of a request about to be recorded, from the project's `requests` clock, as the transaction's first
 * step: the clock's row lock is held to commit (clocks.ts), so one project's requests are recorded one at a time and
 * a follower of `GET /v1/requests?after=` that has seen seq n never later finds a smaller seq committed behind it
 * (as the decision feed's `lockDecisionFeed`). A refused recording rolls the draw back.
 */
function drawRequestSeq(tx: Tx, projectId: string): Promise<number> {
  return drawKeys(tx, projectId, 'requests', 1);
}

/** A stored request as the wire says it. */
export function requestView(r: Row): RunRequestView {
  return {
    requestId: r.requestId,
    executionId: r.executionId,
    action: r.action as RunRequestAction,
    checkpointId: r.checkpointId,
    checkpointSeq: r.checkpointSeq,
    forkExecutionId: r.forkExecutionId,
    reason: r.reason,
    requestedBy: r.requestedBy,
    requestedAt: r.requestedAt.toISOString(),
    state: r.state as RunRequestView['state'],
    claimedBy: r.claimedBy,
    settledBy: r.settledBy,
    settledAt: r.settledAt?.toISOString() ?? null,
    code: r.outcomeCode,
    message: r.outcomeMessage,
    runStatus: r.runStatus,
    seq: r.seq,
  };
}

/**
 * Every problem of a request body (unknown fields named; a fork needs its row, retry and recover take none; its text
 * must be what the database can store: no U+0000, no lone surrogate). `names` spells a body's field as the caller
 * calls it (the inspector's form names the row by `seq`, which stands for `checkpointId`).
 */
export function requestBodyProblems(body: unknown, names: { checkpointId?: string } = {}): string[] {
  const r = RunRequestBody.safeParse(body);
  if (!r.success) return issueProblems(r.error, 'the body', names);
  const row = names.checkpointId ?? 'checkpointId';
  const problems: string[] = [];
  if (r.data.action === 'fork' && r.data.checkpointId === undefined)
    problems.push(`${row}: required for a fork (the row the new run branches from)`);
  if (r.data.action !== 'fork' && r.data.checkpointId !== undefined)
    problems.push(`${row}: only a fork names a row (a ${r.data.action} acts on the run's newest row)`);
  return problems;
}

/** 400 INVALID_RUN_REQUEST naming every problem of a body. */
export function refuseBadRequestBody(body: unknown): void {
  const problems = requestBodyProblems(body);
  if (problems.length)
    throw refusal(ErrorCode.INVALID_RUN_REQUEST, `invalid request, nothing was recorded: ${problems.join('; ')}`, {
      details: { problems },
    });
}

/** The run's newest row at the plane (null: none). */
async function newestRow(tx: Conn, projectId: string, executionId: string): Promise<Checkpoint | null> {
  const [r] = await tx
    .select({ row: checkpoints.row })
    .from(checkpoints)
    .where(and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId)))
    .orderBy(sql`${checkpoints.seq} DESC`)
    .limit(1);
  return (r?.row as Checkpoint | undefined) ?? null;
}

/** The run's hold at the plane (its owner record, support/run-words.ts `holdOf`); null: it is not running. */
async function holdAtPlane(
  db: Conn,
  projectId: string,
  run: { executionId: string; status: string; lastNodeId?: string | null },
): Promise<Hold | null> {
  if (run.status !== 'running') return null;
  const lease = (await runHolds(db as PlaneDb, projectId, [run.executionId])).get(run.executionId) ?? null;
  return holdOf({ ...run, lease });
}

/** Why a run is not recovered, by its hold (null: not running): the true reason, in words. */
function notStaleWords(executionId: string, status: string, hold: Hold | null): string {
  const is = `execution '${executionId}' is not stale`;
  switch (hold?.kind) {
    case 'held':
      return `${is}: its runner still holds it (a live lease until ${hold.until}), so it is not taken from it`;
    case 'thread':
      return `${is}: it is a LangGraph thread, which never ends with a marker; its application takes it up, not Recover`;
    case 'free':
      return `${is}: nobody holds it (no runner took it at the plane, or its runner released it), so no runner died mid-run; resume it from the application`;
    case 'lost':
      return `${is}: its copy was lost at the plane (its rows refused there)`;
    default:
      return `${is} (it is ${status}): only a running run whose runner's hold expired is recovered`;
  }
}

/** One refusal of a request's run: its code (its HTTP status is the code's, REFUSAL_STATUS), and the problem in words. */
interface Problem {
  code: RefusalCode;
  text: string;
  details?: Record<string, unknown>;
}

/**
 * Record a request for a run, in one transaction (its seq drawn first from
 * the project's `requests` clock, whose row lock orders the commits; then the
 * run's summary row locked, so a recording and an ingest are ordered). Refused, nothing changed, with
 * every problem named and the first one's code:
 * - 400 INVALID_RUN_REQUEST: the body;
 * - 404 EXECUTION_NOT_FOUND: no such run here;
 * - 409 RUN_NOT_FAILED (retry), RUN_NOT_STALE (recover), NOT_FORKABLE (fork: the
 *   row is not the run's, or its run-end marker);
 * - 409 REQUEST_OPEN: an open request of this run and action (details.request).
 */
export async function recordRequest(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  body: unknown,
  by: { name: string; keyId: string },
): Promise<RunRequestView> {
  refuseBadRequestBody(body);
  const b = RunRequestBody.parse(body);
  return db.transaction(async (tx) => {
    // first: the project's requests are recorded one at a time, so their seqs commit in order (the listing's cursor)
    const seq = await drawRequestSeq(tx, projectId);
    const [run] = await tx
      .select({ status: executions.status, lastNodeId: executions.lastNodeId })
      .from(executions)
      .where(and(eq(executions.projectId, projectId), eq(executions.executionId, executionId)))
      .for('update');
    const newest = run ? await newestRow(tx, projectId, executionId) : null;
    if (!run || !newest) throw executionNotFound(executionId);
    const problems: Problem[] = [];
    let row: Checkpoint = newest;
    if (b.action === 'retry' && run.status !== 'failed')
      problems.push({
        code: ErrorCode.RUN_NOT_FAILED,
        text: `execution '${executionId}' has not failed (it is ${run.status}): only a failed run is retried`,
        details: { status: run.status },
      });
    if (b.action === 'recover') {
      const hold = await holdAtPlane(tx, projectId, { executionId, status: run.status, lastNodeId: run.lastNodeId });
      if (!recoverable(hold))
        problems.push({
          code: ErrorCode.RUN_NOT_STALE,
          text: notStaleWords(executionId, run.status, hold),
          details: { status: run.status, hold: hold?.kind ?? null },
        });
    }
    if (b.action === 'fork') {
      const [at] = await tx
        .select({ row: checkpoints.row })
        .from(checkpoints)
        .where(
          and(
            eq(checkpoints.projectId, projectId),
            eq(checkpoints.id, b.checkpointId!),
            eq(checkpoints.executionId, executionId),
          ),
        );
      const chosen = (at?.row as Checkpoint | undefined) ?? null;
      if (!chosen)
        problems.push({
          code: ErrorCode.NOT_FORKABLE,
          text: `checkpoint '${b.checkpointId}' is not a row of execution '${executionId}' on this plane`,
          details: { checkpointId: b.checkpointId },
        });
      else if (chosen.step === 'run_end')
        problems.push({
          code: ErrorCode.NOT_FORKABLE,
          text: `checkpoint '${chosen.id}' (#${chosen.seq}) is the run-end marker, not a step: fork from a step`,
          details: { checkpointId: chosen.id },
        });
      else row = chosen;
    }
    const [open] = await tx
      .select()
      .from(runRequests)
      .where(
        and(
          eq(runRequests.projectId, projectId),
          eq(runRequests.executionId, executionId),
          eq(runRequests.action, b.action),
          eq(runRequests.state, 'open'),
        ),
      );
    if (open)
      problems.push({
        code: ErrorCode.REQUEST_OPEN,
        text: `a ${b.action} of execution '${executionId}' is already waiting for the application (asked by '${open.requestedBy}' at ${open.requestedAt.toISOString()})`,
        details: { request: requestView(open) },
      });
    if (problems.length) {
      const [first] = problems;
      throw refusal(first.code, `${problems.map((p) => p.text).join('; ')}; nothing was recorded`, {
        details: {
          executionId,
          problems: problems.map((p) => ({ code: p.code, message: p.text })),
          ...Object.assign({}, ...problems.map((p) => p.details ?? {})),
        },
      });
    }
    const [saved] = await tx
      .insert(runRequests)
      .values({
        projectId,
        requestId: uuidv7(),
        executionId,
        action: b.action,
        checkpointId: row.id,
        checkpointSeq: row.seq,
        forkExecutionId: b.action === 'fork' ? uuidv7() : null,
        reason: givenReason(b.reason),
        requestedBy: startWithin(by.name, LIMITS.decidedByLength),
        keyId: by.keyId,
        state: 'open',
        seq,
      })
      .returning();
    return requestView(saved);
  });
}

/** How many of a run's requests its page shows at a time; older ones are a page further (`requestsOfRun`). */
export const RUN_REQUESTS_PAGE = 50;

/**
 * A page of a run's requests, newest first by recording order (`seq`, never a clock): at most `limit` of those
 * recorded before `before` (a cursor this gave as `olderCursor`; none: from the newest). `olderCursor` pages on to
 * the older ones (null: there are none). A cursor this plane did not issue is 400 BAD_CURSOR.
 */
export async function requestsOfRun(
  db: Conn,
  projectId: string,
  executionId: string,
  o: { before?: string; limit?: number } = {},
): Promise<{ items: RunRequestView[]; olderCursor: string | null }> {
  const before = decodeCursor(o.before, isIdCursor);
  const limit = o.limit ?? RUN_REQUESTS_PAGE;
  const rows = await db
    .select()
    .from(runRequests)
    .where(
      and(
        eq(runRequests.projectId, projectId),
        eq(runRequests.executionId, executionId),
        before !== undefined ? lt(runRequests.seq, before) : undefined,
      ),
    )
    .orderBy(desc(runRequests.seq))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  return {
    items: page.map(requestView),
    olderCursor: rows.length > limit ? encodeCursor(page[page.length - 1].seq) : null,
  };
}

/**
 * Whether the run has moved past the row a retry or recover named: its newest row at the plane (`lastSeq`) is a
 * later one, so the application's worker finds it moved on (MOVED_ON) and does not apply the request. A fork
 * names the row it branches from, which the run moving on does not change.
 */
export const movedPast = (r: Pick<RunRequestView, 'action' | 'checkpointSeq'>, lastSeq: number): boolean =>
  r.action !== 'fork' && lastSeq > r.checkpointSeq;

/**
 * The actions of a run that a request waits for, whichever page of the run's requests shows it: an open one (a
 * second is REQUEST_OPEN), or an applied retry or recover whose rows have not reached the plane yet (the run has
 * not `movedPast` its row: its newest row there, `lastSeq`, is still the one the request named).
 */
export async function waitingActions(
  db: Conn,
  projectId: string,
  executionId: string,
  lastSeq: number,
): Promise<Set<RunRequestAction>> {
  const rows = await db
    .selectDistinct({ action: runRequests.action })
    .from(runRequests)
    .where(
      and(
        eq(runRequests.projectId, projectId),
        eq(runRequests.executionId, executionId),
        or(
          eq(runRequests.state, 'open'),
          // not movedPast: a retry or recover whose row is still the run's newest at the plane
          and(
            eq(runRequests.state, 'applied'),
            ne(runRequests.action, 'fork'),
            gte(runRequests.checkpointSeq, lastSeq),
          ),
        ),
      ),
    );
  return new Set(rows.map((r) => r.action as RunRequestAction));
}

/** The project's requests recorded after the cursor, in recording order; `state` filters (the worker asks for `open`). */
export async function listRequests(
  db: PlaneDb,
  projectId: string,
  o: { after?: string; limit: number; state?: RunRequestView['state']; writerId?: string },
): Promise<{ items: RunRequestView[]; nextCursor: string | null }> {
  const after = decodeCursor(o.after, isIdCursor) ?? 0;
  const rows = await db
    .select()
    .from(runRequests)
    .where(
      and(
        eq(runRequests.projectId, projectId),
        gt(runRequests.seq, after),
        o.state ? eq(runRequests.state, o.state) : undefined,
        // one writer's: requests of runs it delivered rows of, restored naming itself, or owns
        o.writerId === undefined ? undefined : touchedBy(projectId, o.writerId, sql`${runRequests.executionId}`),
      ),
    )
    .orderBy(asc(runRequests.seq))
    .limit(o.limit + 1);
  const page = rows.slice(0, o.limit);
  return {
    items: page.map(requestView),
    nextCursor: rows.length > o.limit ? encodeCursor(page[page.length - 1].seq) : null,
  };
}

/** One request of the project (null: none). */
export async function getRequest(db: Conn, projectId: string, requestId: string): Promise<RunRequestView | null> {
  const [r] = await db
    .select()
    .from(runRequests)
    .where(and(eq(runRequests.projectId, projectId), eq(runRequests.requestId, requestId)));
  return r ? requestView(r) : null;
}

async function lockedRequest(tx: Tx, projectId: string, requestId: string): Promise<Row> {
  const [r] = await tx
    .select()
    .from(runRequests)
    .where(and(eq(runRequests.projectId, projectId), eq(runRequests.requestId, requestId)))
    .for('update');
  if (!r) throw requestNotFound(requestId);
  return r;
}

/**
 * A worker takes a fork request to apply it: the first store instance holds it
 * (answered `won`; a copied store file under the same writer id is another
 * instance); another is answered `lost` with the holder, unless the
 * holder's claim is older than FORK_CLAIM_MS by the database's clock (its
 * worker died before the fork's first row: taken over). One UPDATE decides, so
 * of two claimers one wins. A request no longer open (a fork `started` or
 * settled) is answered `settled` with its state: nobody forks it again.
 */
export async function claimRequest(
  db: PlaneDb,
  projectId: string,
  requestId: string,
  claimer: RunRequestClaim,
): Promise<{ outcome: 'won' | 'lost' | 'settled'; request: RunRequestView }> {
  const instance = claimer.instance ?? null;
  // the claimer's own claim again (a restarted worker of the same store): same writer, and same instance when both are
  // known; a copied store file is another instance under the writer id, and does not share the claim
  const own = sql`(${runRequests.claimedBy} = ${claimer.writerId} AND (${runRequests.claimedInstance} IS NULL OR ${instance}::text IS NULL OR ${runRequests.claimedInstance} = ${instance}))`;
  const [won] = await db
    .update(runRequests)
    // a re-claim from an older client (no instance) keeps the instance the claim was made from
    .set({
      claimedBy: claimer.writerId,
      claimedInstance: sql`CASE WHEN ${runRequests.claimedBy} = ${claimer.writerId} THEN COALESCE(${instance}::text, ${runRequests.claimedInstance}) ELSE ${instance}::text END`,
      claimedAt: sql`now()`,
    })
    .where(
      and(
        eq(runRequests.projectId, projectId),
        eq(runRequests.requestId, requestId),
        eq(runRequests.state, 'open'),
        sql`(${runRequests.claimedBy} IS NULL OR ${own} OR ${runRequests.claimedAt} < now() - ${FORK_CLAIM_MS} * interval '1 millisecond')`,
      ),
    )
    .returning();
  if (won) return { outcome: 'won', request: requestView(won) };
  const now = await getRequest(db, projectId, requestId);
  if (!now) throw requestNotFound(requestId);
  return { outcome: now.state === 'open' ? 'lost' : 'settled', request: now };
}

/** Every problem of a worker's outcome report (the outcome route answers them: 400 INVALID_REQUEST, details.problems). */
export function outcomeProblems(body: unknown): string[] {
  const r = RunRequestOutcome.safeParse(body);
  return r.success ? [] : issueProblems(r.error, 'the body');
}

/** 400 INVALID_REQUEST naming every problem of an outcome report (details.problems); nothing changed. */
export function refuseBadOutcome(body: unknown): void {
  const problems = outcomeProblems(body);
  if (problems.length)
    throw refusal(ErrorCode.INVALID_REQUEST, `invalid outcome report, nothing changed: ${problems.join('; ')}`, {
      details: { problems },
    });
}

/**
 * A worker reports how applying a request went. An open request takes the
 * report (`started` only from the fork's claimer: its first row is written,
 * the request is no longer open, so nobody claims it again); a started one
 * takes its forker's final report; an applied one keeps its first applier (a
 * later report changes nothing); a superseded one becomes applied when its
 * applier reports (it saw the run moved by that very applier). The answer is
 * the request as it stands.
 */
export async function settleRequest(
  db: PlaneDb,
  projectId: string,
  requestId: string,
  body: RunRequestOutcome,
): Promise<RunRequestView> {
  return db.transaction(async (tx) => {
    const r = await lockedRequest(tx, projectId, requestId);
    const claimer =
      r.claimedBy === body.writerId &&
      (r.claimedInstance === null || body.instance === undefined || r.claimedInstance === body.instance);
    const takes =
      (r.state === 'open' && (body.outcome !== 'started' || claimer)) ||
      (r.state === 'superseded' && body.outcome === 'applied') ||
      (r.state === 'started' && body.outcome !== 'started' && r.settledBy === body.writerId);
    if (!takes) return requestView(r);
    const [now] = await tx
      .update(runRequests)
      .set({
        state: body.outcome,
        settledBy: body.writerId,
        settledAt: new Date(),
        outcomeCode: body.code ?? null,
        outcomeMessage: body.message ?? null,
        runStatus: body.runStatus ?? null,
      })
      .where(and(eq(runRequests.projectId, projectId), eq(runRequests.requestId, requestId)))
      .returning();
    return requestView(now);
  });
}
