/**
 * Decisions on the plane: a person's answer to an open pause, recorded here
 * (POST /v1/executions/{id}/decision, the inspector's form) or in a local
 * store and ingested. The plane only RECORDS a decision: it never runs a step
 * and never claims the pause. The application's worker applies it through the
 * ordinary claim (ClaimRequest.decisionId), so exactly one machine resumes.
 *
 * - At most one decision per pause (the table's primary key); a second is
 *   refused with ALREADY_DECIDED naming the first.
 * - Where a decision stands is derived from its pause's claim, never stored:
 *   no claim yet → `pending`; claimed with this decision → `claimed` (held) or
 *   `applied` (its holder's local claim reported); claimed otherwise (a resume
 *   from code, a cancel, a deletion) → `superseded`.
 * - `feed_seq` orders the feed (GET /v1/decisions). It is drawn from the
 *   project's `decisions` clock, whose row lock the transaction takes first
 *   (`lockDecisionFeed`) and holds to commit (clocks.ts), so a reader that
 *   has seen seq n never later finds a smaller seq committed behind it.
 * - A recording wakes this process's long polls at once; while polls wait,
 *   the database is rechecked about every second, so decisions recorded by
 *   another plane process arrive too (the shared mechanism: long-poll.ts).
 */
import { and, asc, eq, gt, inArray, isNull, or, type SQL, sql } from 'drizzle-orm';
import { ErrorCode, issueProblems } from '../shared/errors.js';
import { startWithin } from '../shared/json.js';
import { LIMITS } from '../shared/limits.js';
import { DecisionRequest, type DecisionView, type PauseView } from '../shared/protocol.js';
import { Decision, type PendingInterrupt } from '../shared/rows.js';
import { uuidv7 } from '../shared/ids.js';
import { capped } from '../support/count.js';
import { drawKeys, lockClock } from './clocks.js';
import { type PlaneDb, rowsOf, type Tx } from './db/open.js';
import { checkpoints, claims, decisions, pendingInterrupts } from './db/schema.js';
import { type HttpError, refusal } from './http/errors.js';
import { announce, seqCursor, waitForFeed, waitersOf, type Feed } from './long-poll.js';
import { decodeCursor, encodeCursor, isIdCursor } from './reads/cursor.js';
import { decisionOfRow } from './reads/pauses.js';

type Conn = PlaneDb | Tx;
type DecisionRow = typeof decisions.$inferSelect;
type ClaimRow = typeof claims.$inferSelect;

/** Serialize the drawing of feed seqs of one project until the transaction ends (take it before any other lock): the `decisions` clock's row lock. */
export async function lockDecisionFeed(tx: Tx, projectId: string): Promise<void> {
  await lockClock(tx, projectId, 'decisions');
}

/** Wake this process's long polls of a project (after the transaction that recorded decisions committed). */
export function announceDecisions(db: PlaneDb, projectId: string): void {
  announce(db, 'decisions', projectId);
}

/** A decision and where it stands, from its pause's claim (null: not claimed). */
export function decisionView(
  d: DecisionRow,
  claim: Pick<ClaimRow, 'writerId' | 'decisionId' | 'appliedAt' | 'claimedAt'> | null,
): DecisionView {
  let state: DecisionView['state'] = 'pending';
  if (claim) state = claim.decisionId === d.decisionId ? (claim.appliedAt ? 'applied' : 'claimed') : 'superseded';
  return {
    ...decisionOfRow(d),
    state,
    appliedBy: claim?.writerId ?? null,
    appliedAt: claim ? (claim.appliedAt ?? claim.claimedAt).toISOString() : null,
    feedSeq: d.feedSeq,
  };
}

/** Decisions with their pause's claim (a left join on the pause's key: project, execution and checkpoint id). */
function withClaims(db: Conn) {
  return db
    .select({ d: decisions, claim: claims })
    .from(decisions)
    .leftJoin(
      claims,
      and(
        eq(claims.projectId, decisions.projectId),
        eq(claims.executionId, decisions.executionId),
        eq(claims.checkpointId, decisions.checkpointId),
      ),
    );
}

