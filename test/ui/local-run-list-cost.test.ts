/**
 * The local UI's run list costs a page, not the rows of the runs on it: the
 * usage column comes from one `usageTotals` read per page (only the rows that
 * carry usage leave the database), so a run with thousands of rows is not read
 * row by row to be listed. Shown by counting the checkpoint rows the store
 * hands the UI (a counting wrapper around a real SQLite store), over real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../client/checkpointer.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import type { Json } from '../../shared/json.js';
import { sumUsage } from '../../shared/usage.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-local-list-cost-');
const LONG_ROWS = 1_500;
/** What a run page may read: its page of rows (200 and one more), the newest row, the two rows it compares and the row after its last answered pause, well below the run's 1,500. */
const PAGE_ROWS = 205;
let store: SqliteCheckpointer;
let ui: LocalUi;
/** Checkpoint rows the store returned to the UI, and usageTotals calls, since the last reset. */
const read = { rows: 0, usageCalls: 0 };

/** The store, with every checkpoint row it returns counted (the reads themselves are the real store's). */
function counting(s: Checkpointer): Checkpointer {
  const count = (v: unknown) => {
    if (Array.isArray(v)) read.rows += v.filter((r) => r && typeof r === 'object' && 'seq' in r).length;
    else if (v && typeof v === 'object' && 'seq' in v) read.rows++;
    return v;
  };
  return new Proxy(s, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === 'usageTotals') return (ids: string[]) => (read.usageCalls++, target.usageTotals(ids));
      if (prop === 'list' || prop === 'latest' || prop === 'getById')
        return async (...args: unknown[]) => count(await value.apply(target, args));
      return value.bind(target);
    },
  });
}

const usage = (i: number): Json => [
  {
    model: 'm',
    agentPath: 'agent:t',
    turn: i,
    inputTokens: 100,
    outputTokens: 7,
    cachedInputTokens: 0,
    finishReason: 'stop',
  },
];

beforeAll(async () => {
  store = new SqliteCheckpointer({ path: tmp.file('long.db'), writerId: 'laptop' });
  let prev: string | null = null;
  // a long run: a model call every tenth row
  for (let i = 0; i < LONG_ROWS; i++)
    prev = (
      await store.put({
        ...step('run-long', i),
        prevId: prev,
        nodeOutput: i % 10 === 0 ? { usage: usage(i) } : { text: `t${i}` },
      })
    ).id;
  for (let i = 0; i < 5; i++) await store.put({ ...step(`run-short-${i}`, 0), nodeOutput: { usage: usage(0) } });
  ui = await serveLocalUi(counting(store), { port: 0 });
});
afterAll(async () => {
  await ui?.close();
  await store?.close();
  tmp.cleanup();
});

describe('the local run list reads a page, not every row', () => {
  it(`lists a run of ${LONG_ROWS} rows with its usage after reading a few rows per listed run and one usage read`, async () => {
    read.rows = 0;
    read.usageCalls = 0;
    const res = await fetch(`${ui.url}/`);
    expect(res.status).toBe(200);
    const html = await res.text();
    const all = sumUsage(await store.list('run-long'));
    expect(all.calls).toBe(LONG_ROWS / 10);
    // the long run's usage, as summed over all of its rows (with thousands separators)
    expect(html).toContain(
      `${all.inputTokens.toLocaleString('en-US')} in / ${all.outputTokens.toLocaleString('en-US')} out`,
    );
    expect(html).toContain('100 in / 7 out');
    // six runs listed: the first and the newest row of each, not the long run's 1,500
    expect(read.rows).toBeLessThanOrEqual(6 * 2);
    expect(read.usageCalls).toBe(1);
  });

  it("a run's page shows the usage of all its rows, from the same read, and reads a page of rows, not the run (its decisions come from their own index)", async () => {
    read.usageCalls = 0;
    read.rows = 0;
    const res = await fetch(`${ui.url}/runs/run-long`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('data-testid="usage"');
    expect(html).toContain(`${LONG_ROWS / 10} model calls`);
    expect(read.usageCalls).toBe(1);
    expect(read.rows).toBeLessThanOrEqual(PAGE_ROWS);
  });
});
