/**
 * drizzle/citus/distribute.sql, the script a Citus operator runs on the plane's database, checked against the
 * schema the migrations make (a migrated Postgres database's catalog) and against plane/db/schema.ts.
 *
 * Citus is not installable here, so the script runs against stand-ins of the two functions it calls and of the
 * metadata table it reads (`pg_dist_partition`): they do nothing but record each call, in order. What Citus
 * itself would refuse, or do wrong, is checked from those calls and the catalog (the rules are cited in
 * docs/DECISIONS.md, "The plane on Citus"):
 * - every table of the schema is named once: a table left out stays on the coordinator alone;
 * - the tables every project shares (no `project_id` column, or read by key id or session hash) are reference
 *   tables, and come before every distributed table;
 * - every other table has a `project_id` column and is distributed by it, all in one colocation group (the first
 *   starts a new one, `colocate_with => 'none'`; every later one names the first), so a project's joins stay on
 *   one node;
 * - each primary key and unique index of a distributed table includes `project_id` (Citus refuses any other);
 * - a foreign key points from a table to one named before it, never from a reference table to a distributed one;
 * - no migration after 0013 (the first the script was written for) adds a column drawing from a sequence (serial,
 *   `DEFAULT nextval`, identity): Citus refuses that on a non-empty distributed table; and since 0016 no column
 *   draws from one at all (the feeds' keys come from the per-project clocks, plane/clocks.ts).
 * The script runs twice: the second run names no table again (an operator runs it after every upgrade).
 */
import { readFileSync } from 'node:fs';
import { is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPlaneDatabase } from '../../plane/db/open.js';
import * as schema from '../../plane/db/schema.js';
import { DISTRIBUTE_SCRIPT, referenceTables } from '../helpers/distribute.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const ready = await pgReady('distribution script');

const MIGRATIONS = new URL('../../drizzle/', import.meta.url);
/** The first migration the script was written for: the ones after it must keep every table distributable. */
const FIRST_DISTRIBUTABLE = 13;

/** Citus's two functions and its table of distributed tables, as stand-ins that record what the script asks. */
const STANDINS = `
  CREATE SCHEMA citus_standin;
  CREATE TABLE citus_standin.pg_dist_partition (logicalrelid regclass PRIMARY KEY);
  CREATE TABLE citus_standin.calls (n serial, fn text, tbl text, col text, colocate_with text);
  CREATE FUNCTION citus_standin.create_reference_table(table_name regclass) RETURNS void LANGUAGE sql AS $$
    INSERT INTO citus_standin.calls (fn, tbl) VALUES ('create_reference_table', table_name::text);
    INSERT INTO citus_standin.pg_dist_partition VALUES (table_name);
  $$;
  CREATE FUNCTION citus_standin.create_distributed_table(table_name regclass, distribution_column text,
      distribution_type text DEFAULT 'hash', colocate_with text DEFAULT 'default') RETURNS void LANGUAGE sql AS $$
    INSERT INTO citus_standin.calls (fn, tbl, col, colocate_with)
      VALUES ('create_distributed_table', table_name::text, distribution_column, colocate_with);
    INSERT INTO citus_standin.pg_dist_partition VALUES (table_name);
  $$;`;

interface Call {
  fn: 'create_reference_table' | 'create_distributed_table';
  tbl: string;
  col: string | null;
  colocate_with: string | null;
}

/**
 * Run `script` twice on the database of `sql` (whose search_path finds the stand-ins) and say every problem with
 * it against that database's catalog: none is an empty list.
 */