/** The decision recorded for one pause of an execution, with its state; null when none (a decision of another run is not this pause's). */
export async function decisionOf(
  db: Conn,
  projectId: string,
  executionId: string,
  checkpointId: string,
): Promise<DecisionView | null> {
  const [r] = await withClaims(db).where(
    and(
      eq(decisions.projectId, projectId),
      eq(decisions.executionId, executionId),
      eq(decisions.checkpointId, checkpointId),
    ),
  );
  return r ? decisionView(r.d, r.claim) : null;
}

/** The decision that holds the key (project, checkpoint id), whatever its execution; null when none. */
async function decisionHolding(db: Conn, projectId: string, checkpointId: string): Promise<DecisionView | null> {
  const [r] = await withClaims(db).where(
    and(eq(decisions.projectId, projectId), eq(decisions.checkpointId, checkpointId)),
  );
  return r ? decisionView(r.d, r.claim) : null;
}

/** Every problem of a decision body, by the same rules as `Resume` (unknown fields named). */
function problemsOf(body: unknown): string[] {
  const r = DecisionRequest.safeParse(body);
  const out = r.success ? [] : issueProblems(r.error, 'the body');
  if (r.success && r.data.comment !== undefined && 'comment' in r.data.metadata)
    out.push("comment: given twice (as 'comment' and as 'metadata.comment')");
  return out;
}

/** Throw 400 INVALID_DECISION naming every problem of a decision body (the route's validation answers with it too). */
export function refuseBadDecision(body: unknown): void {
  const problems = problemsOf(body);
  if (problems.length)
    throw refusal(ErrorCode.INVALID_DECISION, `invalid decision, nothing was recorded: ${problems.join('; ')}`, {
      details: { problems },
    });
}

/**
 * Record a decision for the open pause `req.checkpointId` of an execution, in
 * one transaction. Refused (nothing changed) with:
 * - 400 INVALID_DECISION naming every problem of the body (the code a local store uses);
 * - 409 ALREADY_DECIDED when the pause has a decision (details.decision: the first);
 * - 404 PAUSE_NOT_FOUND when the pause is not on the plane (or not this run's open pause);
 * - 409 PAUSE_CLOSED when it was claimed, or closed by a cancel or a deletion (details say by whom).
 * `decidedBy` is the key's name (or a local user's); `comment` goes into `metadata.comment`.
 */
