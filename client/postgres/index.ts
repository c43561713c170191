export { PostgresCheckpointer, type PostgresCheckpointerOptions } from './checkpointer.js';
