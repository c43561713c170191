/**
 * The SQLite store's statements and their one cache. Each file beside this
 * one names the fixed statements it runs (`readStatements` in reads.ts,
 * `outboxStatements` in outbox.ts, …); `prepareStatements` prepares them all
 * once at open (after the migrations made the tables), and the functions of
 * those files find them by name on the result. A statement whose text
 * depends on a call's options (a listing's filters and limit, a decision
 * query) is prepared the first time that text is needed (`variant`) and kept
 * for the connection.
 *
 * Here too: the store's meta statements and the pause and idempotency writes
 * the class runs itself (the Postgres store writes those inline).
 */
import type Database from 'better-sqlite3';
import { deleteStatements } from './delete.js';
import { executionStatements } from './executions.js';
import { leaseStatements } from './leases.js';
import { outboxStatements } from './outbox.js';
import { readStatements } from './reads.js';

/** A prepared statement, under a name this module's declarations can write out. */
export interface SqliteStatement extends Database.Statement {}

/** Prepares one fixed statement (what each file's statement list is given). */
export type Prepare = (sql: string) => SqliteStatement;

/** Every fixed statement of the store, by name, and `variant` for the rest. */
export type Statements = ReturnType<typeof prepareStatements>;

/** Prepare every fixed statement on `db`. */
export function prepareStatements(db: Database.Database) {
  // typed by a name of this module, so the declaration of this function's result can be written out
  const prepare: Prepare = (sql) => db.prepare(sql);
  const variants = new Map<string, SqliteStatement>();
  return {
    getMeta: prepare(`SELECT value FROM waymark_meta WHERE key = ?`),
    insertMeta: prepare(`INSERT INTO waymark_meta (key, value) VALUES (?, ?)`),
    setMeta: prepare(
      `INSERT INTO waymark_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    ),
    insertPending: prepare(
      `INSERT INTO pending_interrupts (execution_id, checkpoint_id, node_id, reason, context, agent_path, created_at)
       VALUES (@execution_id, @checkpoint_id, @node_id, @reason, @context, @agent_path, @created_at)`,
    ),
    claimPending: prepare(`DELETE FROM pending_interrupts WHERE execution_id = ? AND checkpoint_id = ? RETURNING *`),
    insertIdem: prepare(
      `INSERT INTO idempotency (execution_id, key, result, created_at) VALUES (@execution_id, @key, @result, @created_at)
       ON CONFLICT (execution_id, key) DO NOTHING`,
    ),
    ...executionStatements(prepare),
    ...readStatements(prepare),
    ...outboxStatements(prepare),
    ...leaseStatements(prepare),
    ...deleteStatements(prepare),
    /** The statement for a text built from a call's options (a handful of variants each), prepared once. */
    variant(sql: string): SqliteStatement {
      let st = variants.get(sql);
      if (!st) {
        st = db.prepare(sql);
        variants.set(sql, st);
      }
      return st;
    },
  };
}
