/**
 * Open the plane's database: real Postgres (postgres.js) when a URL is given,
 * else embedded PGlite in a data folder (or in memory). Same schema, same
 * drizzle-kit migrations, applied at start-up under an advisory lock so
 * several plane processes may start at once.
 *
 * A data dir is private to its owner (0700, made so on every open): PGlite
 * writes its files 0666 whatever the umask, and the database holds every
 * run's data and every key's hash.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import { requirePeers } from '../../support/peer.js';
import { InvalidOptions } from '../../support/validate.js';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';
import * as schema from './schema.js';
import { lockDataDir, type DataDirLock } from './lock.js';
import type { OpenOptions, PlaneDatabaseOf } from '../types.js';

export type PlaneDb = PgDatabase<PgQueryResultHKT, typeof schema>;
/** The handle of one transaction of a PlaneDb. */
export type Tx = Parameters<Parameters<PlaneDb['transaction']>[0]>[0];

/** Result rows of `execute()`: postgres.js returns an array, PGlite an object with `rows`. */
export function rowsOf<T>(r: unknown): T[] {
  return (Array.isArray(r) ? r : (r as { rows: T[] }).rows) as T[];
}

export type PlaneDatabase = PlaneDatabaseOf<PlaneDb>;
export type { OpenOptions };

function migrationsFolder(): string {
  for (const rel of ['../../drizzle', '../../../drizzle']) {
    const p = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(`${p}/meta/_journal.json`)) return p;
  }
  throw new Error('drizzle migrations folder not found');
}

const LOCK = 'waymark.plane.migrate';

/**
 * Told every statement the plane's handle sends (drizzle's query logger): its text and its parameters, before it
 * goes out. For tests that examine the plane's SQL (test/plane/shard-routing.test.ts); not part of `waymark/plane`.
 */
export interface StatementTrace {
  logQuery(query: string, params: unknown[]): void;
}

