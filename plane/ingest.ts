/**
 * Ingest: validate each row with the wire schemas, dedupe by id, store in one
 * transaction (shared with the project's other batches that arrive meanwhile),
 * and answer per row. A refused row is quarantined (writer, reason, bounded
 * payload) and never reaches the rows tables.
 */
import { createHash } from 'node:crypto';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { LIMITS } from '../shared/limits.js';
import { startWithin, utf8Bytes } from '../shared/json.js';
import { codePointOrder } from '../shared/text.js';
import { ExecutionId, executionOfEvent, OutboxEvent, type Checkpoint, type Decision } from '../shared/rows.js';
import type { Backlog, RowResult } from '../shared/protocol.js';
import { type PlaneDb, rowsOf, type Tx } from './db/open.js';
import { checkpoints, events, holes, quarantine, runContacts, runTakeovers, writers } from './db/schema.js';
import { issuesText } from './http/errors.js';
import { announceChanges } from './changes.js';
import { placeholderFrom, stampKeys } from './clocks.js';
import { announceDecisions, lockDecisionFeed } from './decisions.js';
import { type LastSteps, recordClaimConflicts, stampOpenedPauses, storeEvent } from './ingest-events.js';
import { followAccepted, markCancelled, refuseOffBranch } from './ingest-owners.js';
import { lockFreeOwners, lockOwners, PLANE_WRITER } from './owners.js';
import { clean, hashOf, type Item, reject } from './ingest-item.js';
import { refreshExecutions } from './run-summary.js';
import { KeyedGroupCommit } from './group-commit.js';
import type { Settled } from '../shared/settled.js';

