/**
 * Model prices (support/prices.ts): a run's cost is the sum over its model calls' usage at each model's prices per
 * million tokens, cached input at its own price where one is given; a model with usage and no price makes the cost
 * unknown ("no price for <model>"), never 0. A prices value or file with problems is refused with every problem
 * named (INVALID_OPTIONS; a command line's, USAGE with exit 2) by `waymark ui`, `waymark plane`, `serveLocalUi` and
 * the plane's config, and nothing is served.
 */
import { writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../client/cli/main.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi } from '../../client/ui/serve.js';
import { planeMain } from '../../plane/cli.js';
import { loadConfig } from '../../plane/config.js';
import { ErrorCode } from '../../shared/errors.js';
import type { Json } from '../../shared/json.js';
import { sumUsage } from '../../shared/usage.js';
import { costOf, costText, moneyText, pricesProblems, readPricesFile, resolvePrices } from '../../support/prices.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-prices-');
afterAll(() => tmp.cleanup());

const call = (model: string, inputTokens: number, outputTokens: number, cachedInputTokens = 0): Json => ({
  model,
  agentPath: 'agent:a',
  turn: 0,
  inputTokens,
  outputTokens,
  cachedInputTokens,
  finishReason: 'stop',
});
const rows = (...calls: Json[]) => calls.map((c) => ({ nodeOutput: { usage: [c] } }));

const PRICES = {
  currency: 'USD',
  models: {
    big: { input: 2.5, output: 10, cachedInput: 1.25 },
    small: { input: 0.15, output: 0.6 },
  },
};

describe('costOf', () => {
  it("sums each model's calls at its prices per million tokens, cached input at its own price", () => {
    const usage = sumUsage(
      rows(
        call('big', 1_000_000, 100_000, 400_000),
        call('big', 200_000, 0),
        call('small', 2_000_000, 500_000, 1_000_000),
      ),
    );
    // big: 800k input at 2.5 + 400k cached at 1.25 + 100k output at 10 = 2 + 0.5 + 1; small: 2M input (its cached part
    // at the input price: no cachedInput) at 0.15 + 500k output at 0.6 = 0.3 + 0.3
    const cost = costOf(usage, PRICES);
    expect(cost).toEqual({ amount: expect.closeTo(4.1, 10), currency: 'USD' });
    expect(costText(cost)).toBe('$4.10');
    expect(moneyText(0.000123, 'USD')).toBe('$0.0001');
    expect(moneyText(0.0123, 'EUR')).toBe('€0.0123');
    expect(moneyText(0, 'USD')).toBe('$0.00');
  });

  it('says which models have no price instead of counting them as free', () => {
    const usage = sumUsage(rows(call('big', 1000, 10), call('mystery', 1000, 10), call('__proto__', 5, 5)));
    const cost = costOf(usage, PRICES);
    expect(cost).toEqual({ unpriced: ['__proto__', 'mystery'] });
    expect(costText(cost)).toBe('no price for __proto__, mystery');
  });
});

