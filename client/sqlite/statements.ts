/**
 * The SQLite store's statements and their one cache. Each file beside this
 * one names the fixed statements it runs, as SQL texts by name
 * (`readStatements` in reads.ts, `outboxStatements` in outbox.ts, …);
 * `prepareStatements` gathers them at open, and the functions of those files
 * find them by name on the result. Each is prepared the first time it is
 * used, then kept for the connection: an open prepares only what it reads, a
 * resume the dozen statements it runs (of some fifty), a drain or a listing
 * its own. A statement whose text depends on a call's options (a listing's filters and
 * limit, a decision query) is prepared the first time that text is needed
 * (`variant`) and kept for the connection.
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

/** Fixed statements by name, as SQL texts (what each file's statement list is). */
export type StatementTexts = Readonly<Record<string, string>>;

/** Statements by the names of `T`, each prepared at its first use. */
export type Prepared<T extends StatementTexts> = { readonly [K in keyof T]: SqliteStatement };

/** The store's own fixed statements: meta, pauses, idempotency. */
const storeStatements = {
  getMeta: `SELECT value FROM waymark_meta WHERE key = ?`,
  insertMeta: `INSERT INTO waymark_meta (key, value) VALUES (?, ?)`,
  setMeta: `INSERT INTO waymark_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
  insertPending: `INSERT INTO pending_interrupts (execution_id, checkpoint_id, node_id, reason, context, agent_path, created_at)
       VALUES (@execution_id, @checkpoint_id, @node_id, @reason, @context, @agent_path, @created_at)`,
  claimPending: `DELETE FROM pending_interrupts WHERE execution_id = ? AND checkpoint_id = ? RETURNING *`,
  insertIdem: `INSERT INTO idempotency (execution_id, key, result, created_at) VALUES (@execution_id, @key, @result, @created_at)
       ON CONFLICT (execution_id, key) DO NOTHING`,
} as const;

/** Every fixed statement of the store, by name, and `variant` for the rest. */
export type Statements = ReturnType<typeof prepareStatements>;

/**
 * `texts` as statements on `db`: each a getter that prepares its text on the
 * first read and then stays that statement (a plain property from then on).
 */
function lazily<T extends StatementTexts>(db: Database.Database, texts: T): Prepared<T> {
  const out = {} as Record<string, SqliteStatement>;
  for (const [name, sql] of Object.entries(texts)) {
    Object.defineProperty(out, name, {
      configurable: true,
      enumerable: true,
      get() {
        const st = db.prepare(sql);
        Object.defineProperty(out, name, { value: st, enumerable: true });
        return st;
      },
    });
  }
  return out as Prepared<T>;
}

/** The fixed statements on `db`, none prepared yet (each is at its first use). */
export function prepareStatements(db: Database.Database) {
  const variants = new Map<string, SqliteStatement>();
  // the getters are defined on the result itself: a spread or Object.assign would read (prepare) them all
  const fixed = lazily(db, {
    ...storeStatements,
    ...executionStatements,
    ...readStatements,
    ...outboxStatements,
    ...leaseStatements,
    ...deleteStatements,
  });
  return Object.defineProperty(fixed, 'variant', {
    /** The statement for a text built from a call's options (a handful of variants each), prepared once. */
    value(sql: string): SqliteStatement {
      let st = variants.get(sql);
      if (!st) {
        st = db.prepare(sql);
        variants.set(sql, st);
      }
      return st;
    },
  }) as typeof fixed & { variant(sql: string): SqliteStatement };
}
