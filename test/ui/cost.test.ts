/// <reference lib="dom" />
/**
 * A run's cost, where model prices are configured, on the plane's inspector and in `waymark ui` (one store
 * replicated to a real plane, both over real HTTP, read in headless Chromium): the run list's Cost column and the
 * run page's cost, summed over the run's model calls at the configured prices per million tokens; "no price for
 * <model>" where a model with usage has none; no Cost column and no cost at all where no prices are configured.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import type { Json } from '../../shared/json.js';
import type { Prices } from '../../support/prices.js';
import { launchChromium } from '../helpers/browser.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-cost-');
const PRICES: Prices = { currency: 'USD', models: { 'gpt-big': { input: 2.5, output: 10 } } };
type Which = 'plane' | 'local';

const usage = (model: string, inputTokens: number, outputTokens: number): Json => [
  { model, agentPath: 'agent:t', turn: 0, inputTokens, outputTokens, cachedInputTokens: 0, finishReason: 'stop' },
];

describe('the cost of a run, from configured prices', () => {
  let plane: TestPlane;
  let store: SqliteCheckpointer;
  let priced: LocalUi;
  let unpriced: LocalUi;
  let browser: Browser;
  let readKey = '';
  const contexts: BrowserContext[] = [];

  async function open(w: Which): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, javaScriptEnabled: false });
    contexts.push(ctx);
    const page = await ctx.newPage();
    if (w === 'plane') {
      await page.goto(`${plane.url}/login?next=/`);
      await page.fill('input[name=key]', readKey);
      await page.click('button[type=submit]');
      await page.waitForURL(`${plane.url}/`);
    }
    return page;
  }

  beforeAll(async () => {
    const launching = launchChromium();
    launching.catch(() => {});
    plane = await startTestPlane('pglite', { prices: PRICES });
    store = new SqliteCheckpointer({ path: tmp.file('laptop.db'), writerId: 'laptop' });
    // priced: 1.2M input and 30k output over two calls = 3 + 0.3 dollars
    const a = await store.put({ ...step('run-priced', 0), nodeOutput: { usage: usage('gpt-big', 1_000_000, 10_000) } });
    await store.put({
      ...step('run-priced', 1),
      prevId: a.id,
      nodeOutput: { usage: usage('gpt-big', 200_000, 20_000) },
    });
    // a model no price names
    await store.put({ ...step('run-unpriced', 0), nodeOutput: { usage: usage('gpt-mystery', 5_000, 100) } });
    // no usage recorded
    await store.put(step('run-quiet', 0));
    const ingest = await plane.key('acme', ['ingest']);
    readKey = await plane.key('acme', ['read']);
    const replica = connectPlane(store, { url: plane.url, apiKey: ingest, pollMs: 0 });
    await replica.flush({ timeoutMs: 30_000 });
    await replica.stop();
    priced = await serveLocalUi(store, { port: 0, prices: PRICES });
    unpriced = await serveLocalUi(store, { port: 0 });
    browser = await launching;
  }, 120_000);
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await priced?.close();
    await unpriced?.close();
    await store?.close();
    await plane?.close();
    tmp.cleanup();
  });

  /** The run list's Cost cell of each run, by id. */
  const costs = async (page: Page) =>
    Object.fromEntries(
      await page.$$eval('tbody tr', (trs) =>
        trs.map((tr) => [
          tr.querySelector('a[data-row-link]')?.getAttribute('title') ?? '',
          tr.querySelector('[data-testid=cost]')?.textContent ?? null,
        ]),
      ),
    );

  for (const w of ['plane', 'local'] as const) {
    it(`${w}: the run list and the run page show each run's cost, or which model has no price${w === 'local' ? '; none without prices' : ''}`, async () => {
      const page = await open(w);
      const base = w === 'plane' ? plane.url : priced.url;
      await page.goto(`${base}/`);
      expect(await page.locator('th', { hasText: /^Cost$/ }).count()).toBe(1);
      expect(await costs(page)).toEqual({
        'run-priced': '$3.30',
        'run-unpriced': 'no price for gpt-mystery',
        'run-quiet': '—',
      });
      await page.goto(`${base}/runs/run-priced`);
      expect(await page.textContent('[data-testid=cost]')).toBe('$3.30');
      await page.goto(`${base}/runs/run-unpriced`);
      expect(await page.textContent('[data-testid=cost]')).toBe('no price for gpt-mystery');
      if (w === 'plane') return;
      // the same store served with no prices configured: no Cost column, no cost on a run page
      await page.goto(`${unpriced.url}/`);
      expect(await page.locator('th', { hasText: /^Cost$/ }).count()).toBe(0);
      expect(await page.locator('[data-testid=cost]').count()).toBe(0);
      await page.goto(`${unpriced.url}/runs/run-priced`);
      expect(await page.textContent('[data-testid=usage]')).toContain('1,200,000 in');
      expect(await page.locator('[data-testid=cost]').count()).toBe(0);
    });
  }
});
