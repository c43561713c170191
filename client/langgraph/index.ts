/**
 * `waymark/langgraph`: a LangGraph checkpoint saver over any waymark store, and a thread's restore from the plane.
 *
 * @module waymark/langgraph
 */
export { WaymarkSaver, type ExclusiveOptions, type WaymarkSaverOptions } from './saver.js';
export { restoreThread, threadExecutionsOnPlane, type ThreadRestoreResult } from './restore.js';
export { executionIdOf, rowIdOf } from './mapping.js';
