/**
 * The Postgres store's entry (`waymark/postgres`).
 *
 * The adapter's files, paired with the SQLite store's (client/sqlite/):
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
import { requirePeers } from '../../support/peer.js';

// `postgres` is an optional peer: without it, this import says to install it (checkpointer.js imports it statically)
await requirePeers('waymark/postgres', ['postgres']);
const m = await import('./checkpointer.js');

export const PostgresCheckpointer: typeof import('./checkpointer.js').PostgresCheckpointer = m.PostgresCheckpointer;
export type PostgresCheckpointer = import('./checkpointer.js').PostgresCheckpointer;
export type { PostgresCheckpointerOptions } from './checkpointer.js';