export async function recordDecision(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  req: unknown,
  decidedBy: string,
  source: Decision['source'] = 'plane',
): Promise<DecisionView> {
  refuseBadDecision(req);
  const body = DecisionRequest.parse(req);
  const candidate = Decision.safeParse({
    decisionId: uuidv7(),
    executionId,
    checkpointId: body.checkpointId,
    approved: body.approved,
    metadata: body.comment === undefined ? body.metadata : { ...body.metadata, comment: body.comment },
    // cut where the wire does (200 units) and between characters: a key's name may be 128 characters of 2 units each
    decidedBy: startWithin(decidedBy, LIMITS.decidedByLength),
    source,
    decidedAt: new Date().toISOString(),
  });
  if (!candidate.success) {
    const list = candidate.error.issues.map((i) => `${i.path.join('.') || 'the decision'}: ${i.message}`);
    throw refusal(ErrorCode.INVALID_DECISION, `invalid decision, nothing was recorded: ${list.join('; ')}`, {
      details: { problems: list },
    });
  }
  const d = candidate.data;
  const view = await db.transaction(async (tx) => {
    await lockDecisionFeed(tx, projectId);
    // the run's pause row, locked: claimPause updates it in its transaction, so a claim commits wholly before this
    // recording (seen below: refused) or after it, never between check and insert: a resume from code then wins (the
    // decision shows superseded); a claim applying another decision looks for this one under the same lock: refused
    const [pause] = await tx
      .select()
      .from(pendingInterrupts)
      .where(and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.executionId, executionId)))
      .for('update');
    // one decision per (project, checkpoint id): one that holds it, of this run or (ingested) naming another, refuses this one
    const first = await decisionHolding(tx, projectId, d.checkpointId);
    // another run's decision holds the key, and this run has no such pause: nothing of that other run is this answer's
    // business (PAUSE_NOT_FOUND below); with this run's pause (an ingested decision took its key first) it is named
    if (first && (first.executionId === executionId || pause?.checkpointId === d.checkpointId)) {
      const whose = first.executionId === executionId ? '' : ` (recorded for execution '${first.executionId}')`;
      throw refusal(
        ErrorCode.ALREADY_DECIDED,
        `pause ${d.checkpointId} of execution '${executionId}' was already decided by '${first.decidedBy}' at ${first.decidedAt} (${first.approved ? 'approved' : 'declined'}; ${first.state})${whose}`,
        {
          details: { decision: first },
        },
      );
    }
    const [claim] = await tx
      .select()
      .from(claims)
      .where(
        and(
          eq(claims.projectId, projectId),
          eq(claims.checkpointId, d.checkpointId),
          eq(claims.executionId, executionId),
        ),
      );
    // a claim without the pause's row (an offline claim reported before the pause) closes nothing this plane shows
    const [held] = await tx
      .select({ id: checkpoints.id })
      .from(checkpoints)
      .where(
        and(
          eq(checkpoints.projectId, projectId),
          eq(checkpoints.id, d.checkpointId),
          eq(checkpoints.executionId, executionId),
        ),
      );
    if (claim && (held || claim.source === 'delete')) throw pauseClosed(executionId, d.checkpointId, claim);
    if (!pause || pause.checkpointId !== d.checkpointId) {
      const open = pause && pause.state === 'open' ? ` (its open pause is ${pause.checkpointId})` : '';
      throw refusal(
        ErrorCode.PAUSE_NOT_FOUND,
        `pause ${d.checkpointId} of execution '${executionId}' is not on this plane${open}`,
        {
          details: { executionId, checkpointId: d.checkpointId, openPause: open ? pause!.checkpointId : null },
        },
      );
    }
    if (pause.state !== 'open') {
      throw refusal(
        ErrorCode.PAUSE_CLOSED,
        `pause ${d.checkpointId} of execution '${executionId}' was claimed by writer '${pause.claimedBy}'`,
        {
          details: {
            executionId,
            checkpointId: d.checkpointId,
            claimedBy: pause.claimedBy,
            claimedAt: pause.claimedAt?.toISOString() ?? null,
          },
        },
      );
    }
    const [row] = await tx
      .insert(decisions)
      .values({ projectId, ...d, writerId: null, feedSeq: await drawKeys(tx, projectId, 'decisions', 1) })
      .returning();
    return decisionView(row, null);
  });
  announceDecisions(db, projectId);
  return view;
}

/** 409 PAUSE_CLOSED for a pause whose claim row says who closed it and how. */
function pauseClosed(executionId: string, checkpointId: string, c: ClaimRow): HttpError {
  const at = (c.appliedAt ?? c.claimedAt).toISOString();
  const how =
    c.source === 'cancel'
      ? `closed: its run was cancelled by writer '${c.writerId}' at ${at}`
      : c.source === 'delete'
        ? `closed: its run was deleted at ${at}`
        : `claimed by writer '${c.writerId}' at ${at}`;
  return refusal(ErrorCode.PAUSE_CLOSED, `pause ${checkpointId} of execution '${executionId}' was ${how}`, {
    details: {
      executionId,
      checkpointId,
      claimedBy: c.writerId,
      claimedAt: c.claimedAt.toISOString(),
      source: c.source,
    },
  });
}

/**
 * Store a decision a writer recorded locally (a `decision_recorded` event),
 * inside the ingest transaction (which took `lockDecisionFeed` first). The
 * pause need not be on the plane yet. When the pause already has another
 * decision, the first is kept and returned: the caller logs and counts it.
 */
