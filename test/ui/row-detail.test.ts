/// <reference lib="dom" />
/**
 * A row of the run page's timeline opens to its own page, on the plane's inspector and in `waymark ui` (one store
 * written by the real runtime, replicated to a real plane, both over real HTTP, read in headless Chromium): a model
 * call shows the model's reply (its text and tool calls, arguments pretty-printed), its tokens and its latency; a
 * tool call its arguments and result pretty-printed, or the error the tool threw. The run page itself carries none
 * of it (the details are read when a row's page is asked for), and the state diff pretty-prints the same way.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, connectPlane, idempotent, ScriptedModel, tool, type Model } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import type { ScriptReply } from '../../client/models/scripted.js';

const tmp = scratchDir('waymark-row-detail-');
type Which = 'plane' | 'local';

/** The scripted model, reporting usage as a provider does: 1,200 input tokens (200 cached) and 34 output on each call. */
function metered(): Model {
  const scripted = new ScriptedModel(
    ({ turn }): ScriptReply =>
      turn === 0
        ? {
            content: 'Let me look order A-1 up.',
            toolCalls: [
              { name: 'lookup', arguments: { order: 'A-1', fields: ['status', 'eta'] } },
              { name: 'explode', arguments: { why: 'testing' } },
            ],
          }
        : { content: 'Order A-1 has shipped.' },
  );
  return {
    name: 'metered',
    async generate(request) {
      const reply = await scripted.generate(request);
      return {
        ...reply,
        usage: { model: 'gpt-test', inputTokens: 1200, outputTokens: 34, cachedInputTokens: 200 },
        finishReason: reply.toolCalls.length ? 'tool-calls' : 'stop',
      };
    },
  };
}