async function problemsOf(sql: postgres.Sql | postgres.TransactionSql, script: string): Promise<string[]> {
  await sql`TRUNCATE citus_standin.calls, citus_standin.pg_dist_partition`;
  await sql.unsafe(script);
  const calls = await sql<Call[]>`SELECT fn, tbl, col, colocate_with FROM citus_standin.calls ORDER BY n`;
  await sql.unsafe(script);
  const [{ again }] = await sql<
    { again: number }[]
  >`SELECT count(*)::int - ${calls.length} AS again FROM citus_standin.calls`;
  const tables = await sql<{ table: string; projectId: boolean }[]>`
    SELECT c.relname AS table, EXISTS (SELECT 1 FROM pg_attribute a
      WHERE a.attrelid = c.oid AND a.attname = 'project_id' AND NOT a.attisdropped) AS "projectId"
    FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
    WHERE s.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY c.relname`;
  const uniques = (
    await sql<{ table: string; index: string; columns: string }[]>`
    SELECT t.relname AS table, i.relname AS index,
      array_to_string(array(SELECT a.attname FROM unnest(x.indkey) k
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k), ',') AS columns
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace s ON s.oid = t.relnamespace
    WHERE s.nspname = 'public' AND x.indisunique ORDER BY t.relname, i.relname`
  ).map((u) => ({ ...u, columns: u.columns.split(',') }));
  const foreign = await sql<{ name: string; from: string; to: string }[]>`
    SELECT c.conname AS name, f.relname AS from, t.relname AS to
    FROM pg_constraint c JOIN pg_class f ON f.oid = c.conrelid JOIN pg_class t ON t.oid = c.confrelid
      JOIN pg_namespace s ON s.oid = f.relnamespace
    WHERE s.nspname = 'public' AND c.contype = 'f' ORDER BY c.conname`;

  const problems: string[] = [];
  if (again) problems.push(`run again, the script named ${again} table(s) a second time`);
  const order = calls.map((c) => c.tbl);
  for (const t of tables) {
    const n = order.filter((x) => x === t.table).length;
    if (n !== 1) problems.push(`table ${t.table} is named ${n} times, not once`);
  }
  for (const c of calls)
    if (!tables.some((t) => t.table === c.tbl)) problems.push(`the script names ${c.tbl}, which is not a table`);
  const reference = calls.filter((c) => c.fn === 'create_reference_table');
  const distributed = calls.filter((c) => c.fn === 'create_distributed_table');
  const lastReference = Math.max(...reference.map((c) => calls.indexOf(c)));
  for (const c of distributed.filter((d) => calls.indexOf(d) < lastReference))
    problems.push(`distributed table ${c.tbl} comes before a reference table`);
  for (const t of tables.filter((x) => !x.projectId))
    if (!reference.some((c) => c.tbl === t.table))
      problems.push(`table ${t.table} has no project_id column: it can only be a reference table`);
  const [first, ...rest] = distributed;
  if (first && first.colocate_with !== 'none')
    problems.push(`the first distributed table, ${first.tbl}, joins group '${first.colocate_with}', not a new one`);
  for (const c of distributed) {
    if (c.col !== 'project_id') problems.push(`${c.tbl} is distributed by ${c.col}, not project_id`);
    const keys = uniques.filter((u) => u.table === c.tbl && !u.columns.includes('project_id'));
    for (const u of keys)
      problems.push(`${c.tbl}: unique index ${u.index} (${u.columns.join(', ')}) does not include project_id`);
  }
  for (const c of rest)
    if (c.colocate_with !== first.tbl)
      problems.push(`${c.tbl} is colocated with '${c.colocate_with}', not with ${first.tbl}: another group`);
  for (const fk of foreign) {
    if (order.indexOf(fk.to) > order.indexOf(fk.from))
      problems.push(`foreign key ${fk.name}: ${fk.from} is named before ${fk.to}, the table it refers to`);
    if (reference.some((c) => c.tbl === fk.from) && distributed.some((c) => c.tbl === fk.to))
      problems.push(`foreign key ${fk.name}: reference table ${fk.from} refers to distributed table ${fk.to}`);
  }
  return problems;
}

