/**
 * A run's rows: pages bounded by rows and bytes (the row listing, and the
 * restore bundle in restore.ts), and the decoded state at one row.
 * Project-scoped; nothing here writes.
 */
import { and, asc, desc, eq, gt, lt, lte, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { chainBase, decodeState } from '../../shared/codec.js';
import type { Json } from '../../shared/json.js';
import type { Checkpoint, Step } from '../../shared/rows.js';
import type { PlaneDb } from '../db/open.js';
import { checkpoints } from '../db/schema.js';
import { decodeCursor, encodeCursor, isSeqCursor } from './cursor.js';

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
 * A page of a run's rows for the inspector's timeline: the first `limit` rows with seq above `after`, or (no
 * `after`) the last `limit` below `before` (neither: the newest), of one step and under one agent path when
 * given; each row without its payloads (the timeline shows none: a row's state may be a whole snapshot; a run-end
 * marker keeps its output, its error). In seq
 * order, and whether more lie beyond the page in the direction read. The filters are columns of the run's seq
 * range, so the read walks the run's seq index and stops at the page's end.
 */
export async function timelineRows(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  q: { after?: number; before?: number; limit: number; step?: Step; agentPath?: string },
) {
  const ascending = q.after !== undefined;
  const c = checkpoints;
  const found = await db
    .select({
      id: c.id,
      seq: c.seq,
      nodeId: c.nodeId,
      turn: sql<number>`(${c.row}->>'turn')::int`,
      step: sql<Step>`${c.step}`,
      status: sql<Checkpoint['status']>`${c.status}`,
      agentPath: c.agentPath,
      interruptReason: sql<string | null>`${c.row}->>'interruptReason'`,
      // a run-end marker's output is its error, which the row before it is said to have ended with
      nodeOutput: sql<Json | null>`CASE WHEN ${c.step} = 'run_end' THEN ${c.row}->'nodeOutput' END`,
      createdAt: c.createdAt,
      writerId: c.writerId,
    })
    .from(c)
    .where(
      and(
        eq(c.projectId, projectId),
        eq(c.executionId, executionId),
        ascending ? gt(c.seq, q.after!) : q.before !== undefined ? lt(c.seq, q.before) : undefined,
        q.step ? eq(c.step, q.step) : undefined,
        q.agentPath !== undefined
          ? sql`(${c.agentPath} = ${q.agentPath} OR starts_with(${c.agentPath}, ${`${q.agentPath}/`}))`
          : undefined,
      ),
    )
    .orderBy(ascending ? asc(c.seq) : desc(c.seq))
    .limit(q.limit + 1);
  const page = found.slice(0, q.limit);
  return { items: ascending ? page : page.reverse(), more: found.length > q.limit };
}

/** One row of a run as it was stored (its state still encoded), or null when the run has no row `seq`. */
export async function rowAt(db: PlaneDb, projectId: string, executionId: string, seq: number) {
  const [found] = await db
    .select({ row: checkpoints.row })
    .from(checkpoints)
    .where(
      and(eq(checkpoints.projectId, projectId), eq(checkpoints.executionId, executionId), eq(checkpoints.seq, seq)),
    );
  return found ? (found.row as Checkpoint) : null;
}

/**
 * The decoded state of one row (null: the run has no row `seq`): its snapshot chain, base to row, in one read (the
 * base is the row's own, `chainBase` in SQL: its seq for a full snapshot, else its delta's `base`), through the
 * shared codec (`decodeState`: nothing is encoded after it).
 *
 * `known`: rows of the run a reader already read, by seq (a page decoding two rows of one chain, for a diff); the
 * read leaves out the seqs they span, and the rows it reads are added. Two states decoded over the same rows share
 * their values' objects.
 */
export async function stateAt(
  db: PlaneDb,
  projectId: string,
  executionId: string,
  seq: number,
  known: Map<number, Checkpoint> = new Map(),
) {
  const c = checkpoints;
  const target = alias(checkpoints, 'target');
  const base = db
    .select({
      base: sql<number>`CASE WHEN ${target.row}->'state'->>'kind' = 'full' THEN ${target.seq} ELSE (${target.row}->'state'->>'base')::int END`,
    })
    .from(target)
    .where(and(eq(target.projectId, projectId), eq(target.executionId, executionId), eq(target.seq, seq)));
  const seqs = [...known.keys()];
  const lo = Math.min(...seqs);
  const hi = Math.max(...seqs);
  // the known rows, when they are one run of seqs, are not read again
  const span = seqs.length > 0 && hi - lo + 1 === seqs.length;
  const read = await db
    .select({ row: c.row })
    .from(c)
    .where(
      and(
        eq(c.projectId, projectId),
        eq(c.executionId, executionId),
        sql`${c.seq} >= (${base})`,
        lte(c.seq, seq),
        span ? sql`NOT (${c.seq} BETWEEN ${lo} AND ${hi})` : undefined,
      ),
    )
    .orderBy(asc(c.seq));
  for (const r of read) {
    const row = r.row as Checkpoint;
    known.set(row.seq, row);
  }
  const last = known.get(seq);
  if (!last) return null;
  const from = chainBase(last);
  // a seq the plane does not hold leaves a gap, which the codec refuses as a broken chain
  const chain = [...known.values()].filter((r) => r.seq >= from && r.seq <= seq).sort((x, y) => x.seq - y.seq);
  return decodeState(chain);
}
