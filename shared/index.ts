export * from './limits.js';
export * from './ids.js';
export * from './json.js';
export * from './errors.js';
export * from './rows.js';
export * from './codec.js';
export * from './protocol.js';
export * from './usage.js';
