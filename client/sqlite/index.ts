export { SqliteCheckpointer, type SqliteCheckpointerOptions, type SqliteSynchronous } from './checkpointer.js';
