export { createPlaneApp, type PlaneAppOptions } from './app.js';
export { startPlane, bootstrap, adminKeyPath, type RunningPlane } from './server.js';
export { loadConfig, type PlaneConfig } from './config.js';
export { openPlaneDatabase, type PlaneDatabase, type OpenOptions } from './db/open.js';
export { createKey, createProject, listProjects, listKeys, revokeKey, authenticate, UnknownProject, SCOPES, type Scope, type Principal } from './auth.js';
export { lockDataDir, lockHolder, DataDirLocked, type LockInfo, type DataDirLock } from './db/lock.js';
export { ingestBatch } from './ingest.js';
