/**
 * A project's clocks: the keys its feeds and listings page by, drawn in
 * commit order. Glossary:
 * - clock: one counter of one project (`project_clocks`, one row per project
 *   and clock): `changes` (the change feed's seqs, tombstones included),
 *   `decisions` (the decision feed), `pauses` (the approvals inbox),
 *   `quarantine`, `conflicts` (claim conflicts), `requests` (run requests).
 * - draw: add n to a clock in one statement and get the n keys after its old
 *   value. The statement updates the clock's row, and the row lock it takes is
 *   held to commit: a second transaction drawing from the same clock waits for
 *   the first to commit, then draws after the first's keys. So a clock's keys
 *   commit in the order they are drawn, and a reader that has seen key n never
 *   later finds a smaller key committed behind it.
 *
 * Why a row and not a sequence or an advisory lock: the row is of the project,
 * on its shard with the rest of its rows on a distributed Postgres (Citus),
 * and the statement names the project as a constant, so it is routed there and
 * its lock holds where the keys are written; the keys are then written as
 * constants (`writeKeys`), so no statement calls `nextval` (Citus refuses a volatile function
 * in an UPDATE of a distributed table, and its sequences are per node). See
 * docs/DECISIONS.md, "The plane on Citus".
 *
 * Where the draw goes in a transaction (no two transactions wait on each other
 * for clock rows): a clock drawn for keys of rows written in the middle of a
 * transaction (`decisions`, `requests`) is taken first, before any other lock
 * (`lockClock`); the others are drawn as the transaction's last steps, after
 * every other row lock it takes, in this order: `changes`, `quarantine`,
 * `pauses`, `conflicts`. A transaction never takes both a first-taken clock
 * and another first-taken one.
 */
import { randomInt } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { rowsOf, type Tx } from './db/open.js';

export type Clock = 'changes' | 'decisions' | 'pauses' | 'quarantine' | 'conflicts' | 'requests';

/**
 * Draw `n` keys of a project's clock, under its row lock held to commit: they
 * are the returned `first` to `first + n - 1`. The clock's first draw in a
 * project starts it at 1 (migration 0016 started the clocks of every project
 * that existed then above every key issued before).
 */
export async function drawKeys(tx: Tx, projectId: string, clock: Clock, n: number): Promise<number> {
  const got = await tx.execute(sql`
    INSERT INTO project_clocks (project_id, clock, value) VALUES (${projectId}, ${clock}, ${n})
    ON CONFLICT (project_id, clock) DO UPDATE SET value = project_clocks.value + excluded.value
    RETURNING value`);
  return Number(rowsOf<{ value: string | number }>(got)[0].value) - n + 1;
}

/** Take a project's clock's row lock until the transaction ends, drawing nothing (then draw under it with `drawKeys`). */
export async function lockClock(tx: Tx, projectId: string, clock: Clock): Promise<void> {
  await drawKeys(tx, projectId, clock, 0);
}

/** A column that holds a clock's keys, and the column that names each row of the project (`by IN (…)`). */
export type KeyColumn =
  | { table: 'executions'; column: 'change_seq'; by: 'execution_id' }
  | { table: 'pending_interrupts'; column: 'opened_seq'; by: 'execution_id' }
  | { table: 'quarantine'; column: 'id'; by: 'id' };

/**
 * Write keys into rows this transaction wrote: each row of the project whose
 * `by` column is `ids[i]` gets `first + i` in its key column, in one
 * statement that names the project as a constant and the keys as constants
 * (a JSON object from id to key; no `nextval`, see above).
 */
export async function writeKeys(
  tx: Tx,
  projectId: string,
  at: KeyColumn,
  ids: readonly (string | number)[],
  first: number,
): Promise<void> {
  if (!ids.length) return;
  const keyed = JSON.stringify(Object.fromEntries(ids.map((id, i) => [String(id), first + i])));
  const list = sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );
  const [table, column, by] = [sql.identifier(at.table), sql.identifier(at.column), sql.identifier(at.by)];
  await tx.execute(sql`
    UPDATE ${table} SET ${column} = (${keyed}::jsonb ->> ${by}::text)::bigint
    WHERE project_id = ${projectId} AND ${by} IN (${list})`);
}

/** Draw keys for `ids` from a clock and write them (`writeKeys`): the first id gets the smallest key. */
export async function stampKeys(
  tx: Tx,
  projectId: string,
  clock: Clock,
  at: KeyColumn,
  ids: readonly (string | number)[],
): Promise<void> {
  if (!ids.length) return;
  await writeKeys(tx, projectId, at, ids, await drawKeys(tx, projectId, clock, ids.length));
}

/**
 * Where a transaction's placeholder keys start: a row whose key is drawn at the
 * transaction's end (a new run's change seq, a quarantine record's id) is
 * inserted with a placeholder, `-(from + i)` for its i-th row (no drawn key is
 * negative), and stamped before commit. Starting at a random place keeps two
 * transactions' placeholders apart in a unique index; if they ever met, the
 * second would wait for the first to commit its stamped keys, then go on.
 */
export const placeholderFrom = (): number => randomInt(1, 2 ** 47);
