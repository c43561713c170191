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
  const rows = await tx<{ version: number; name: string | null }[]>`SELECT version, name FROM ${versions} ORDER BY version`;
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
