/**
 * Open the plane's database: real Postgres (postgres.js) when a URL is given,
 * else embedded PGlite in a data folder (or in memory). Same schema, same
 * drizzle-kit migrations, applied at start-up under an advisory lock so
 * several plane processes may start at once.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';
import * as schema from './schema.js';
import { lockDataDir, type DataDirLock } from './lock.js';
import type { OpenOptions, PlaneDatabaseOf } from '../types.js';

export type PlaneDb = PgDatabase<PgQueryResultHKT, typeof schema>;

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

export async function openPlaneDatabase(o: OpenOptions): Promise<PlaneDatabase> {
  const folder = migrationsFolder();
  if (o.databaseUrl) {
    const postgres = (await import('postgres')).default;
    const { drizzle } = await import('drizzle-orm/postgres-js');
    const { migrate } = await import('drizzle-orm/postgres-js/migrator');
    // one connection holds the session advisory lock for the whole migration
    // fetch_types off everywhere: see client/postgres/checkpointer.ts (postgres.js unhandled rejection on a dying backend)
    const lockConn = postgres(o.databaseUrl, { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      await lockConn`SELECT pg_advisory_lock(hashtext(${LOCK}))`;
      await migrate(drizzle(lockConn, { casing: 'snake_case' }), { migrationsFolder: folder });
      await lockConn`SELECT pg_advisory_unlock(hashtext(${LOCK}))`;
    } finally {
      await lockConn.end({ timeout: 2 });
    }
    const client = postgres(o.databaseUrl, { max: o.max ?? 10, onnotice: () => {}, fetch_types: false });
    const db = drizzle(client, { schema, casing: 'snake_case' }) as unknown as PlaneDb;
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
    mkdirSync(dir, { recursive: true });
    // PGlite is one process's database: nothing else may open this folder while we have it
    lock = lockDataDir(dir, o.command ?? `waymark plane (pid ${process.pid})`);
  }
  try {
    const client = new PGlite(dir, o.loadDataDir ? { loadDataDir: o.loadDataDir } : {});
    await client.waitReady;
    const db = drizzle(client, { schema, casing: 'snake_case' });
    await migrate(db, { migrationsFolder: folder });
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

/** A PGlite data folder that is no folder: the database lives in memory and dies with the process. */
export function isInMemory(dataDir: string): boolean {
  return dataDir.startsWith('memory://');
}
