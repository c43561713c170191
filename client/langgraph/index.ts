export { WaymarkSaver, type ExclusiveOptions, type WaymarkSaverOptions } from './saver.js';
export { restoreThread, threadExecutionsOnPlane, type ThreadRestoreResult } from './restore.js';
export { executionIdOf, rowIdOf } from './mapping.js';