export async function storeIngestedDecision(
  tx: Tx,
  projectId: string,
  writerId: string,
  d: Decision,
): Promise<{ stored: true } | { stored: false; first: Decision | null }> {
  const got = await tx
    .insert(decisions)
    // a key drawn for a decision the pause already has is left unused: the feed's keys increase, with gaps
    .values({ projectId, ...d, writerId, feedSeq: await drawKeys(tx, projectId, 'decisions', 1) })
    .onConflictDoNothing()
    .returning({ id: decisions.decisionId });
  if (got.length) return { stored: true };
  const [first] = await tx
    .select()
    .from(decisions)
    .where(
      and(
        eq(decisions.projectId, projectId),
        or(eq(decisions.checkpointId, d.checkpointId), eq(decisions.decisionId, d.decisionId)),
      ),
    )
    .orderBy(asc(decisions.feedSeq))
    .limit(1);
  return { stored: false, first: first ? decisionOfRow(first) : null };
}

/** A pause's claim, by (project, execution) too: the primary key of a pause, from a held claim. */
const claimOfPause = and(
  eq(claims.projectId, pendingInterrupts.projectId),
  eq(claims.executionId, pendingInterrupts.executionId),
  eq(claims.checkpointId, pendingInterrupts.checkpointId),
);

/**
 * Which pauses the inbox lists, in its two sets: `open`, and `held` (claimed at the plane and not yet applied; its
 * query joins the pause's claim by `claimOfPause`). The list and the count both read through this, so they agree.
 */
function inboxSet(projectId: string, set: 'open' | 'held'): SQL | undefined {
  if (set === 'open') return and(eq(pendingInterrupts.projectId, projectId), eq(pendingInterrupts.state, 'open'));
  return and(
    eq(pendingInterrupts.projectId, projectId),
    eq(pendingInterrupts.state, 'claimed'),
    eq(claims.source, 'api'),
    isNull(claims.appliedAt),
  );
}

/**
 * The approvals inbox: the project's pauses not yet answered (open, or claimed
 * at the plane and not yet applied), oldest first by the order they were
 * opened (the project's `pauses` clock, drawn in commit order: ingest-events.ts
 * stampOpenedPauses), each with its decision if one was recorded. Paged: a
 * reader following the cursor never misses a pause opened while it pages.
 * Two keyset reads merged, in one snapshot (a pause claimed or released
 * between them would show twice, or not at all): open pauses by their partial
 * index, and the held claims (few at any time) by theirs; neither walks the
 * pauses long answered.
 */
export async function listPauses(
  db: PlaneDb,
  projectId: string,
  o: { cursor?: string; limit: number },
): Promise<{ items: PauseView[]; nextCursor: string | null }> {
  const after = decodeCursor(o.cursor, isIdCursor) ?? 0;
  const read = (tx: Conn, open: boolean) => {
    const q = tx
      .select({ p: pendingInterrupts, claim: claims, d: decisions })
      .from(pendingInterrupts)
      .leftJoin(claims, claimOfPause)
      .leftJoin(
        decisions,
        and(
          eq(decisions.projectId, pendingInterrupts.projectId),
          eq(decisions.executionId, pendingInterrupts.executionId),
          eq(decisions.checkpointId, pendingInterrupts.checkpointId),
        ),
      );
    const where = and(inboxSet(projectId, open ? 'open' : 'held'), gt(pendingInterrupts.openedSeq, after));
    return q
      .where(where)
      .orderBy(asc(pendingInterrupts.openedSeq))
      .limit(o.limit + 1);
  };
  const both = await db.transaction(async (tx) => [...(await read(tx, true)), ...(await read(tx, false))], {
    isolationLevel: 'repeatable read',
    accessMode: 'read only',
  });
  const rows = both.sort((a, b) => a.p.openedSeq - b.p.openedSeq).slice(0, o.limit + 1);
  const page = rows.slice(0, o.limit);
  const now = Date.now();
  return {
    items: page.map(({ p, claim, d }) => {
      const pending = p.row as PendingInterrupt;
      return {
        ...pending,
        ageMs: Math.max(0, now - Date.parse(pending.createdAt)),
        state: claim ? ('claimed' as const) : ('open' as const),
        decision: d ? decisionView(d, claim) : null,
      };
    }),
    nextCursor: rows.length > o.limit ? encodeCursor(page[page.length - 1].p.openedSeq) : null,
  };
}