/** Every statement of a migration that adds a column drawing from a sequence. */
function sequenceColumns(text: string): string[] {
  return text
    .split('--> statement-breakpoint')
    .filter((s) => /\bADD\s+COLUMN\b/i.test(s) && /\b(small|big)?serial\d?\b|\bnextval\s*\(|\bAS\s+IDENTITY\b/i.test(s))
    .map((s) => s.trim());
}

describe.skipIf(!ready)('the Citus distribution script (drizzle/citus/distribute.sql)', () => {
  let db: TestDatabase;
  let sql: postgres.Sql;
  const script = readFileSync(DISTRIBUTE_SCRIPT, 'utf8');

  beforeAll(async () => {
    db = await createTestDatabase('waymark_distribute');
    // the schema as the migrations make it
    await (await openPlaneDatabase({ databaseUrl: db.url, max: 1 })).close();
    sql = postgres(db.url, {
      max: 1,
      onnotice: () => {},
      fetch_types: false,
      connection: { search_path: 'public, citus_standin' },
    });
    await sql.unsafe(STANDINS);
  }, 60_000);
  afterAll(async () => {
    await sql?.end({ timeout: 2 });
    await db?.drop();
  });

  it('names every table once: reference tables first, then one colocation group by project_id', async () => {
    expect(await problemsOf(sql, script)).toEqual([]);
  });

  it('names the tables plane/db/schema.ts declares, and makes reference tables of those it says are shared', async () => {
    const declared = (Object.values(schema) as unknown[])
      .filter((v): v is PgTable => is(v, PgTable))
      .map((t) => getTableConfig(t));
    const named = [...script.matchAll(/create_(reference|distributed)_table\('(\w+)'/g)].map((m) => m[2]);
    expect(declared.map((t) => t.name).sort()).toEqual([...new Set(named)].sort());
    // the shared ones, as the schema's header names them (test/plane/shard-routing.test.ts reads them from here)
    const shared = referenceTables(script);
    expect(shared).toEqual(['projects', 'api_keys', 'sessions']);
    // the schema's keys are camelCase; the database's columns their snake_case (the plane opens drizzle so)
    for (const t of declared.filter((x) => !shared.includes(x.name)))
      expect(
        t.columns.map((c) => c.name),
        t.name,
      ).toContain('projectId');
  });

  it('fails a script that leaves out a table, and a migration that adds a table or a unique key it cannot take', async () => {
    // the script without writers
    const without = script.replace(/SELECT create_distributed_table\('writers'[^;]*;/, '');
    expect(without).not.toBe(script);
    expect(await problemsOf(sql, without)).toEqual(['table writers is named 0 times, not once']);
    // a future migration: a table of a project, a unique key without project_id on a distributed table, a
    // foreign key from a shared table to a project's; tried in a transaction that is rolled back
    let problems: string[] = [];
    await sql
      .begin(async (tx) => {
        await tx.unsafe(`
          CREATE TABLE labels (project_id text NOT NULL, execution_id text NOT NULL, label text NOT NULL,
            PRIMARY KEY (project_id, execution_id, label));
          CREATE UNIQUE INDEX checkpoints_row_id ON checkpoints (id);
          ALTER TABLE api_keys ADD COLUMN last_run text;
          ALTER TABLE api_keys ADD CONSTRAINT api_keys_last_run FOREIGN KEY (project_id, last_run)
            REFERENCES executions (project_id, execution_id);`);
        problems = await problemsOf(tx, script);
        throw new Error('rolled back');
      })
      .catch((e: Error) => {
        if (e.message !== 'rolled back') throw e;
      });
    expect(problems).toEqual([
      'table labels is named 0 times, not once',
      'checkpoints: unique index checkpoints_row_id (id) does not include project_id',
      'foreign key api_keys_last_run: api_keys is named before executions, the table it refers to',
      'foreign key api_keys_last_run: reference table api_keys refers to distributed table executions',
    ]);
  });

  it('leaves no column of the migrated schema drawing from a sequence (the feeds draw from plane/clocks.ts)', async () => {
    // a sequence is drawn on one node (Citus: from per-node ranges) and Citus refuses nextval in an UPDATE of a
    // distributed table: the keys the feeds page by come from the per-project clocks, distributed with the rest
    const drawing = await sql<{ column: string }[]>`
      SELECT c.relname || '.' || a.attname AS column
      FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid JOIN pg_namespace s ON s.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
      WHERE s.nspname = 'public' AND pg_get_expr(d.adbin, d.adrelid) ILIKE '%nextval(%'
      UNION ALL
      SELECT c.relname || '.' || a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace s ON s.oid = c.relnamespace
      WHERE s.nspname = 'public' AND a.attidentity <> '' AND NOT a.attisdropped`;
    expect(drawing.map((d) => d.column)).toEqual([]);
    const [{ n }] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
      WHERE s.nspname = 'public' AND c.relkind = 'S'`;
    expect(n, 'sequences left in the schema').toBe(0);
  });

  it(`adds no column drawing from a sequence after migration ${FIRST_DISTRIBUTABLE} (Citus refuses it on a non-empty table)`, () => {
    const journal = JSON.parse(readFileSync(new URL('meta/_journal.json', MIGRATIONS), 'utf8')) as {
      entries: { idx: number; tag: string }[];
    };
    const found = journal.entries
      .filter((e) => e.idx >= FIRST_DISTRIBUTABLE)
      .flatMap((e) =>
        sequenceColumns(readFileSync(new URL(`${e.tag}.sql`, MIGRATIONS), 'utf8')).map((s) => `${e.tag}: ${s}`),
      );
    expect(found).toEqual([]);
    // the check finds the ones migrations made before the script (0007, 0008), and the other spellings
    expect(sequenceColumns(readFileSync(new URL('0008_changes.sql', MIGRATIONS), 'utf8'))).toHaveLength(1);
    expect(
      sequenceColumns(
        'ALTER TABLE "a" ADD COLUMN "n" integer DEFAULT nextval(\'s\');--> statement-breakpoint\nALTER TABLE "b" ADD COLUMN "m" bigint GENERATED ALWAYS AS IDENTITY;--> statement-breakpoint\nALTER TABLE "c" ADD COLUMN "t" text;',
      ),
    ).toHaveLength(2);
  });
});
