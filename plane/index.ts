/**
 * `waymark/plane`: the plane's public API.
 *
 * Its types are written out here, self-contained, so a consumer type-checking
 * with `skipLibCheck: false` never loads drizzle-orm's declarations (which do
 * not check without mysql2, gel, … installed): the database handle is opaque
 * outside the plane. The implementations are the plane's own modules.
 */
import type { Logger } from 'pino';
import type { Backlog, RowResult } from '../shared/protocol.js';
import { WaymarkError } from '../shared/errors.js';
import * as app from './app.js';
import * as auth from './auth.js';
import * as open from './db/open.js';
import * as ingest from './ingest.js';
import * as server from './server.js';
import type { PlaneConfig } from './config.js';
import type { DataDirLock } from './db/lock.js';

export { loadConfig, type PlaneConfig } from './config.js';
export { lockDataDir, lockHolder, DataDirLocked, type LockInfo, type DataDirLock } from './db/lock.js';

declare const planeDb: unique symbol;
/** A plane database handle (opaque: pass it to the functions of this module). */
export interface PlaneDb {
  readonly [planeDb]: true;
}

export interface PlaneDatabase {
  db: PlaneDb;
  kind: 'postgres' | 'pglite';
  /** The data dir lock (PGlite on disk); null otherwise. */
  lock: DataDirLock | null;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Postgres URL; absent: PGlite in `dataDir`. */
  databaseUrl?: string;
  /** PGlite data dir (`memory://` for in-memory). */
  dataDir?: string;
  /** A PGlite data dir dump to start from. */
  loadDataDir?: Blob | File;
  /** Postgres pool size. */
  max?: number;
  /** Who holds the data dir lock, for the message another process gets. */
  command?: string;
}

export const SCOPES: readonly ['ingest', 'read', 'admin', 'operator'] = auth.SCOPES;
export type Scope = (typeof SCOPES)[number];
export interface Principal {
  projectId: string;
  keyId: string;
  scopes: Scope[];
}

export interface RunningPlane {
  url: string;
  port: number;
  /** Where operator metrics are served (`${metricsUrl}/metrics`), or null when no metrics port is set. */
  metricsUrl: string | null;
  database: PlaneDatabase;
  /** Set on the first start of an empty database: where the admin key was written. */
  adminKeyFile: string | null;
  adminKey: string | null;
  close(): Promise<void>;
}

export interface PlaneAppOptions {
  database: PlaneDatabase;
  logger?: Logger;
  maxInflightIngest?: number;
  maxQueuedIngest?: number;
  ingestQueueWaitMs?: number;
  bodyIdleMs?: number;
  bodyTotalMs?: number;
  dev?: boolean;
  claimReleaseAfterMs?: number;
  /** Named fault points (tests): 'plane.ingest.afterCommit', 'plane.claim.afterCommit'; awaited. */
  faults?: import('../shared/faults.js').FaultHook;
}

export interface IngestOutcome {
  results: RowResult[];
  accepted: number;
  duplicate: number;
  rejected: number;
}

/** The plane's HTTP app: serve `app.fetch` with any fetch-style server. */
export const createPlaneApp: (o: PlaneAppOptions) => { app: { fetch(request: Request): Response | Promise<Response> } } = app.createPlaneApp as never;
export const startPlane: (config: Readonly<PlaneConfig>, options?: { logger?: Logger; database?: PlaneDatabase; faults?: PlaneAppOptions['faults'] }) => Promise<RunningPlane> =
  server.startPlane as never;
export const bootstrap: (database: PlaneDatabase, dir: string) => Promise<{ key: string; file: string | null } | null> = server.bootstrap as never;
export const adminKeyPath: (dataDir: string) => string = server.adminKeyPath;
export const openPlaneDatabase: (o: OpenOptions) => Promise<PlaneDatabase> = open.openPlaneDatabase as never;
export const createKey: (
  db: PlaneDb,
  o: { project: string; name?: string; scopes: Scope[]; createProject?: boolean; visibleTo?: string },
) => Promise<{ key: string; id: string; projectId: string; scopes: Scope[] }> = auth.createKey as never;
export const createProject: (db: PlaneDb, name: string) => Promise<{ id: string; name: string }> = auth.createProject as never;
export const listProjects: (db: PlaneDb, only?: string) => Promise<{ id: string; name: string; createdAt: Date }[]> = auth.listProjects as never;
export const listKeys: (db: PlaneDb, projectId?: string) => Promise<{ id: string; name: string; project: string; scopes: string[]; createdAt: Date; revokedAt: Date | null }[]> =
  auth.listKeys as never;
export const revokeKey: (db: PlaneDb, id: string, projectId?: string) => Promise<boolean> = auth.revokeKey as never;
export const authenticate: (db: PlaneDb, key: string | undefined) => Promise<Principal | null> = auth.authenticate as never;
export const ingestBatch: (db: PlaneDb, projectId: string, writerId: string, backlog: Backlog | undefined, rows: unknown[]) => Promise<IngestOutcome> = ingest.ingestBatch as never;
/** A key for a project that does not exist (UNKNOWN_PROJECT, listing the known ones). */
export const UnknownProject: new (name: string, known: string[]) => WaymarkError = auth.UnknownProject;
