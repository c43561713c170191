/**
 * `waymark/plane`: the plane's public API.
 *
 * A facade on purpose: its types are written out here or come from types.ts
 * (drizzle-free, shared with the plane's modules), never from a module that
 * names drizzle, so a consumer type-checking with `skipLibCheck: false` never
 * loads drizzle-orm's declarations (which do not check without mysql2, gel, …
 * installed): the database handle is opaque outside the plane. The
 * implementations are the plane's own modules, cast to these types.
 */
import type { Logger } from 'pino';
import type { Backlog, RowResult } from '../shared/protocol.js';
import type { WaymarkError } from '../shared/errors.js';
import * as app from './app.js';
import * as auth from './auth.js';
import * as open from './db/open.js';
import * as ingest from './ingest.js';
import * as server from './server.js';
import type { PlaneConfig } from './config.js';
import type { OpenOptions, PlaneAppOptionsOf, PlaneDatabaseOf, RunningPlaneOf } from './types.js';

export { loadConfig, type PlaneConfig } from './config.js';
export { lockDataDir, lockHolder, DataDirLocked, type LockInfo, type DataDirLock } from './db/lock.js';

declare const planeDb: unique symbol;
/** A plane database handle (opaque: pass it to the functions of this module). */
export interface PlaneDb {
  readonly [planeDb]: true;
}

export type PlaneDatabase = PlaneDatabaseOf<PlaneDb>;
export type { OpenOptions };

export const SCOPES: readonly ['ingest', 'read', 'approve', 'cancel', 'admin', 'operator'] = auth.SCOPES;
export type Scope = (typeof SCOPES)[number];
export interface Principal {
  projectId: string;
  keyId: string;
  scopes: Scope[];
}

export type RunningPlane = RunningPlaneOf<PlaneDb>;
export type PlaneAppOptions = PlaneAppOptionsOf<PlaneDb>;

export interface IngestOutcome {
  results: RowResult[];
  accepted: number;
  duplicate: number;
  rejected: number;
}

/** The plane's HTTP app: serve `app.fetch` with any fetch-style server. */
export const createPlaneApp: (o: PlaneAppOptions) => {
  app: { fetch(request: Request): Response | Promise<Response> };
} = app.createPlaneApp as never;
export const startPlane: (
  config: Readonly<PlaneConfig>,
  options?: { logger?: Logger; database?: PlaneDatabase; faults?: PlaneAppOptions['faults'] },
) => Promise<RunningPlane> = server.startPlane as never;
export const bootstrap: (database: PlaneDatabase, dir: string) => Promise<{ key: string; file: string | null } | null> =
  server.bootstrap as never;
export const adminKeyPath: (dataDir: string) => string = server.adminKeyPath;
export const openPlaneDatabase: (o: OpenOptions) => Promise<PlaneDatabase> = open.openPlaneDatabase as never;
export const createKey: (
  db: PlaneDb,
  o: { project: string; name?: string; scopes: Scope[]; createProject?: boolean; visibleTo?: string },
) => Promise<{ key: string; id: string; projectId: string; scopes: Scope[] }> = auth.createKey as never;
export const createProject: (db: PlaneDb, name: string) => Promise<{ id: string; name: string }> =
  auth.createProject as never;
export const listProjects: (db: PlaneDb, only?: string) => Promise<{ id: string; name: string; createdAt: Date }[]> =
  auth.listProjects as never;
export const listKeys: (
  db: PlaneDb,
  projectId?: string,
) => Promise<
  { id: string; name: string; project: string; scopes: string[]; createdAt: Date; revokedAt: Date | null }[]
> = auth.listKeys as never;
export const revokeKey: (db: PlaneDb, id: string, projectId?: string) => Promise<boolean> = auth.revokeKey as never;
export const authenticate: (db: PlaneDb, key: string | undefined) => Promise<Principal | null> =
  auth.authenticate as never;
export const ingestBatch: (
  db: PlaneDb,
  projectId: string,
  writerId: string,
  backlog: Backlog | undefined,
  rows: unknown[],
) => Promise<IngestOutcome> = ingest.ingestBatch as never;
/** A key for a project that does not exist (UNKNOWN_PROJECT, listing the known ones). */
export const UnknownProject: new (name: string, known: string[]) => WaymarkError = auth.UnknownProject;
