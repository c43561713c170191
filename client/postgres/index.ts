import { requirePeer } from '../../support/peer.js';

// `postgres` is an optional peer: without it, this import says to install it (checkpointer.js imports it statically)
await requirePeer('postgres', 'waymark/postgres', '3.4.9');
const m = await import('./checkpointer.js');

export const PostgresCheckpointer: typeof import('./checkpointer.js').PostgresCheckpointer = m.PostgresCheckpointer;
export type PostgresCheckpointer = import('./checkpointer.js').PostgresCheckpointer;
export type { PostgresCheckpointerOptions } from './checkpointer.js';
