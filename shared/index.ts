/**
 * `waymark/wire`: the wire contract between a store and the plane: the rows, the outbox events, the HTTP
 * protocol's schemas (zod), the size limits and the error codes.
 *
 * @module waymark/wire
 */
export * from './limits.js';
export * from './ids.js';
export * from './json.js';
export * from './errors.js';
export * from './rows.js';
export * from './codec.js';
export * from './protocol.js';
export * from './usage.js';
export { CONTROL_CHARACTER } from './text.js';
