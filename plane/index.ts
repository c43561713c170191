export { createPlaneApp, type PlaneAppOptions } from './app.js';
export { startPlane, bootstrap, type RunningPlane } from './server.js';
export { loadConfig, type PlaneConfig } from './config.js';
export { openPlaneDatabase, type PlaneDatabase, type OpenOptions } from './db/open.js';
export { createKey, listKeys, revokeKey, authenticate, SCOPES, type Scope, type Principal } from './auth.js';
export { ingestBatch } from './ingest.js';