export async function openPlaneDatabase(o: OpenOptions, trace?: StatementTrace): Promise<PlaneDatabase> {
  const logger = trace ? { logger: trace } : {};
  const folder = migrationsFolder();
  if (o.databaseUrl) {
    // an optional peer of the package: missing, it is named with the command that installs it (MISSING_PEER)
    await requirePeers('a plane on Postgres (--database-url)', ['postgres']);
    const postgres = (await import('postgres')).default;
    const { drizzle } = await import('drizzle-orm/postgres-js');
    const { migrate } = await import('drizzle-orm/postgres-js/migrator');
    // one connection holds the session advisory lock for the whole migration
    // fetch_types off everywhere: see client/postgres/checkpointer.ts (postgres.js unhandled rejection on a dying backend)
    const lockConn = postgres(o.databaseUrl, { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      await lockConn`SELECT pg_advisory_lock(hashtext(${LOCK}))`;
      const migrator = drizzle(lockConn, { casing: 'snake_case' });
      await refuseNewerSchema(migrator as unknown as PlaneDb, folder, 'the database at --database-url');
      await migrate(migrator, { migrationsFolder: folder });
      await lockConn`SELECT pg_advisory_unlock(hashtext(${LOCK}))`;
    } finally {
      await lockConn.end({ timeout: 2 });
    }
    const client = postgres(o.databaseUrl, { max: o.max ?? 10, onnotice: () => {}, fetch_types: false });
    const db = drizzle(client, { schema, casing: 'snake_case', ...logger }) as unknown as PlaneDb;
    try {
      await pinReadCommitted(db);
    } catch (e) {
      await client.end({ timeout: 2 });
      throw e;
    }
    return {
      db,
      kind: 'postgres',
      lock: null,
      ping: async () => {
        await db.execute(sql`SELECT 1`);
      },
      close: () => client.end({ timeout: 5 }),
    };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  const dir = o.dataDir ?? 'memory://';
  let lock: DataDirLock | null = null;
  if (!isInMemory(dir)) {
    makePrivateDir(dir);
    // PGlite is one process's database: nothing else may open this folder while we have it
    lock = lockDataDir(dir, o.command ?? `waymark plane (pid ${process.pid})`);
  }
  try {
    if (lock && !o.loadDataDir && !existsSync(join(dir, 'PG_VERSION'))) await initDataDirApart(dir, folder);
    const client = new PGlite(dir, o.loadDataDir ? { loadDataDir: o.loadDataDir } : {});
    await client.waitReady;
    const db = drizzle(client, { schema, casing: 'snake_case', ...logger });
    try {
      await refuseNewerSchema(db as unknown as PlaneDb, folder, `the data dir ${dir}`);
    } catch (e) {
      await client.close();
      throw e;
    }
    await migrate(db, { migrationsFolder: folder });
    await pinReadCommitted(db as unknown as PlaneDb);
    if (lock) tightenModes(lock.dir);
    return {
      db: db as unknown as PlaneDb,
      kind: 'pglite',
      lock,
      ping: async () => {
        await client.query('SELECT 1');
      },
      close: async () => {
        try {
          await client.close();
          // the files made while it served (new tables, WAL segments) are 0666 as well
          if (lock) tightenModes(lock.dir);
        } finally {
          lock?.release();
        }
      },
    };
  } catch (e) {
    lock?.release();
    throw e;
  }
}

/**
 * Refuse a database that a newer plane migrated (SCHEMA_NEWER, naming both
 * migrations): migrations go one way, and drizzle applies only those newer
 * than the newest applied, so a build older than the database would start on
 * a schema it does not know and fail its writes. Read under the migration
 * lock, before migrating.
 */
async function refuseNewerSchema(db: PlaneDb, folder: string, where: string): Promise<void> {
  const [table] = rowsOf<{ exists: boolean }>(
    await db.execute(sql`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS exists`),
  );
  if (!table?.exists) return;
  const [applied] = rowsOf<{ newest: string | null }>(
    await db.execute(sql`SELECT max(created_at)::text AS newest FROM drizzle.__drizzle_migrations`),
  );
  const entries = (JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as Journal).entries;
  const known = entries[entries.length - 1];
  if (applied?.newest == null || Number(applied.newest) <= known.when) return;
  const at = (ms: number) => new Date(ms).toISOString();
  throw new WaymarkError(
    ErrorCode.SCHEMA_NEWER,
    `${where} was migrated by a newer waymark plane (its newest migration is of ${at(Number(applied.newest))}; this build knows migrations up to ${known.tag}, of ${at(known.when)}): start the newer version, or restore a backup made before the upgrade`,
    { details: { applied: Number(applied.newest), known: known.tag } },
  );
}

/** drizzle-kit's list of the migrations in the folder, oldest first. */
interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

/**
 * Every transaction the plane opens without an isolation of its own runs at
 * read committed, whatever the database's default: the clocks' commit order
 * (plane/clocks.ts) and the run owners' locks rely on each statement seeing
 * what committed before it, and on a row lock that waits, then reads the
 * row's newest version. At serializable, two ingests of one project drawing
 * from one clock fail each other (40001). Checked once at open: at the
 * default (read committed) nothing is added; at another default, each such
 * transaction sets its level (one statement more). A single statement sent
 * outside a transaction (a session's, a restore's contact) runs at the
 * default: none draws from a clock or takes an owner's lock.
 */
async function pinReadCommitted(db: PlaneDb): Promise<void> {
  const [{ level }] = rowsOf<{ level: string }>(
    await db.execute(sql`SELECT current_setting('default_transaction_isolation') AS level`),
  );
  if (level === 'read committed') return;
  const own = db.transaction.bind(db);
  db.transaction = ((fn, config) => own(fn, { isolationLevel: 'read committed', ...config })) as typeof db.transaction;
}

/**
 * The shared buffers of a PGlite data dir the plane makes: half Postgres'
 * default, as PGlite's memory is the plane process's own and a laptop's
 * embedded plane keeps few runs warm (its files stay in the OS page cache).
 */
const PGLITE_SHARED_BUFFERS = '64MB';

/**
 * Make a new PGlite data dir (initdb, the migrations, its settings) in a
 * short-lived child process. PGlite's memory only grows: a process that ran
 * initdb holds about 450 MB more for its whole life than one that opens a
 * folder made before, so the plane makes its folder apart and opens it as a
 * restart would (docs/OPERATIONS.md, sizing).
 */
async function initDataDirApart(dir: string, migrationsFolder: string): Promise<void> {
  const from = createRequire(import.meta.url);
  const [pglite, drizzle, migrator] = ['@electric-sql/pglite', 'drizzle-orm/pglite', 'drizzle-orm/pglite/migrator'].map(
    (m) => JSON.stringify(from.resolve(m)),
  );
  const script = `const { PGlite } = require(${pglite});
const { drizzle } = require(${drizzle});
const { migrate } = require(${migrator});
(async () => {
  const client = new PGlite(${JSON.stringify(dir)});
  await migrate(drizzle(client), { migrationsFolder: ${JSON.stringify(migrationsFolder)} });
  await client.exec("ALTER SYSTEM SET shared_buffers = '${PGLITE_SHARED_BUFFERS}'");
  await client.close();
})().catch((e) => { console.error(e instanceof Error ? e.message : String(e)); process.exit(1); });`;
  try {
    await promisify(execFile)(process.execPath, ['-e', script], { timeout: 10 * 60_000 });
  } catch (e) {
    const stderr = String((e as { stderr?: unknown }).stderr ?? '').trim();
    const why = stderr.split('\n')[0] || (e as Error).message;
    throw new WaymarkError(
      ErrorCode.DATA_DIR_INIT_FAILED,
      `could not make the plane's database in ${dir} (${why}); the folder may hold part of one: remove it, or give an empty or new data dir`,
      { cause: e, details: { dataDir: dir, stderr } },
    );
  }
}

/** A PGlite data folder that is no folder: the database lives in memory and dies with the process. */
export function isInMemory(dataDir: string): boolean {
  return dataDir.startsWith('memory://');
}

/**
 * Make a plane data dir (0700, with any missing parents) or make an existing
 * one 0700: a folder others cannot enter keeps every file in it private,
 * whatever the file's own mode. A folder this user may not chmod (another
 * user's) is refused: INVALID_OPTIONS.
 */
export function makePrivateDir(dirIn: string): void {
  const dir = resolve(dirIn);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    chmodSync(dir, 0o700);
  } catch (e) {
    throw new InvalidOptions(
      `the plane data dir ${dir} cannot be made private (chmod 0700: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); it holds every run's data and the admin key: ` +
        'give a data dir of your own (--data-dir DIR or WAYMARK_PLANE_DIR)',
      { details: { dataDir: dir }, cause: e },
    );
  }
}

/** Take group and other permissions off everything in a data dir (PGlite makes its files 0666); best effort, the 0700 dir is the guarantee. */
export function tightenModes(dir: string): void {
  let entries: string[];
  try {
    entries = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  } catch {
    return;
  }
  for (const name of entries) {
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (st.mode & 0o077 && !st.isSymbolicLink()) chmodSync(path, st.mode & 0o700);
    } catch {
      // removed meanwhile (a WAL segment recycled): nothing to tighten
    }
  }
}
