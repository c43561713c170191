/**
 * The SQLite store's entry (`waymark/sqlite`).
 *
 * The adapter's files, paired with the Postgres store's (client/postgres/):
 *
 *   sqlite/            postgres/          holds
 *   checkpointer.ts    checkpointer.ts    the class: open, transactions, the writes that decide
 *   reads.ts           reads.ts           rows, chains, pauses, listings, idempotency, notes
 *   outbox.ts          outbox.ts          the drain's events and the plane's answers
 *   executions.ts      executions.ts      the execution row, driver error codes
 *   leases.ts          leases.ts          take, fence, renew a lease
 *   delete.ts          delete.ts          delete, prune
 *   import.ts          import.ts          a restore's rows
 *   decisions.ts       decisions.ts       decisions and claims
 *   migrations.ts      migrations.ts      the migration runner
 *   statements.ts      tables.ts          what statements run on: the prepared statements
 *                                         and their cache / the client types, table names
 *   driver.ts          —                  better-sqlite3, loaded with require; its addon (open)
 *   —                  put-on-cursor.ts   the one-statement put
 *   —                  commit-once.ts     a write whose answer was lost: did it commit?
 */
// `better-sqlite3` is an optional peer: driver.ts loads it with `require` and, when it is missing, makes this
// import fail with MISSING_PEER naming the command that installs it
export { SqliteCheckpointer } from './checkpointer.js';
export type { SqliteCheckpointerOptions, SqliteSynchronous } from './checkpointer.js';
