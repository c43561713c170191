/**
 * The shapes of the plane's handles and options, written once for the plane's
 * modules and for its public facade (index.ts). They name no drizzle or hono
 * type: the database handle is a parameter (`Db`), drizzle's inside the plane
 * and an opaque one in `waymark/plane`, so a consumer type-checking with
 * `skipLibCheck: false` never loads drizzle-orm's declarations.
 */
import type { FaultHook } from '../support/faults.js';
import type { Prices } from '../support/prices.js';
import type { Logger } from 'pino';
import type { DataDirLock } from './db/lock.js';

/**
 * An open plane database.
 *
 * @inline
 */
export interface PlaneDatabaseOf<Db> {
  db: Db;
  kind: 'postgres' | 'pglite';
  /** The data dir lock this process holds (PGlite in a folder), else null. */
  lock: DataDirLock | null;
  /** Throws when the database cannot answer. */
  ping(): Promise<void>;
  /** Close the connections (and release the data dir lock). */
  close(): Promise<void>;
}

/** Options of `openPlaneDatabase`: Postgres by URL, or PGlite in a folder or in memory. */
export interface OpenOptions {
  /** Postgres URL; absent: PGlite in `dataDir`. */
  databaseUrl?: string;
  /** PGlite data folder; `memory://` for an in-memory database. */
  dataDir?: string;
  /** A PGlite data dump (from `dumpDataDir`) to start from. */
  loadDataDir?: Blob | File;
  /** Pool size for Postgres. */
  max?: number;
  /** What this process is, written to the PGlite data dir's lock file for whoever finds it held. */
  command?: string;
}

/** Named fault points (tests): 'plane.ingest.afterCommit', 'plane.claim.afterCommit'. */
/** The one fault-hook type of client and plane (support/faults.ts); the plane awaits what it returns. */
export type PlaneFaults = FaultHook;

export interface PlaneAppOptionsOf<Db> {
  /** The plane database the app serves (`openPlaneDatabase`). */
  database: PlaneDatabaseOf<Db>;
  /** The pino logger for requests and the plane's work. Default: a silent one. */
  logger?: Logger;
  /** Ingest batches handled at once (default 16); more wait for a slot (`maxQueuedIngest`). */
  maxInflightIngest?: number;
  /** Batches that may wait for a slot (default 64); more are refused with 429. */
  maxQueuedIngest?: number;
  /** How long a batch may wait for a slot (default 10 s) before it is refused with 429. */
  ingestQueueWaitMs?: number;
  /** How long a request body may go without a byte (default 10 s) before 408 BODY_TIMEOUT. */
  bodyIdleMs?: number;
  /** How long a whole request body may take (default 120 s) before 408 BODY_TIMEOUT. */
  bodyTotalMs?: number;
  /** Inspector without login (honoured only when the plane binds to loopback). */
  dev?: boolean;
  /** Model prices (support/prices.ts, checked by loadConfig): the inspector shows each run's cost. Absent: no cost. */
  prices?: Prices;
  /**
   * A claim held (claimed at the plane, the holder's local claim never
   * reported) for longer than this may be taken over by another writer.
   * 0: never. Default 1 hour.
   */
  claimReleaseAfterMs?: number;
  /** A run not paused may be taken over once its writer was not heard from for this long (default 60 s; see PlaneConfig). */
  takeoverAfterMs?: number;
  /**
   * How long a key made on the inspector's Keys page keeps its secret, in this process's memory, for the page that
   * shows it once (default 2 minutes; the browser opens that page at once).
   */
  newKeyShownForMs?: number;
  /** Named fault points for crash tests: 'plane.ingest.afterCommit', 'plane.claim.afterCommit'. Default none. */
  faults?: PlaneFaults;
}

export interface RunningPlaneOf<Db> {
  url: string;
  port: number;
  /** Where operator metrics are served (`${metricsUrl}/metrics`), or null when no metrics port is set. */
  metricsUrl: string | null;
  database: PlaneDatabaseOf<Db>;
  /** Set on the first start of an empty database: where the admin key was written. */
  adminKeyFile: string | null;
  adminKey: string | null;
  /** Stop serving: the listeners, the retention schedule, and the database unless it was passed in (`options.database`). */
  close(): Promise<void>;
}
