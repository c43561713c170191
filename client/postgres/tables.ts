/** The Postgres store's client types and its tables, named in the store's schema. */
import type postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, never>>;
export type Tx = postgres.TransactionSql<Record<string, never>>;

export type Tables = Record<
  'meta' | 'executions' | 'checkpoints' | 'pending' | 'idempotency' | 'outbox' | 'leases' | 'decisions' | 'claims',
  postgres.Helper<string>
>;

/** The store's tables in `schema` (a name already checked), as identifiers for postgres.js templates. */
export function tablesOf(sql: Sql, schema: string): Tables {
  const id = (name: string) => sql(`${schema}.${name}`);
  return {
    meta: id('waymark_meta'),
    executions: id('executions'),
    checkpoints: id('checkpoints'),
    pending: id('pending_interrupts'),
    idempotency: id('idempotency'),
    outbox: id('outbox'),
    leases: id('leases'),
    decisions: id('decisions'),
    claims: id('claims'),
  };
}

/**
 * `(SELECT …)` over a list of strings sent as one text parameter: with
 * fetch_types off, postgres.js cannot send array parameters.
 */
export function textList(sql: Sql | Tx, values: string[]) {
  return sql`(SELECT jsonb_array_elements_text((${JSON.stringify(values)}::text)::jsonb))`;
}
