/**
 * The Postgres migration runner: `waymark_migrations` in the store's schema
 * holds one row per applied version, with its name. The list itself is
 * `client/store/migrations.ts`, shared with SQLite.
 */
import type postgres from 'postgres';
import { MIGRATIONS, postgresText, type Migration } from '../store/migrations.js';

type Tx = postgres.TransactionSql<Record<string, never>>;

/**
 * Bring `schema` to the newest version inside `tx` (the caller holds the
 * schema's advisory lock and has created the schema). A schema of an older
 * waymark (a version table without names) gets the column and its names
 * first; a schema of a newer waymark (a version past the list) is left as it is.
 * `list` is for tests of an entry yet to be appended.
 */
export async function migratePostgres(tx: Tx, schema: string, list: readonly Migration[] = MIGRATIONS): Promise<void> {
  const versions = tx(`${schema}.waymark_migrations`);
  await tx`CREATE TABLE IF NOT EXISTS ${versions} (
    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now(), name text)`;
  const [{ named }] = await tx<{ named: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM information_schema.columns
      WHERE table_schema = ${schema} AND table_name = 'waymark_migrations' AND column_name = 'name') AS named`;
  if (!named) await tx`ALTER TABLE ${versions} ADD COLUMN name text`;
  const rows = await tx<
    { version: number; name: string | null }[]
  >`SELECT version, name FROM ${versions} ORDER BY version`;
  for (const r of rows) {
    if (r.name === null && r.version <= list.length) {
      await tx`UPDATE ${versions} SET name = ${list[r.version - 1].name} WHERE version = ${r.version}`;
    }
  }
  const current = rows.length ? rows[rows.length - 1].version : 0;
  for (let i = current; i < list.length; i++) {
    await tx.unsafe(postgresText(list[i], schema));
    await tx`INSERT INTO ${versions} (version, name) VALUES (${i + 1}, ${list[i].name})`;
  }
}

// what a schema not set up yet answers the read of `migratedWriterId` with
const UNDEFINED_TABLE = '42P01'; // undefined_table (a schema that does not exist yet answers this too)
const UNDEFINED_COLUMN = '42703'; // undefined_column (a version table without names)

/**
 * The writer id of a schema `migratePostgres` has nothing to do for (at or
 * past the newest version, every version named, the writer id persisted), or
 * null when the full setup must run. One read, no transaction and no lock, so
 * the open of a set-up schema (every open but the first) is one round trip; a
 * concurrent setup's uncommitted work is not seen, and its caller then waits
 * for the lock and decides again.
 */
export async function migratedWriterId(
  sql: postgres.Sql<Record<string, never>>,
  schema: string,
  list: readonly Migration[] = MIGRATIONS,
): Promise<string | null> {
  const versions = sql(`${schema}.waymark_migrations`);
  const meta = sql(`${schema}.waymark_meta`);
  try {
    const [row] = await sql<{ version: number | null; unnamed: number; writer: string | null }[]>`
      SELECT (SELECT max(version) FROM ${versions}) AS version,
             (SELECT count(*)::int FROM ${versions} WHERE name IS NULL) AS unnamed,
             (SELECT value FROM ${meta} WHERE key = 'writer_id') AS writer`;
    return row.version !== null && row.version >= list.length && row.unnamed === 0 && row.writer !== null
      ? row.writer
      : null;
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === UNDEFINED_TABLE || code === UNDEFINED_COLUMN) return null;
    throw e;
  }
}