/**
 * How many pauses the inbox lists (`listPauses`' two sets: open, and claimed at the plane and not yet applied),
 * counted up to `cap`, `more` past it: the nav's count of Pending approvals. One statement: two index reads of at
 * most `cap` + 1 tiny rows each.
 */
export async function countPauses(db: PlaneDb, projectId: string, cap: number): Promise<{ n: number; more: boolean }> {
  const open = db
    .select({ one: sql<number>`1` })
    .from(pendingInterrupts)
    .where(inboxSet(projectId, 'open'))
    .limit(cap + 1);
  const held = db
    .select({ one: sql<number>`1` })
    .from(pendingInterrupts)
    .innerJoin(claims, claimOfPause)
    .where(inboxSet(projectId, 'held'))
    .limit(cap + 1);
  const [{ n }] = rowsOf<{ n: number }>(
    await db.execute(
      sql`SELECT (SELECT count(*)::int FROM (${open}) o) + (SELECT count(*)::int FROM (${held}) h) AS n`,
    ),
  );
  return capped(Number(n), cap);
}

/** The feed's cursor: the last feed seq seen, as a decimal string ('' or absent: from the start). */
export const feedCursor = (after: string | undefined): number => seqCursor(after, '/v1/decisions');

/** Decisions recorded after feed seq `after`, in recording order, with their states; `nextCursor` is the last one's seq (or `after`). */
export async function decisionFeed(
  db: PlaneDb,
  projectId: string,
  after: number,
  limit: number,
): Promise<{ items: DecisionView[]; nextCursor: string }> {
  const rows = await withClaims(db)
    .where(and(eq(decisions.projectId, projectId), gt(decisions.feedSeq, after)))
    .orderBy(asc(decisions.feedSeq))
    .limit(limit);
  const items = rows.map((r) => decisionView(r.d, r.claim));
  return { items, nextCursor: String(items.length ? items[items.length - 1].feedSeq : after) };
}

/** The decisions of the project at these feed seqs, in feed order, with their states. */
export async function decisionsAt(db: PlaneDb, projectId: string, feedSeqs: number[]): Promise<DecisionView[]> {
  if (!feedSeqs.length) return [];
  const rows = await withClaims(db)
    .where(and(eq(decisions.projectId, projectId), inArray(decisions.feedSeq, feedSeqs)))
    .orderBy(asc(decisions.feedSeq));
  return rows.map((r) => decisionView(r.d, r.claim));
}

/** The project's newest decision feed seq, or null when it has none. */
export async function newestDecision(db: PlaneDb, projectId: string): Promise<number | null> {
  const [r] = await db
    .select({ max: sql<string | null>`max(${decisions.feedSeq})` })
    .from(decisions)
    .where(eq(decisions.projectId, projectId));
  return r?.max == null ? null : Number(r.max);
}

/** The decision feed, for the shared long poll (long-poll.ts). */
const DECISIONS: Feed<Awaited<ReturnType<typeof decisionFeed>>> = {
  name: 'decisions',
  page: decisionFeed,
  newest: newestDecision,
};

/** This process's waiting decision polls, their listeners and recheck timers (all 0 when none waits: a leak shows here). */
export function feedWaiters(db: PlaneDb): { polls: number; listeners: number; timers: number } {
  return waitersOf(db, DECISIONS.name);
}

/**
 * The long poll: the feed page after `after` at once when it has decisions,
 * else wait up to `waitMs` for one (this process's wake-up, or the shared
 * recheck of the database seeing a newer seq), else an empty page with the
 * same cursor. Stops waiting when `signal` aborts (the client hung up, the
 * plane closes).
 */
export function waitForDecisions(
  db: PlaneDb,
  projectId: string,
  after: number,
  limit: number,
  waitMs: number,
  signal?: AbortSignal,
) {
  return waitForFeed(db, DECISIONS, projectId, after, limit, waitMs, signal);
}
