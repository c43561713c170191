/**
 * `waymark/testing`: helpers for tests of code built on waymark, kept out of
 * the root entry. Fault hooks for crash tests (`killAt`).
 */
export { faultPoint, killAt } from './faults.js';
