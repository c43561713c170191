export type * from './checkpointer.js';
export * from './errors.js';
export { killAt, noFaults, type FaultHook } from './faults.js';
export { ErrorCode, WaymarkError, hasCode } from '../shared/errors.js';
export { uuidv7 } from '../shared/ids.js';
export type { Json } from '../shared/json.js';
export type { State } from '../shared/codec.js';
export type { Checkpoint, PendingInterrupt, IdempotencyEntry, OutboxEvent } from '../shared/rows.js';