describe('prices are checked, every problem named', () => {
  const BAD = {
    currency: 'dollars',
    models: {
      a: { input: -1, output: 'ten' },
      b: { output: 1, cached: 2 },
      c: 5,
    },
    extra: true,
  };
  const PROBLEMS = [
    "unknown option 'prices.extra'",
    'prices.currency: must be a currency\'s three-letter ISO 4217 code, such as "USD" (got "dollars")',
    'prices.models["a"].input: must be a number, at least 0 (got -1)',
    'prices.models["a"].output: must be a number, at least 0 (got "ten")',
    'unknown option \'prices.models["b"].cached\' (did you mean \'prices.models["b"].cachedInput\'?)',
    'prices.models["b"].input: required, a price per million tokens',
    'prices.models["c"]: must be an object (got 5)',
  ];

  it('pricesProblems names each', () => {
    expect(pricesProblems(BAD)).toEqual(PROBLEMS);
    expect(pricesProblems(PRICES)).toEqual([]);
    expect(pricesProblems([])).toEqual(['prices: must be an object (got an array)']);
    expect(pricesProblems({ currency: 'USD', models: {} })).toEqual(['prices.models: must name at least one model']);
  });

  it('serveLocalUi and the plane config refuse them with INVALID_OPTIONS, serving nothing', async () => {
    const store = new SqliteCheckpointer({ path: ':memory:', writerId: 'w' });
    try {
      const refused = await serveLocalUi(store, { port: 0, prices: BAD as never }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: ErrorCode.INVALID_OPTIONS, details: { problems: PROBLEMS } });
    } finally {
      await store.close();
    }
    expect(() => loadConfig({}, { prices: BAD as never })).toThrow(
      expect.objectContaining({ code: ErrorCode.INVALID_OPTIONS, details: { problems: PROBLEMS } }),
    );
    expect(loadConfig({}, { prices: PRICES }).prices).toEqual(PRICES);
  });

  it('a prices value is checked and frozen once: a resolved copy is taken as it is by the plane config, never copied again', () => {
    const given = JSON.parse(JSON.stringify(PRICES)) as typeof PRICES;
    const r = resolvePrices(given);
    if (!('prices' in r)) throw new Error(r.problems.join('; '));
    expect(r.prices).toEqual(PRICES);
    expect(Object.isFrozen(r.prices) && Object.isFrozen(r.prices.models)).toBe(true);
    // the caller's own object stays its own: changing it later changes nothing served
    (given.models as Record<string, unknown>).extra = { input: 1, output: 1 };
    expect(Object.keys(r.prices.models)).toEqual(Object.keys(PRICES.models));
    expect(resolvePrices(r.prices)).toEqual({ prices: r.prices });
    expect((resolvePrices(r.prices) as { prices: unknown }).prices).toBe(r.prices);
    // what a command read from a --prices file reaches the inspector as read
    const file = tmp.file('once.json');
    writeFileSync(file, JSON.stringify(PRICES));
    const read = readPricesFile(file);
    if (!('prices' in read)) throw new Error(read.problems.join('; '));
    expect(loadConfig({}, { dataDir: 'memory://', prices: read.prices }).prices).toBe(read.prices);
    expect(resolvePrices({ currency: 'usd', models: {} })).toEqual({
      problems: pricesProblems({ currency: 'usd', models: {} }),
    });
  });

  it('a prices file: unreadable, not JSON or not prices, refused by waymark ui and waymark plane with exit 2', async () => {
    const missing = tmp.file('none.json');
    const notJson = tmp.file('not.json');
    const bad = tmp.file('bad.json');
    const good = tmp.file('good.json');
    writeFileSync(notJson, '{ currency: USD');
    writeFileSync(bad, JSON.stringify(BAD));
    writeFileSync(good, JSON.stringify(PRICES));
    expect(readPricesFile(missing)).toEqual({
      problems: [`option '--prices': cannot read ${JSON.stringify(missing)} (ENOENT)`],
    });
    expect((readPricesFile(notJson) as { problems: string[] }).problems[0]).toMatch(
      /^option '--prices': ".*" is not JSON \(/,
    );
    expect(readPricesFile(bad)).toEqual({
      // each problem placed in the file, by its path
      problems: PROBLEMS.map((p) => `option '--prices': ${p.replaceAll('prices', bad)}`),
    });
    expect(readPricesFile(good)).toEqual({ prices: PRICES });

    for (const run of [
      (argv: string[], out: (l: string) => void) => main(['ui', '--db', tmp.file('x.db'), ...argv], out, out),
      (argv: string[], out: (l: string) => void) => planeMain(['--data-dir', tmp.file('plane'), ...argv], out, out),
    ]) {
      const lines: string[] = [];
      expect(await run(['--prices', bad], (l) => lines.push(l))).toBe(2);
      const text = lines.join('\n');
      expect(text).toMatch(/USAGE/);
      expect(text).toContain('input: must be a number, at least 0 (got -1)');
      expect(text).toContain('.currency: must be a currency');
      expect(text).toContain('.models["c"]: must be an object (got 5)');
    }
  });
});