function idOf(raw: unknown): string | null {
  const id = (raw as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? clean(id, 64) : null;
}

/** Parse and pre-check every row outside the transaction. */
function prepare(rows: unknown[]): Item[] {
  const firstById = new Map<string, Item>();
  return rows.map((raw, index) => {
    let text: string;
    try {
      text = JSON.stringify(raw) ?? 'null';
    } catch (e) {
      // JSON.parse took it, but it is nested past what a stack can write back (about 10,000 levels; the wire allows 64)
      // its quarantine record says what it can of the row (a record is one per writer and text)
      const id = idOf(raw);
      const kind = (raw as { kind?: unknown } | null)?.kind;
      const execution = executionGuess(raw);
      const about = [
        id && `id ${id}`,
        typeof kind === 'string' && `kind ${clean(kind, 64)}`,
        execution && `execution ${execution}`,
      ]
        .filter(Boolean)
        .join(', ');
      const item: Item = {
        index,
        id,
        raw,
        text: `(a row${about ? ` (${about})` : ''} nested too deep to write back as JSON: ${(e as Error).message})`,
      };
      reject(item, 'invalid', `(row): nested deeper than ${LIMITS.jsonDepth}`);
      return item;
    }
    const item: Item = { index, id: idOf(raw), raw, text };
    // the client's measure exactly (eventBytes): a row its store accepted is never too large here
    const bytes = utf8Bytes(text);
    if (bytes > LIMITS.rowBytes) {
      reject(item, 'too_large', `row is ${bytes} bytes, over the ${LIMITS.rowBytes}-byte limit`);
      return item;
    }
    const p = OutboxEvent.safeParse(raw);
    if (!p.success) {
      reject(item, 'invalid', issuesText(p.error.issues, '(row)'));
      return item;
    }
    const e = p.data;
    if (e.kind === 'checkpoint' && e.id !== e.row.id) {
      reject(item, 'invalid', 'id: a checkpoint event carries its checkpoint id');
      return item;
    }
    item.event = e;
    item.hash = hashOf(e);
    item.executionId = executionOfEvent(e);
    const first = firstById.get(e.id);
    if (first) {
      if (first.hash === item.hash) item.result = { id: item.id, status: 'duplicate' };
      else reject(item, 'conflict', `id ${e.id} appears twice in this batch with different payloads`);
      return item;
    }
    firstById.set(e.id, item);
    return item;
  });
}

export interface IngestOutcome {
  results: RowResult[];
  accepted: number;
  duplicate: number;
  rejected: number;
  /** Decisions of the batch: how many were stored, and each that lost to the pause's first decision (not part of the HTTP answer). */
  decisions: { stored: number; dropped: { decision: Decision; first: Decision | null }[] };
}

/** One ingest request of a group: a writer's batch as it came, and what was parsed of its rows. */
interface Batch {
  writerId: string;
  backlog: Backlog | undefined;
  rows: unknown[];
  ownerHoldMs: number;
  keyId: string | null;
}

/**
 * What the batches of one transaction changed, for its last steps (`finishGroup`): the runs to refresh and stamp,
 * the rows each run gained, the runs deleted (→ the deleting writer), the pauses opened and claim conflicts found,
 * the quarantine records inserted (placeholders, in batch order), and the next placeholder to give one.
 */
interface GroupState {
  touched: Set<string>;
  added: Map<string, number>;
  deleted: Map<string, string>;
  last: LastSteps;
  quarantined: number[];
  placeholder: number;
}

const forked = (s: GroupState): GroupState => ({
  touched: new Set(s.touched),
  added: new Map(s.added),
  deleted: new Map(s.deleted),
  last: { opened: new Set(s.last.opened), conflicts: [...s.last.conflicts] },
  quarantined: [...s.quarantined],
  placeholder: s.placeholder,
});

/** What one database handle's ingest transactions did since it was opened (`/metrics`, tests). */
export interface IngestCounts {
  /** Ingest transactions that committed batches. */
  transactions: number;
  /** Batches committed in them. */
  batches: number;
  /** The most batches one transaction committed. */
  largest: number;
  /** Batches tried again alone after their group's transaction failed as a whole. */
  apart: number;
}

/**
 * Per database handle, its group commit and its counts: every ingest through one handle (the route, the facade's
 * `ingestBatch`) shares them, as the handle's pool is shared, and they go with the handle (the long polls' watchers
 * are kept the same way, writer-wakes.ts).
 */
const registry = new WeakMap<PlaneDb, Registered>();

interface Registered {
  group: KeyedGroupCommit<Batch, IngestOutcome>;
  counts: IngestCounts;
  /** Per held run (project and run), the batches waiting for its owner record, one after another (`afterHeld`). */
  held: Map<string, Promise<unknown>>;
}

function registered(db: PlaneDb): Registered {
  let r = registry.get(db);
  if (!r) {
    const group = new KeyedGroupCommit<Batch, IngestOutcome>(
      (project, batches) => commitOrApart(db, r!, project, batches),
      { inFlight: INGEST_IN_FLIGHT, items: GROUP_BATCHES, weight: GROUP_ROWS, weightOf: (b) => b.rows.length },
    );
    r = { group, counts: { transactions: 0, batches: 0, largest: 0, apart: 0 }, held: new Map() };
    registry.set(db, r);
  }
  return r;
}

/**
 * Store a writer's batch: every row answered, in one transaction with the
 * other batches of its project that arrived while `INGEST_IN_FLIGHT` of the
 * project's transactions were under way in this process (a group commit: one
 * turn of the project's clocks and one flush for all of them;
 * docs/DECISIONS.md, "One project's ingest batches … commit together"). Each
 * batch is applied as if alone, in a savepoint of its own when it has
 * company, so a batch that fails fails alone; a transaction that fails as a
 * whole is tried again batch by batch.
 *
 * `ownerHoldMs`: how long a run's owner keeps it on the strength of its rows
 * alone (the plane's takeover delay): each accepted row of the owner extends
 * its hold to at least this long from now. `keyId`: the API key the batch came
 * with, kept on the writer's record (the inspector names a writer by its key).
 */
export function ingestBatch(
  db: PlaneDb,
  projectId: string,
  writerId: string,
  backlog: Backlog | undefined,
  rows: unknown[],
  ownerHoldMs = 60_000,
  keyId: string | null = null,
): Promise<IngestOutcome> {
  return registered(db).group.submit(projectId, { writerId, backlog, rows, ownerHoldMs, keyId });
}

/** This database handle's ingest counts so far, and how many of a project's batches wait for a transaction now. */
export function ingestStats(db: PlaneDb): IngestCounts & { waiting(projectId: string): number } {
  const r = registered(db);
  return { ...r.counts, waiting: (p) => r.group.waiting(p) };
}

/**
 * A project's ingest transactions under way at once in one process: the
 * batches arriving meanwhile wait and go together in the next to start. More
 * than one, so one transaction's statements run while another waits for its
 * commit (measured: bench/PROFILES.md, "one project's batches together").
 */
export const INGEST_IN_FLIGHT = 4;

/** A group's size at most: batches, and their rows (a batch larger than that commits alone). */
const GROUP_BATCHES = 64;
const GROUP_ROWS = 2 * LIMITS.batchRows;

/** An answer now, or one to come (a batch sent on its own way). */
type Answer = Settled<IngestOutcome> | Promise<Settled<IngestOutcome>>;

/**
 * Commit a group in one transaction, and should that transaction fail as a whole (a deadlock with another process,
 * a lost connection), each of its batches in a transaction of its own, one after another, each answered as it ends.
 */
async function commitOrApart(db: PlaneDb, r: Registered, projectId: string, batches: Batch[]): Promise<Answer[]> {
  try {
    return await commitInOneTransaction(db, r, projectId, batches);
  } catch (error) {
    if (batches.length === 1) return [{ ok: false, error }];
    r.counts.apart += batches.length;
    let previous: Promise<unknown> = Promise.resolve();
    return batches.map((b) => {
      const next = previous.then(() => alone(db, r, projectId, b));
      previous = next;
      return next;
    });
  }
}

/** One batch in a transaction of its own: its answer, never a rejection. */
function alone(db: PlaneDb, r: Registered, projectId: string, b: Batch): Promise<Settled<IngestOutcome>> {
  return commitInOneTransaction(db, r, projectId, [b]).then(
    ([one]) => one,
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/**
 * A batch of runs whose owner records another transaction holds: it waits for them outside any transaction of the
 * project (a transaction that only locks them and lets go, so no clock is held meanwhile), then commits alone, going
 * through the same check again. The batches waiting for one run wait one after another, so a run held long ties up
 * one connection, whatever its writer resends meanwhile.
 */
function afterHeld(
  db: PlaneDb,
  r: Registered,
  projectId: string,
  b: Batch,
  held: string[],
): Promise<Settled<IngestOutcome>> {
  const key = `${projectId}\u0000${held[0]}`;
  const next = (r.held.get(key) ?? Promise.resolve()).then(async (): Promise<Settled<IngestOutcome>> => {
    try {
      await db.transaction((tx) => lockOwners(tx, projectId, held));
    } catch (error) {
      return { ok: false, error };
    }
    return alone(db, r, projectId, b);
  });
  r.held.set(key, next);
  void next.then(() => {
    if (r.held.get(key) === next) r.held.delete(key);
  });
  return next;
}

/** The runs a batch's rows are of, a refused row's too when it names one (its hole is recorded under it). */
function runsOf(items: Item[]): string[] {
  return items.flatMap((i) => {
    const id = i.result ? holeOf(i)?.executionId : i.executionId;
    return id ? [id] : [];
  });
}

async function commitInOneTransaction(
  db: PlaneDb,
  r: Registered,
  projectId: string,
  batches: Batch[],
): Promise<Answer[]> {
  const { counts } = r;
  // parsed afresh for each attempt; applied in writer order, so every group locks the writers' records in one order
  const entries = batches.map((b, i) => {
    const items = prepare(b.rows);
    return { b, i, items, runs: runsOf(items) };
  });
  entries.sort((x, y) => codePointOrder(x.b.writerId, y.b.writerId) || x.i - y.i);
  const failed = new Map<number, unknown>();
  /** Batches of runs whose owner records another transaction holds → those runs: sent on their own way (`afterHeld`). */
  const aside = new Map<number, string[]>();
  let state: GroupState = {
    touched: new Set(),
    added: new Map(),
    deleted: new Map(),
    last: { opened: new Set(), conflicts: [] },
    quarantined: [],
    // placeholder ids for the quarantine records, stamped before commit (clocks.ts placeholderFrom)
    placeholder: placeholderFrom(),
  };
  await db.transaction(async (tx) => {
    // the feed's order is its commit order: taken before any other lock of this transaction (see decisions.ts)
    if (entries.some(({ items }) => items.some((i) => !i.result && i.event?.kind === 'decision_recorded')))
      await lockDecisionFeed(tx, projectId);
    // then every batch's runs' owners, in one statement: a claim, takeover or cancel of one of them waits for this
    // transaction, or it for them. A transaction waits for none: the batches of runs another transaction holds are
    // sent on their own way (afterHeld), so one held run does not hold up its project's other batches
    const held = await lockFreeOwners(
      tx,
      projectId,
      entries.flatMap(({ runs }) => runs),
    );
    for (const { i, runs } of entries) {
      const mine = [...new Set(runs.filter((id) => held.has(id)))].sort();
      if (mine.length) aside.set(i, mine);
    }
    const applied = entries.filter(({ i }) => !aside.has(i));
    if (applied.length === 1) await applyBatch(tx, projectId, applied[0].b, applied[0].items, state);
    else {
      for (const { b, i, items } of applied) {
        const own = forked(state);
        try {
          await tx.transaction((sp) => applyBatch(sp, projectId, b, items, own));
          state = own;
        } catch (error) {
          failed.set(i, error);
        }
      }
    }
    await finishGroup(tx, projectId, state);
  });
  const committed = batches.length - failed.size - aside.size;
  if (committed) {
    counts.transactions++;
    counts.batches += committed;
    counts.largest = Math.max(counts.largest, committed);
  }
  if (state.touched.size || state.deleted.size) announceChanges(db, projectId);
  const answers = new Map<number, Settled<IngestOutcome>>();
  for (const { i, items } of entries) {
    if (aside.has(i)) continue;
    answers.set(i, failed.has(i) ? { ok: false, error: failed.get(i) } : { ok: true, value: outcomeOf(items) });
  }
  if ([...answers.values()].some((a) => a.ok && a.value.decisions.stored)) announceDecisions(db, projectId);
  return batches.map((b, i) => answers.get(i) ?? afterHeld(db, r, projectId, b, aside.get(i)!));
}

function outcomeOf(items: Item[]): IngestOutcome {
  const results = items.map((i) => i.result ?? { id: i.id, status: 'accepted' as const });
  const stored = items.filter((i) => i.decision?.stored && !i.result).length;
  const dropped = items.flatMap((i) =>
    i.decision && !i.decision.stored && i.event?.kind === 'decision_recorded'
      ? [{ decision: i.event.row, first: i.decision.first }]
      : [],
  );
  return {
    decisions: { stored, dropped },
    results,
    accepted: results.filter((r) => r.status === 'accepted').length,
    duplicate: results.filter((r) => r.status === 'duplicate').length,
    rejected: results.filter((r) => r.status === 'rejected').length,
  };
}

/** Apply one writer's batch inside the group's transaction (its owners already locked), recording what it changed in `state`. */
async function applyBatch(tx: Tx, projectId: string, b: Batch, items: Item[], state: GroupState): Promise<void> {
  const { writerId, backlog } = b;
  const { touched, added, deleted, last } = state;
  await refuseTakenOver(tx, projectId, writerId, items);
  await refuseOffBranch(tx, projectId, writerId, items);
  await markCancelled(tx, projectId, items);
  // A batch is applied in its order: a deletion applies after every earlier row of the batch and
  // before every later one (a run deleted and started again under the same id is the new run).
  // Between deletions, checkpoints go in one set-based insert (the hot path), then the other events.
  for (const segment of segmentsOf(items)) {
    await storeCheckpoints(tx, projectId, segment.rows, touched, added);
    for (const item of segment.rows) {
      if (item.result || !item.event || item.event.kind === 'checkpoint') continue;
      await storeEvent(tx, projectId, writerId, item, touched, deleted, last);
    }
    await recordHoles(tx, projectId, writerId, segment.rows, touched);
    if (segment.deletion) {
      await storeEvent(tx, projectId, writerId, segment.deletion, touched, deleted, last);
      // a deletion it applied (the handler drops the run from `touched`) took the rows counted so far: a run
      // started again under the id counts from the rows after it
      const id = segment.deletion.executionId!;
      if (!touched.has(id)) added.delete(id);
    }
  }
  await recordContacts(tx, projectId, writerId, items);
  await followAccepted(tx, projectId, writerId, items, b.ownerHoldMs);
  const refused = items.filter((i) => i.result?.status === 'rejected');
  // rows refused for the first time: a batch re-sent after its answer was lost refuses them again, but they were counted then
  let quarantined: number[] = [];
  if (refused.length) {
    const from = state.placeholder;
    state.placeholder += refused.length;
    const recorded = await tx
      .insert(quarantine)
      .values(
        refused.map((i, n) => {
          const r = i.result as Extract<RowResult, { status: 'rejected' }>;
          // a limit in bytes, as its name says: 16 KiB of CJK text is 5,461 characters, not 16,384
          const text = i.text.replace(/\u0000/g, '\uFFFD');
          const payload =
            text.length * 3 <= LIMITS.quarantinePayloadBytes
              ? text
              : startWithin(text, LIMITS.quarantinePayloadBytes, utf8Bytes);
          return {
            // stampQuarantine replaces it with the record's id
            id: -(from + n),
            projectId,
            writerId,
            rowId: i.id,
            kind:
              typeof (i.raw as { kind?: unknown })?.kind === 'string'
                ? clean((i.raw as { kind: string }).kind, 64)
                : null,
            executionId: i.executionId ?? executionGuess(i.raw),
            code: r.code,
            reason: r.reason,
            payload,
            truncated: payload.length < text.length,
            // the same text refused for the same reason again (a batch re-sent after its answer was lost) is one record
            payloadHash: createHash('sha256').update(`${r.code}\n${i.text}`).digest('hex'),
          };
        }),
      )
      .onConflictDoNothing()
      .returning({ id: quarantine.id });
    quarantined = recorded.map((r) => r.id);
    state.quarantined.push(...quarantined);
  }
  const newlyRefused = quarantined.length;
  // rows stored by this batch: a redelivered row (duplicate) was counted when it was first stored
  const acked = items.filter((i) => i.result === undefined || i.result.status === 'accepted').length;
  await tx
    .insert(writers)
    .values({
      projectId,
      writerId,
      rowsAcked: acked,
      rowsRejected: newlyRefused,
      backlogRows: backlog?.rows ?? null,
      backlogBytes: backlog?.bytes ?? null,
      oldestPendingAt: backlog?.rows ? backlog.oldestPendingAt : null,
      keyId: b.keyId,
    })
    .onConflictDoUpdate({
      target: [writers.projectId, writers.writerId],
      set: {
        lastSeen: sql`now()`,
        ...(b.keyId ? { keyId: b.keyId } : {}),
        rowsAcked: sql`${writers.rowsAcked} + ${acked}`,
        rowsRejected: sql`${writers.rowsRejected} + ${newlyRefused}`,
        ...(backlog
          ? {
              backlogRows: backlog.rows,
              backlogBytes: backlog.bytes,
              oldestPendingAt: backlog.rows ? backlog.oldestPendingAt : null,
            }
          : {}),
      },
    });
}

/**
 * The transaction's last steps, once for all its batches, each from its clock whose row lock is held to commit
 * (clocks.ts), in the clocks' order: the change feed's stamps, then the keys the quarantine, the approvals inbox and
 * the claim conflicts list by, so each listing's keys commit in the order they are drawn.
 */
async function finishGroup(tx: Tx, projectId: string, s: GroupState): Promise<void> {
  // in id order: two transactions lock the summaries of the runs they share in one order
  await refreshExecutions(tx, projectId, [...s.touched].sort(), { added: s.added, deleted: s.deleted });
  await stampQuarantine(tx, projectId, s.quarantined);
  await stampOpenedPauses(tx, projectId, s.last.opened);
  await recordClaimConflicts(tx, projectId, s.last.conflicts);
}

/**
 * Give this transaction's new quarantine records their ids (GET /v1/quarantine
 * pages by id), in the batches' order, from the project's `quarantine` clock
 * (clocks.ts): a reader that has paged past id n never later finds a record
 * committed behind it. The inserts wrote placeholders (negative, falling in
 * the batches' order, `placeholders` here; one run of them per transaction,
 * `GroupState.placeholder`): two transactions commit in any order. Call it
 * among the last steps (clocks.ts says the order): it updates only rows the
 * transaction inserted. Placeholders start at a random place, so two
 * transactions at once do not insert the same one (were they to, the second
 * would wait for the first's commit, whose stamp leaves it free).
 */
async function stampQuarantine(tx: Tx, projectId: string, placeholders: number[]): Promise<void> {
  if (!placeholders.length) return;
  // the largest placeholder first: the first batch's first record gets the smallest id
  const ordered = placeholders.toSorted((a, b) => b - a);
  await stampKeys(tx, projectId, 'quarantine', { table: 'quarantine', column: 'id', by: 'id' }, ordered);
}

/**
 * A writer whose run another writer took over at the plane (`run_takeovers`,
 * this writer the loser) has its later rows of that run refused: checkpoints
 * after the takeover's seq and pause events, but those the plane already
 * stores (a batch sent again), which are answered by their id. Idempotency
 * entries still land (an effect that ran is worth knowing about).
 */
async function refuseTakenOver(tx: Tx, projectId: string, writerId: string, items: Item[]): Promise<void> {
  const ids = [...new Set(items.filter((i) => !i.result && i.executionId).map((i) => i.executionId!))];
  if (!ids.length) return;
  const lost = await tx
    .select({
      executionId: runTakeovers.executionId,
      fromSeq: runTakeovers.fromSeq,
      winner: runTakeovers.winnerWriterId,
      at: runTakeovers.at,
    })
    .from(runTakeovers)
    .where(
      and(
        eq(runTakeovers.projectId, projectId),
        eq(runTakeovers.loserWriterId, writerId),
        inArray(runTakeovers.executionId, ids),
      ),
    )
    .orderBy(runTakeovers.fromSeq);
  if (!lost.length) return;
  // a row or pause event the plane already stores (a batch sent again after its answer was lost) is answered by its
  // id, as ever: duplicate, or conflict for another payload
  const ofKind = (pause: boolean) =>
    items
      .filter(
        (i) => !i.result && i.event && (pause ? i.event.kind.startsWith('interrupt_') : i.event.kind === 'checkpoint'),
      )
      .map((i) => i.event!.id);
  // each looked up where its kind is stored: an id stored as the other kind is not this row
  const storedIn = async (table: typeof checkpoints | typeof events, ids: string[]) =>
    new Set(
      ids.length
        ? (
            await tx
              .select({ id: table.id })
              .from(table)
              .where(and(eq(table.projectId, projectId), inArray(table.id, ids)))
          ).map((r) => r.id)
        : [],
    );
  const storedRows = await storedIn(checkpoints, ofKind(false));
  const storedPauses = await storedIn(events, ofKind(true));
  const first = new Map<string, (typeof lost)[number]>();
  for (const l of lost) if (!first.has(l.executionId)) first.set(l.executionId, l);
  for (const item of items) {
    const t = item.executionId ? first.get(item.executionId) : undefined;
    const e = item.event;
    if (!t || item.result || !e || (e.kind === 'checkpoint' ? storedRows : storedPauses).has(e.id)) continue;
    const refused = e.kind === 'checkpoint' ? e.row.seq > t.fromSeq : e.kind.startsWith('interrupt_');
    if (refused) {
      reject(
        item,
        'taken_over',
        t.winner === PLANE_WRITER
          ? `execution ${t.executionId} was cancelled at the plane after seq ${t.fromSeq} (${t.at.toISOString()}); this writer's rows after it are refused`
          : `execution ${t.executionId} was taken over by writer '${t.winner}' at seq ${t.fromSeq} (${t.at.toISOString()}): this writer lost the run (its hold expired, or its branch met the plane's); its later rows are refused until it takes the run again`,
      );
    }
  }
}

/** The plane's clock of this writer's last contact per execution it delivered an event of (see runContacts). */
async function recordContacts(tx: Tx, projectId: string, writerId: string, items: Item[]): Promise<void> {
  // the batch's writer, and a checkpoint's own writer when it names another (takeovers judge the newest row's writer)
  const pairs = new Map<string, { projectId: string; executionId: string; writerId: string }>();
  for (const i of items) {
    if (i.result?.status === 'rejected' || !i.executionId || !i.event || i.event.kind === 'execution_deleted') continue;
    for (const w of new Set([writerId, i.event.kind === 'checkpoint' ? i.event.row.writerId : writerId])) {
      pairs.set(`${i.executionId}\u0000${w}`, { projectId, executionId: i.executionId, writerId: w });
    }
  }
  if (!pairs.size) return;
  await tx
    .insert(runContacts)
    .values([...pairs.values()])
    .onConflictDoUpdate({
      target: [runContacts.projectId, runContacts.executionId, runContacts.writerId],
      set: { lastContactAt: sql`now()` },
    });
}

/**
 * Split a batch at its deletions: each segment is the rows before a deletion
 * (in order), then that deletion. A batch without deletions is one segment.
 */
function segmentsOf(items: Item[]): { rows: Item[]; deletion: Item | null }[] {
  const out: { rows: Item[]; deletion: Item | null }[] = [];
  let rows: Item[] = [];
  for (const item of items) {
    if (!item.result && item.event?.kind === 'execution_deleted') {
      out.push({ rows, deletion: item });
      rows = [];
    } else rows.push(item);
  }
  out.push({ rows, deletion: null });
  return out;
}

/** The execution and seq a refused row names, when it names both well enough to be a hole. */
function holeOf(item: Item): { executionId: string; seq: number } | null {
  const raw = item.raw as { kind?: unknown; row?: { executionId?: unknown; seq?: unknown } } | null;
  if (raw?.kind !== 'checkpoint' || typeof raw.row !== 'object' || raw.row === null) return null;
  const { executionId, seq } = raw.row;
  // the id rule of every row (shared/rows.ts): a hole is recorded, and its run's summary stamped, only under an id a row could have
  if (!ExecutionId.safeParse(executionId).success) return null;
  if (!Number.isSafeInteger(seq) || (seq as number) < 0 || (seq as number) > LIMITS.maxSeq) return null;
  return { executionId: executionId as string, seq: seq as number };
}

/**
 * A refused checkpoint (too large, invalid, or another row already at its
 * seq) leaves a hole in its execution: the rows after it are
 * deltas on a row the plane does not hold. Recorded in the same transaction
 * as the refusal (first reason at a seq wins); the execution's summary counts it.
 */
async function recordHoles(tx: Tx, projectId: string, writerId: string, items: Item[], touched: Set<string>) {
  const values = [];
  for (const item of items) {
    // `conflict`: this id is already stored (the plane's chain holds that very row), so nothing is missing
    // `taken_over`: the loser's branch after a takeover; the winner's rows fill those seqs
    if (item.result?.status !== 'rejected' || item.result.code === 'conflict' || item.result.code === 'taken_over')
      continue;
    const at = holeOf(item);
    if (!at) continue;
    // the refused row's own writer when it names one (the machine whose branch it is), else the batch's
    const rowWriter =
      item.event && 'row' in item.event && 'writerId' in item.event.row ? item.event.row.writerId : null;
    values.push({
      projectId,
      ...at,
      code: item.result.code,
      reason: item.result.reason,
      writerId: rowWriter ?? writerId,
      rowId: item.id,
    });
    touched.add(at.executionId);
  }
  for (let i = 0; i < values.length; i += 500)
    await tx
      .insert(holes)
      .values(values.slice(i, i + 500))
      .onConflictDoNothing();
}

function executionGuess(raw: unknown): string | null {
  const r = raw as { executionId?: unknown; row?: { executionId?: unknown } } | null;
  const v = r?.row?.executionId ?? r?.executionId;
  return typeof v === 'string' ? clean(v, LIMITS.executionIdLength) : null;
}

async function storeCheckpoints(
  tx: Tx,
  projectId: string,
  items: Item[],
  touched: Set<string>,
  added: Map<string, number>,
) {
  const todo = items.filter((i) => !i.result && i.event?.kind === 'checkpoint');
  if (!todo.length) return;
  const inserted = new Set<string>();
  // the hot path: one jsonb parameter expanded by jsonb_to_recordset, not one bind per value
  for (let i = 0; i < todo.length; i += 500) {
    const chunk = todo.slice(i, i + 500).map((it) => {
      const row = (it.event as { row: Checkpoint }).row;
      return {
        id: row.id,
        execution_id: row.executionId,
        seq: row.seq,
        node_id: row.nodeId,
        step: row.step,
        status: row.status,
        agent_path: row.agentPath,
        writer_id: row.writerId,
        created_at: row.createdAt,
        row,
        hash: it.hash!,
      };
    });
    const got = await tx.execute(sql`
      INSERT INTO checkpoints (project_id, id, execution_id, seq, node_id, step, status, agent_path, writer_id, created_at, row, hash)
      SELECT ${projectId}, r.id, r.execution_id, r.seq, r.node_id, r.step, r.status, r.agent_path, r.writer_id, r.created_at, r.row, r.hash
      FROM jsonb_to_recordset(${JSON.stringify(chunk)}::jsonb) AS r(
        id text, execution_id text, seq int, node_id text, step text, status text, agent_path text,
        writer_id text, created_at text, row jsonb, hash text)
      ON CONFLICT DO NOTHING
      RETURNING id`);
    for (const g of rowsOf<{ id: string }>(got)) inserted.add(g.id);
  }
  const missed = todo.filter((it) => !inserted.has(it.event!.id));
  const existing = new Map<string, string>();
  for (let i = 0; i < missed.length; i += 500) {
    const ids = missed.slice(i, i + 500).map((m) => m.event!.id);
    const rows = await tx
      .select({ id: checkpoints.id, hash: checkpoints.hash })
      .from(checkpoints)
      .where(and(eq(checkpoints.projectId, projectId), inArray(checkpoints.id, ids)));
    for (const r of rows) existing.set(r.id, r.hash);
  }
  for (const it of todo) {
    const id = it.event!.id;
    if (inserted.has(id)) {
      touched.add(it.executionId!);
      added.set(it.executionId!, (added.get(it.executionId!) ?? 0) + 1);
      continue;
    }
    const h = existing.get(id);
    if (h === it.hash) it.result = { id, status: 'duplicate' };
    else if (h !== undefined) reject(it, 'conflict', `checkpoint ${id} already stored with a different payload`);
    else {
      const row = (it.event as { row: Checkpoint }).row;
      reject(it, 'seq_conflict', `execution ${row.executionId} already has a different row at seq ${row.seq}`);
    }
  }
}
