export { WaymarkSaver, type WaymarkSaverOptions } from './saver.js';
export { executionIdOf, rowIdOf } from './mapping.js';
