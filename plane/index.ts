/**
 * `waymark/plane`: the plane's public API.
 *
 * A facade on purpose: its types are written out here or come from types.ts
 * (drizzle-free, shared with the plane's modules), never from a module that
 * names drizzle, so a consumer type-checking with `skipLibCheck: false` never
 * loads drizzle-orm's declarations (which do not check without mysql2, gel, …
 * installed): the database handle is opaque outside the plane. The
 * implementations are the plane's own modules, loaded once the plane's
 * optional peers are found, cast to these types.
 *
 * @module waymark/plane
 */
import type { Logger } from 'pino';
import type { Backlog, RowResult } from '../shared/protocol.js';
import type { WaymarkError } from '../shared/errors.js';
import { PLANE_PEERS, requirePeers } from '../support/peer.js';
import type { PlaneConfig } from './config.js';
import type { CreateKeyOptions, Principal, Scope } from './scopes.js';
import type { OpenOptions, PlaneAppOptionsOf, PlaneDatabaseOf, RunningPlaneOf } from './types.js';

export { loadConfig, type PlaneConfig } from './config.js';
export { lockDataDir, lockHolder, DataDirLocked, type LockInfo, type DataDirLock } from './db/lock.js';

// the plane's packages are optional peers of waymark (a client install leaves them out): without them, this import
// says what to install (the modules below import them statically)
await requirePeers('waymark/plane', PLANE_PEERS);
const [app, auth, open, ingest, server] = await Promise.all([
  import('./app.js'),
  import('./auth.js'),
  import('./db/open.js'),
  import('./ingest.js'),
  import('./server.js'),
]);

declare const planeDb: unique symbol;
/** A plane database handle (opaque: pass it to the functions of this module). */
export interface PlaneDb {
  readonly [planeDb]: true;
}

/**
 * An open plane database: `openPlaneDatabase` opens one, `startPlane` and `createPlaneApp` serve it.
 *
 * @interface
 */
export type PlaneDatabase = PlaneDatabaseOf<PlaneDb>;
export type { OpenOptions };

export { SCOPES, type CreateKeyOptions, type Principal, type Scope } from './scopes.js';

/**
 * A plane started by `startPlane`: where it listens, its database, the admin key of a first start, and `close`.
 *
 * @interface
 */
export type RunningPlane = RunningPlaneOf<PlaneDb>;
/**
 * Options of `createPlaneApp`: the database, and the limits and timeouts of the HTTP app.
 *
 * @interface
 */
export type PlaneAppOptions = PlaneAppOptionsOf<PlaneDb>;
/** Model prices per million tokens, for the cost the inspector shows (`PlaneAppOptions.prices`, `--prices FILE`). */
export type { ModelPrice, Prices } from '../support/prices.js';

/** What `ingestBatch` did with each row of a batch, and the counts. */
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
/**
 * Start a plane with `config`: open (and migrate) its database, or serve `options.database`; on an empty database make
 * a `local` project and an admin key (`adminKeyFile`); then serve HTTP on `config.host:config.port` (and metrics on
 * `config.metricsPort`, when set). Throws PORT_IN_USE, DATA_DIR_LOCKED or INVALID_OPTIONS, leaving no data dir it made.
 */
export const startPlane: (config: Readonly<PlaneConfig>, options?: StartPlaneOptions) => Promise<RunningPlane> =
  server.startPlane as never;

/** Options of `startPlane`: where it logs, a database it serves instead of opening one, and fault hooks for tests. */
export interface StartPlaneOptions {
  /** Where the plane logs (default: pino at the config's `logLevel`, JSON lines on stdout). */
  logger?: Logger;
  /** A database already open (`openPlaneDatabase`): the plane serves it and leaves it open when it stops. */
  database?: PlaneDatabase;
  /** Named fault points, for crash tests (`waymark/testing`); none by default. */
  faults?: PlaneAppOptions['faults'];
}
/**
 * On an empty database: make a `local` project and an admin key (scopes admin and operator), written to a 0600 file
 * `admin-key` in the data dir `dir` (the key only, for `memory://`). Resolves null when the database has projects.
 */
export const bootstrap: (database: PlaneDatabase, dir: string) => Promise<{ key: string; file: string | null } | null> =
  server.bootstrap as never;
/** Where a plane keeps its admin key: `<dataDir>/admin-key`, as an absolute path. */
export const adminKeyPath: (dataDir: string) => string = server.adminKeyPath;
/**
 * Open a plane database and bring its schema up to date: Postgres at `databaseUrl`, else PGlite in `dataDir`
 * (locked to this process).
 */
export const openPlaneDatabase: (o: OpenOptions) => Promise<PlaneDatabase> = open.openPlaneDatabase as never;
/**
 * Create an API key for `o.project` with `o.scopes`; the returned `key` is the only time its secret exists in the
 * clear. The project must exist (UNKNOWN_PROJECT otherwise) unless `o.createProject`.
 */
export const createKey: (
  db: PlaneDb,
  o: CreateKeyOptions,
) => Promise<{ key: string; id: string; projectId: string; scopes: Scope[] }> = auth.createKey as never;
/** Create a project by name; PROJECT_EXISTS when it is there already. */
export const createProject: (db: PlaneDb, name: string) => Promise<{ id: string; name: string }> =
  auth.createProject as never;
/** The projects by name, or only the one with id `only`. */
export const listProjects: (db: PlaneDb, only?: string) => Promise<{ id: string; name: string; createdAt: Date }[]> =
  auth.listProjects as never;
/** Keys (never their secrets), oldest first; of one project when `projectId` is given. */
export const listKeys: (
  db: PlaneDb,
  projectId?: string,
) => Promise<
  { id: string; name: string; project: string; scopes: string[]; createdAt: Date; revokedAt: Date | null }[]
> = auth.listKeys as never;
/** Revoke an active key (of one project when `projectId` is given); false when there is no such active key. */
export const revokeKey: (db: PlaneDb, id: string, projectId?: string) => Promise<boolean> = auth.revokeKey as never;
/** The principal a bearer key stands for, or null (unknown, malformed, revoked or wrong secret). */
export const authenticate: (db: PlaneDb, key: string | undefined) => Promise<Principal | null> =
  auth.authenticate as never;
/**
 * Ingest one batch of a writer's outbox events into a project, each row accepted, a duplicate, or rejected with its
 * reason: what `POST /v1/ingest` does.
 */
export const ingestBatch: (
  db: PlaneDb,
  projectId: string,
  writerId: string,
  backlog: Backlog | undefined,
  rows: unknown[],
) => Promise<IngestOutcome> = ingest.ingestBatch as never;
/** A key for a project that does not exist (UNKNOWN_PROJECT, listing the known ones). */
export const UnknownProject: new (name: string, known: string[]) => WaymarkError = auth.UnknownProject;
