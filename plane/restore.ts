/**
 * The restore bundle, page by page: everything a machine needs to resume a
 * run the plane holds (its rows up to a snapshot's seq, the open pause and its
 * decision, the idempotency entries), bounded by rows and bytes a page like
 * every row listing (reads/rows.ts rowPage). Project-scoped; nothing here writes.
 */
import { and, asc, desc, eq, gt, inArray, lte, notLike, sql } from 'drizzle-orm';
import { LIMITS } from '../shared/limits.js';
import type { Checkpoint, IdempotencyEntry } from '../shared/rows.js';
import { likeStart } from './db/like.js';
import type { PlaneDb } from './db/open.js';
import { checkpoints, idempotency } from './db/schema.js';
import { CursorError, decodeCursor, encodeCursor, isSeqCursor } from './reads/cursor.js';
import { openPause, pauseDecision } from './reads/pauses.js';
import { fitting, PAGE_BYTES, rowPage } from './reads/rows.js';

/**
 * One page of an execution's idempotency entries with key after `after` (null:
 * from the first), in key order, at most `limit` entries and `budget` bytes of
 * them (the first fits anyway when `oneAnyway`); keys starting with `hide` are
 * left out. One read: each entry's size, and the entry itself only while the
 * sizes so far fit in `budget` (`fitting` then says which are taken).
 */
async function idempotencyPage(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  after: string | null,
  limit: number,
  budget: number,
  oneAnyway: boolean,
  hide?: string,
) {
  const i = idempotency;
  const bytes = sql<number>`octet_length(${i.row}::text)`;
  const sized = db
    .select({
      key: i.key,
      row: i.row,
      bytes: bytes.as('bytes'),
      upTo: sql<number>`sum(${bytes}) OVER (ORDER BY ${i.key})`.as('up_to'),
      n: sql<number>`row_number() OVER (ORDER BY ${i.key})`.as('n'),
    })
    .from(i)
    .where(
      and(
        eq(i.projectId, projectId),
        eq(i.executionId, executionId),
        after === null ? undefined : gt(i.key, after),
        hide === undefined ? undefined : notLike(i.key, likeStart(hide)),
      ),
    )
    .orderBy(asc(i.key))
    .limit(limit + 1)
    .as('sized');
  const found = await db
    .select({
      key: sized.key,
      bytes: sized.bytes,
      row: sql<IdempotencyEntry | null>`CASE WHEN ${sized.upTo} <= ${budget}${oneAnyway ? sql` OR ${sized.n} = 1` : sql``} THEN ${sized.row} END`,
    })
    .from(sized)
    .orderBy(asc(sized.key));
  const { take } = fitting(found, limit, budget, oneAnyway);
  if (take === 0) return { entries: [] as IdempotencyEntry[], last: after, more: found.length > 0 };
  const entries = found.slice(0, take).map((r) => r.row as IdempotencyEntry);
  return { entries, last: found[take - 1].key, more: found.length > take };
}

/**
 * A page of a run's idempotency entries by key, for the inspector's run page: at most `limit` and PAGE_BYTES of them;
 * keys starting with `o.hide` left out.
 */
export async function idempotencyListing(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  o: { cursor?: string; limit: number; hide?: string },
) {
  const after = decodeCursor(o.cursor, isKeyCursor) ?? null;
  // one statement: one snapshot
  const page = await idempotencyPage(db, projectId, executionId, after, o.limit, PAGE_BYTES, true, o.hide);
  return { items: page.entries, nextCursor: page.more && page.last !== null ? encodeCursor(page.last) : null };
}

/** Every idempotency entry of a run, by key: a restore's first page for a client that does not page them. */
export async function listIdempotency(
  db: PlaneDb,
  projectId: string,
  executionId: string,
): Promise<IdempotencyEntry[]> {
  const rows = await db
    .select({ row: idempotency.row })
    .from(idempotency)
    .where(and(eq(idempotency.projectId, projectId), eq(idempotency.executionId, executionId)))
    .orderBy(asc(idempotency.key));
  return rows.map((r) => r.row as IdempotencyEntry);
}

/** `[after, upTo, upToId]`: the last seq served, the snapshot's seq and its row's id; issued only while a row follows `after`, so `after < upTo`. */
const isRestoreCursor = (v: unknown): v is [number, number, string] =>
  Array.isArray(v) &&
  v.length === 3 &&
  isSeqCursor(v[0]) &&
  isSeqCursor(v[1]) &&
  v[0] < v[1] &&
  typeof v[2] === 'string' &&
  v[2].length <= 64;

/** A key the plane could hold: the entries after it follow (text, at most the key limit, no U+0000). */
const isKeyCursor = (v: unknown): v is string =>
  typeof v === 'string' && v.length <= LIMITS.idempotencyKeyLength && !v.includes('\u0000');

/** `['idempotency', upTo, upToId, key]`: every row was served; idempotency entries follow, after `key` (null: from the first). */
const isEntriesCursor = (v: unknown): v is EntriesCursor =>
  Array.isArray(v) &&
  v.length === 4 &&
  v[0] === 'idempotency' &&
  isSeqCursor(v[1]) &&
  typeof v[2] === 'string' &&
  v[2].length <= 64 &&
  (v[3] === null || isKeyCursor(v[3]));
