import { requirePeer } from '../../support/peer.js';

// `better-sqlite3` is an optional peer: without it, this import says to install it (checkpointer.js imports it statically)
await requirePeer('better-sqlite3', 'waymark/sqlite', '12.11.1');
const m = await import('./checkpointer.js');

export const SqliteCheckpointer: typeof import('./checkpointer.js').SqliteCheckpointer = m.SqliteCheckpointer;
export type SqliteCheckpointer = import('./checkpointer.js').SqliteCheckpointer;
export type { SqliteCheckpointerOptions, SqliteSynchronous } from './checkpointer.js';
