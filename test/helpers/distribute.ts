/**
 * What drizzle/citus/distribute.sql makes of each table, read from the script itself: the one list of the tables
 * every project shares (Citus reference tables) for the tests that need it.
 */
import { readFileSync } from 'node:fs';

export const DISTRIBUTE_SCRIPT = new URL('../../drizzle/citus/distribute.sql', import.meta.url);

/** The tables the script makes reference tables, in its order. */
export function referenceTables(script = readFileSync(DISTRIBUTE_SCRIPT, 'utf8')): string[] {
  return [...script.matchAll(/create_reference_table\('(\w+)'\)/g)].map((m) => m[1]);
}
