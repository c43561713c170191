/**
 * A migrated plane database with its tenant tables rewritten as `PARTITION BY HASH (project_id)`: the layout a
 * distributed Postgres (Citus) routes by. Used by test/plane/shard-routing.test.ts (which checks each statement's
 * partitions) and test/plane/postgres-partitioned.test.ts (the plane suite on that layout).
 */
import type postgres from 'postgres';
import { referenceTables } from './distribute.js';

/** How many hash partitions each tenant table gets. */
export const PARTITIONS = 8;

/** The public tables of a migrated database, and whether each has a project_id column. */
export async function publicTables(pg: postgres.Sql): Promise<{ table: string; projectId: boolean }[]> {
  return pg<{ table: string; projectId: boolean }[]>`
    SELECT c.relname AS table, EXISTS (
      SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'project_id' AND NOT a.attisdropped
    ) AS "projectId"
    FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
    WHERE s.nspname = 'public' AND c.relkind = 'r' ORDER BY c.relname`;
}

/**
 * Rewrite `table` as hash-partitioned by project_id in one transaction: a copy with PARTITIONS partitions, the
 * data moved, the names swapped, its keys and indexes made again (a unique key without project_id fails here, as
 * `create_distributed_table` refuses it). `inside` runs last in the same transaction (a trigger on the new table).
 * Answers the sequences its columns draw from.
 */
export async function partitionByProject(
  pg: postgres.Sql,
  table: string,
  inside?: (tx: postgres.TransactionSql, quoted: string) => Promise<unknown>,
): Promise<{ column: string; seq: string }[]> {
  const t = `"${table}"`;
  const constraints = await pg<{ name: string; def: string }[]>`
    SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
    WHERE conrelid = ${table}::regclass AND contype IN ('p', 'u', 'x', 'f') ORDER BY contype DESC, conname`;
  const indexes = await pg<{ def: string }[]>`
    SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
    WHERE i.indrelid = ${table}::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`;
  const sequences = await pg<{ column: string; seq: string }[]>`
    SELECT a.attname AS column, pg_get_serial_sequence(${table}, a.attname) AS seq FROM pg_attribute a
    WHERE a.attrelid = ${table}::regclass AND a.attnum > 0 AND NOT a.attisdropped
      AND pg_get_serial_sequence(${table}, a.attname) IS NOT NULL`;
  await pg.begin(async (tx) => {
    await tx.unsafe(
      `CREATE TABLE "${table}__hash" (LIKE ${t} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY HASH (project_id)`,
    );
    for (let n = 0; n < PARTITIONS; n++)
      await tx.unsafe(
        `CREATE TABLE "${table}_p${n}" PARTITION OF "${table}__hash" FOR VALUES WITH (MODULUS ${PARTITIONS}, REMAINDER ${n})`,
      );
    await tx.unsafe(`INSERT INTO "${table}__hash" SELECT * FROM ${t}`);
    for (const s of sequences) await tx.unsafe(`ALTER SEQUENCE ${s.seq} OWNED BY "${table}__hash"."${s.column}"`);
    await tx.unsafe(`DROP TABLE ${t}`);
    await tx.unsafe(`ALTER TABLE "${table}__hash" RENAME TO ${t}`);
    for (const c of constraints) await tx.unsafe(`ALTER TABLE ${t} ADD CONSTRAINT "${c.name}" ${c.def}`);
    for (const i of indexes) await tx.unsafe(i.def);
    await inside?.(tx, t);
  });
  return sequences;
}

/** Every tenant table of a migrated database (all but drizzle/citus/distribute.sql's reference tables) partitioned. */
export async function partitionTenantTables(pg: postgres.Sql): Promise<string[]> {
  const reference = referenceTables();
  const tenant = (await publicTables(pg)).filter((t) => !reference.includes(t.table)).map((t) => t.table);
  for (const table of tenant) await partitionByProject(pg, table);
  return tenant;
}