type EntriesCursor = ['idempotency', number, string, string | null];

/**
 * Where the idempotency entries of a restore go: all on the first page (what a
 * client before 2026-12 reads, so the default), or after the rows, paged by key
 * and by bytes like them (`paged`: the client gathers them from every page).
 */
export type RestoreEntries = 'first' | 'paged';

/**
 * One page of a restore. A restore is a snapshot at a fixed `seq`: the first
 * page reads, in one repeatable-read transaction, the newest seq (`upTo`), the
 * open pause (with its decision) and the idempotency entries, and every later page carries `upTo`
 * in its cursor and never serves a row beyond it. So the pause is the pause of
 * row `upTo` (or none), whatever the source writes meanwhile; `totalRows` counts
 * rows up to `upTo`.
 *
 * With `entries: 'paged'` the idempotency entries follow the rows, in key
 * order, within the same PAGE_BYTES a page: the first page holds those that fit
 * after its rows, read in its snapshot; later pages read the rest as they are
 * then. Entries only ever arrive (one per key, never replaced), so a later page
 * brings every entry of the snapshot once, and also any recorded since with
 * a key after the cursor (an effect that ran, which a restored run must not
 * repeat); one recorded since with an earlier key waits for a catch-up restore.
 */
export async function restorePage(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  o: { cursor?: string; limit: number; entries?: RestoreEntries },
) {
  const cur = decodeCursor(
    o.cursor,
    (v): v is [number, number, string] | EntriesCursor => isRestoreCursor(v) || isEntriesCursor(v),
  );
  const entriesCur = cur && isEntriesCursor(cur) ? cur : undefined;
  const rowsCur = cur && !entriesCur ? (cur as [number, number, string]) : undefined;
  return db.transaction(
    async (tx) => {
      const mine = and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId));
      let after = -1;
      let upTo = -1;
      let upToId = '';
      if (cur) {
        [after, upTo, upToId] = rowsCur ?? [-1, entriesCur![1], entriesCur![2]];
        // rows the plane served (rows leave a run only with the whole run), the snapshot's own row by its id: a run
        // deleted and started again since, even one grown past upTo, is another copy, whose pages would not add up to it
        const seqs = rowsCur ? [after, upTo] : [upTo];
        const held = await tx
          .select({ seq: checkpoints.seq, id: checkpoints.id })
          .from(checkpoints)
          .where(and(mine, inArray(checkpoints.seq, seqs)));
        if (held.length !== seqs.length || held.find((r) => r.seq === upTo)?.id !== upToId) {
          const which = rowsCur ? `rows ${after} and ${upTo}` : `row ${upTo}`;
          throw new CursorError(
            `cursor names ${which} of a copy of execution '${executionId}' this plane no longer holds (deleted since?): restore again from the first page`,
          );
        }
      } else {
        const [m] = await tx
          .select({ seq: checkpoints.seq, id: checkpoints.id })
          .from(checkpoints)
          .where(mine)
          .orderBy(desc(checkpoints.seq))
          .limit(1);
        if (m) [upTo, upToId] = [m.seq, m.id];
      }
      const {
        rows: page,
        more,
        bytes,
      } = entriesCur
        ? { rows: [], more: false, bytes: 0 }
        : await rowPage(tx as unknown as PlaneDb, projectId, executionId, after, upTo, o.limit);
      const [n] = await tx
        .select({ n: sql<number>`count(*)::int` })
        .from(checkpoints)
        .where(and(mine, lte(checkpoints.seq, upTo)));
      const first = !cur;
      const pending = first ? await openPause(tx as unknown as PlaneDb, projectId, executionId) : null;
      let idempotencyEntries: IdempotencyEntry[] = [];
      let nextCursor: string | null = more ? encodeCursor([page[page.length - 1].seq, upTo, upToId]) : null;
      if ((o.entries === 'paged' || entriesCur) && !more) {
        // after the last row: the entries that fit in what the page has left (at least one on a page without rows)
        const e = await idempotencyPage(
          tx as unknown as PlaneDb,
          projectId,
          executionId,
          entriesCur?.[3] ?? null,
          o.limit - page.length,
          PAGE_BYTES - bytes,
          page.length === 0,
        );
        idempotencyEntries = e.entries;
        if (e.more) nextCursor = encodeCursor(['idempotency', upTo, upToId, e.last]);
      } else if (first && o.entries !== 'paged')
        idempotencyEntries = await listIdempotency(tx as unknown as PlaneDb, projectId, executionId);
      return {
        executionId,
        totalRows: n.n,
        upTo,
        rows: page.map((r) => r.row as Checkpoint),
        nextCursor,
        pending,
        /** The open pause's decision, when one was recorded: a machine that restores the run can apply it. */
        decision: pending
          ? await pauseDecision(tx as unknown as PlaneDb, projectId, executionId, pending.checkpointId)
          : null,
        idempotency: idempotencyEntries,
      };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}