describe('a timeline row opens to what its call did, on the plane and in waymark ui', () => {
  let plane: TestPlane;
  let store: SqliteCheckpointer;
  let local: LocalUi;
  let browser: Browser;
  let readKey = '';
  const contexts: BrowserContext[] = [];
  const base = (w: Which) => (w === 'plane' ? plane.url : local.url);

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
    mkdirSync(SHOTS, { recursive: true });
    const launching = launchChromium();
    launching.catch(() => {});
    plane = await startTestPlane('pglite');
    store = new SqliteCheckpointer({ path: tmp.file('laptop.db'), writerId: 'laptop' });
    // two effects: one under the default key (its name and a hash of its arguments), one under a key it gives
    const reserve = idempotent(async function reserve(order: string, units: number) {
      return { order, units };
    });
    const ship = idempotent(async (order: string) => ({ shipped: order }), { key: (order) => `ship-${order}` });
    const lookup = tool({
      name: 'lookup',
      description: 'Look an order up',
      parameters: z.object({ order: z.string(), fields: z.array(z.string()) }),
      execute: async ({ order }) => {
        await reserve(order, 2);
        await ship(order);
        return { order, status: 'shipped', eta: { days: 2, carrier: 'post' } };
      },
    });
    const explode = tool({
      name: 'explode',
      description: 'Always fails',
      parameters: z.object({ why: z.string() }),
      execute: () => {
        throw new Error('the warehouse API answered 503');
      },
    });
    const agent = new Agent({ name: 'desk', model: metered(), tools: [lookup, explode], checkpointer: store });
    expect((await agent.run('Where is A-1?', { executionId: 'detail-run' })).status).toBe('completed');
    const rows = await store.list('detail-run');
    // the rows the pages are read from: the model call, its two tools, the next model call, the end
    expect(rows.map((r) => r.step)).toEqual(['llm_call', 'tool_call', 'tool_call', 'llm_call', 'run_end']);
    const ingest = await plane.key('acme', ['ingest']);
    readKey = await plane.key('acme', ['read']);
    const replica = connectPlane(store, { url: plane.url, apiKey: ingest, pollMs: 0 });
    await replica.flush({ timeoutMs: 30_000 });
    await replica.stop();
    local = await serveLocalUi(store, { port: 0 });
    browser = await launching;
  }, 120_000);
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await local?.close();
    await store?.close();
    await plane?.close();
    tmp.cleanup();
  });

  /** Open the run page and click row `seq`'s details link. */
  async function openRow(page: Page, w: Which, seq: number) {
    await page.goto(`${base(w)}/runs/detail-run`);
    await page.locator(`#seq-${seq} a[href$="/rows/${seq}"]`).click();
    await page.waitForURL(`${base(w)}/runs/detail-run/rows/${seq}`);
  }

  for (const w of ['plane', 'local'] as const) {
    it(`${w}: a model row shows the reply, its tool calls pretty-printed, its tokens and latency`, async () => {
      const page = await open(w);
      await openRow(page, w, 0);
      const reply = (await page.textContent('[data-testid=reply]'))!;
      expect(reply).toContain('Let me look order A-1 up.');
      expect(reply).toContain('calls lookup');
      expect(reply).toContain('{\n  "order": "A-1",\n  "fields": [\n    "status",\n    "eta"\n  ]\n}');
      expect(reply).toContain('calls explode');
      expect(await page.textContent('[data-testid=row-tokens]')).toBe(
        '1,200 input (200 cached) · 34 output · 1,234 total · model gpt-test · finished: tool-calls',
      );
      expect(await page.textContent('[data-testid=latency]')).toMatch(/^Latency: \d+ ms .*to #1,/);
      // a phone's width: nothing off-screen
      await page.setViewportSize({ width: 390, height: 800 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(
        1,
      );
      await page.screenshot({ path: join(SHOTS, `row-detail-${w}-model-390.png`), fullPage: true });
      // the final call's reply and usage, recorded on the run's end marker
      await openRow(page, w, 3);
      expect(await page.textContent('[data-testid=reply]')).toContain('Order A-1 has shipped.');
      expect(await page.textContent('[data-testid=row-tokens]')).toContain('1,234 total');
    });

    it(`${w}: a tool row shows its arguments and result pretty-printed, or the error it threw`, async () => {
      const page = await open(w);
      await openRow(page, w, 1);
      expect(await page.textContent('#tool-h')).toContain('lookup');
      expect(await page.textContent('[data-testid=tool-args]')).toBe(
        '{\n  "order": "A-1",\n  "fields": [\n    "status",\n    "eta"\n  ]\n}',
      );
      expect(await page.textContent('[data-testid=tool-result]')).toBe(
        '{\n  "order": "A-1",\n  "status": "shipped",\n  "eta": {\n    "days": 2,\n    "carrier": "post"\n  }\n}',
      );
      expect(await page.textContent('[data-testid=latency]')).toMatch(/^Latency: \d+ ms .*to #2,/);
      await openRow(page, w, 2);
      expect(await page.textContent('#tool-h')).toContain('explode');
      expect(await page.textContent('[data-testid=tool-args]')).toBe('{\n  "why": "testing"\n}');
      expect(await page.textContent('[data-testid=tool-error]')).toBe('the warehouse API answered 503');
      expect(await page.locator('[data-testid=tool-result]').count()).toBe(0);
    });

    it(`${w}: the idempotency entries read as the effect's name, or the key given, the whole key one click away`, async () => {
      const page = await open(w);
      await page.goto(`${base(w)}/runs/detail-run#idem-h`);
      const keys = page.locator('details.effect-key');
      expect(await keys.count()).toBe(2);
      const [reserveKey, shipKey] = (await store.listIdempotent('detail-run')).map((e) => e.key).sort();
      expect(reserveKey).toMatch(/^reserve:[0-9a-f]{64}$/);
      const summaries = await page.locator('details.effect-key summary').allTextContents();
      expect(summaries).toEqual([`reserve args #${reserveKey.slice(8, 16)}`, 'ship-A-1 (given)']);
      // folded: the whole key shows when its summary is clicked
      expect(await page.locator('details.effect-key code').first().isVisible()).toBe(false);
      await page.locator('details.effect-key summary').first().click();
      expect(await page.locator('details.effect-key code').first().textContent()).toBe(reserveKey);
      expect(await page.locator('details.effect-key code').first().isVisible()).toBe(true);
      expect(shipKey).toBe('ship-A-1');
    });

    it(`${w}: the run page carries no row's reply or result, and its diff pretty-prints them`, async () => {
      const page = await open(w);
      await page.goto(`${base(w)}/runs/detail-run?a=0&b=3#diff-h`);
      const diff = (await page.textContent('[data-testid=diff-added]'))!;
      expect(diff).toContain('tool result explode');
      // the tool's result, as the model got it (JSON text), pretty-printed
      expect(diff).toContain('{\n  "order": "A-1",\n  "status": "shipped"');
      await page.goto(`${base(w)}/runs/detail-run?a=0&b=0`);
      expect(await page.content()).not.toContain('the warehouse API answered 503');
    });
  }
});
