/**
 * Rows of a page of runs by key: the checkpoints at given (execution id, seq) pairs, in one read whatever the count
 * of pairs. Project-scoped; nothing here writes.
 */
import { sql } from 'drizzle-orm';
import type { Checkpoint } from '../../shared/rows.js';
import { type PlaneDb, rowsOf } from '../db/open.js';

/** A row's key within the project: its run and its seq. */
export interface RowKey {
  executionId: string;
  seq: number;
}

/** A row found at one of the keys asked for: `row` (the wire row) only when asked for. */
export interface KeyedRow {
  executionId: string;
  seq: number;
  /** the row's createdAt, by its writer's clock */
  createdAt: string;
  row?: Checkpoint;
}

/**
 * The project's rows at `keys`, each once, in no order; a key with no row is left out. The keys go as one JSON
 * parameter read as a set, and each is looked up on its own in the `checkpoints_execution_seq` index (a LATERAL
 * subquery): the read costs one index probe a key, whatever the project's count of rows or a run's length, and its
 * text and plan are the same for any count of keys. A condition with one OR arm a key instead is planned arm by arm
 * (its planning time grows faster than its keys) and may be answered by filtering every row of the project. The
 * project is a constant of the statement, so it is routed to the project's shard alone (schema.ts).
 */
export async function rowsAt(
  db: PlaneDb,
  projectId: string,
  keys: readonly RowKey[],
  o: { row: boolean },
): Promise<KeyedRow[]> {
  const distinct = new Map(keys.map((k) => [`${k.seq}:${k.executionId}`, k]));
  if (!distinct.size) return [];
  const set = JSON.stringify([...distinct.values()].map((k) => ({ execution_id: k.executionId, seq: k.seq })));
  const row = (t: 'c' | 'x') => (o.row ? sql.raw(`, ${t}.row`) : sql``);
  // LIMIT 1 (a key names one row) keeps the lookup a subquery of its own: without it Postgres may pull it up into
  // a join and answer that by scanning all of the project's rows
  const rows = rowsOf<{ executionId: string; seq: number; createdAt: string; row?: Checkpoint }>(
    await db.execute(sql`
      SELECT c.execution_id AS "executionId", c.seq, c.created_at AS "createdAt"${row('c')}
      FROM jsonb_to_recordset(${set}::jsonb) AS k(execution_id text, seq int)
      CROSS JOIN LATERAL (
        SELECT x.execution_id, x.seq, x.created_at${row('x')} FROM checkpoints x
        WHERE x.project_id = ${projectId} AND x.execution_id = k.execution_id AND x.seq = k.seq
        LIMIT 1
      ) c`),
  );
  return rows.map((r) => ({
    executionId: r.executionId,
    seq: Number(r.seq),
    createdAt: r.createdAt,
    ...(o.row ? { row: r.row } : {}),
  }));
}
