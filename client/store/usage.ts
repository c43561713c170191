/**
 * `usageTotals` of both adapters, below their SQL: each reads, in one
 * statement, only the `nodeOutput.usage` arrays of the rows that carry one
 * (as column text), and this sums them with the same `sumUsage` the rows'
 * readers use (shared/usage.ts), so a total is the same however it was read.
 */
import type { Json } from '../../shared/json.js';
import { sumUsage, type UsageTotal } from '../../shared/usage.js';
import { CorruptRowError } from '../errors.js';

/** One row's usage array as the adapters select it. */
export interface UsageColumns {
  id: string;
  execution_id: string;
  usage: string;
}

/** A total for every id asked for (zero where no row carries usage). */
export function usageTotalsOf(executionIds: readonly string[], rows: readonly UsageColumns[]): Map<string, UsageTotal> {
  const by = new Map<string, { nodeOutput: Json }[]>(executionIds.map((id) => [id, []]));
  for (const r of rows) {
    let usage: Json;
    try {
      usage = JSON.parse(r.usage) as Json;
    } catch (e) {
      throw new CorruptRowError(r.id, 'column node_output: its usage is not JSON', e);
    }
    by.get(r.execution_id)?.push({ nodeOutput: { usage } });
  }
  return new Map([...by].map(([id, list]) => [id, sumUsage(list)]));
}

/**
 * After the usage statement failed inside the database: the first of these
 * rows whose `node_output` is not JSON, as a CorruptRowError naming it (what
 * list() would throw for it); null when every one parses (the failure was
 * something else, rethrown by the caller).
 */
export function corruptOutputOf(
  rows: readonly ({ id: string; node_output: string | null } | null)[],
  cause: unknown,
): CorruptRowError | null {
  for (const r of rows) {
    // postgres.js 3.4 was seen to return a null entry in the result read right after the failed statement: skip it
    if (!r || r.node_output === null) continue;
    try {
      JSON.parse(r.node_output);
    } catch {
      return new CorruptRowError(r.id, 'column node_output is not JSON', cause);
    }
  }
  return null;
}
