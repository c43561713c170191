/// <reference lib="dom" />
/**
 * A LangGraph thread waiting at `interrupt()`, in both inspectors, in
 * headless Chromium: a real graph (a model node, a tool node, an approval
 * node that interrupts) on WaymarkSaver over a SQLite file connected to a
 * plane. The local UI over the file and the plane's inspector both show the
 * thread paused (list, status filter, run page) with the interrupt's value
 * where a pause is shown and no decision form (the graph answers it), none of
 * the saver's pending writes among the idempotency entries, and the
 * conversation as who said what; once resumed it is no longer paused. At 1280
 * and 390 px.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { z } from 'zod';
import { Command, END, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { tool } from '@langchain/core/tools';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { connectPlane } from '../../client/index.js';
import { WaymarkSaver } from '../../client/langgraph/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-ui-langgraph-');
const THREAD = 'refund-thread-42';
const QUESTION = 'Refund order 42 for $30?';
let store: SqliteCheckpointer;
let saver: WaymarkSaver;
let plane: TestPlane;
let local: LocalUi;
let browser: Browser;
let readKey = '';
let ingestKey = '';

const lookupOrder = tool(async ({ id }: { id: string }) => `order ${id}: $30, delivered`, {
  name: 'lookup_order',
  description: 'An order by id',
  schema: z.object({ id: z.string() }),
});

function refundGraph(checkpointer: WaymarkSaver) {
  return (
    new StateGraph(MessagesAnnotation)
      // content as parts, as many chat models answer, and a tool call
      .addNode('agent', async () => ({
        messages: [
          new AIMessage({
            content: [{ type: 'text', text: 'Let me look up order 42.' }],
            tool_calls: [{ id: 'call_1', name: 'lookup_order', args: { id: '42' } }],
          }),
        ],
      }))
      .addNode('tools', new ToolNode([lookupOrder]))
      .addNode('approve', async () => {
        const answer = interrupt({ question: QUESTION, amount: 30 }) as { approved: boolean };
        return { messages: [new AIMessage(answer.approved ? 'Refunded order 42.' : 'Refund of order 42 declined.')] };
      })
      .addEdge(START, 'agent')
      .addEdge('agent', 'tools')
      .addEdge('tools', 'approve')
      .addEdge('approve', END)
      .compile({ checkpointer })
  );
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const launching = launchChromium();
  launching.catch(() => {});
  plane = await startTestPlane('pglite');
  ingestKey = await plane.key('acme', ['ingest']);
  readKey = await plane.key('acme', ['read']);
  store = new SqliteCheckpointer({ path: tmp.file('graph.db'), writerId: 'laptop' });
  saver = new WaymarkSaver(store);
  await saver.setup();
  const result = await saver.exclusive({ configurable: { thread_id: THREAD } }, (config) =>
    refundGraph(saver).invoke({ messages: [new HumanMessage('Please refund my order 42')] }, config),
  );
  const interrupts = (result as { __interrupt__?: { value: unknown }[] }).__interrupt__;
  expect(interrupts?.map((i) => i.value)).toEqual([{ question: QUESTION, amount: 30 }]);
  await push();
  local = await serveLocalUi(store);
  browser = await launching;
});
afterAll(async () => {
  await browser?.close();
  await local?.close();
  await store?.close();
  await plane?.close();
  tmp.cleanup();
});

/** The store's rows and entries so far, on the plane. */
async function push() {
  const replica = connectPlane(store, { url: plane.url, apiKey: ingestKey, pollMs: 0 });
  expect(await replica.flush({ timeoutMs: 20_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
  await replica.stop();
}

async function planePage(width: number): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width, height: 860 } })).newPage();
  await page.goto(`${plane.url}/login`);
  await page.fill('input[name=key]', readKey);
  await page.click('button[type=submit]');
  await page.waitForURL(`${plane.url}/`);
  return page;
}

async function localPage(width: number): Promise<Page> {
  return (await browser.newContext({ viewport: { width, height: 860 } })).newPage();
}

/** What a person reading the page sees of the thread, on `page` at `base`. */
async function checkPaused(page: Page, base: string, name: string) {
  const row = page.locator('tbody tr', { has: page.locator(`a[href="/runs/${THREAD}"]`) });
  for (const query of ['', '?status=paused']) {
    await page.goto(`${base}/${query}`);
    expect(await row.locator('.badge').textContent()).toBe('paused');
  }
  await page.goto(`${base}/?status=running`);
  expect(await row.count()).toBe(0);

  await page.goto(`${base}/runs/${THREAD}`);
  expect(await page.locator('h1 .badge').textContent()).toBe('paused');
  expect(await page.textContent('#pause-h')).toMatch(/Pause: interrupt\s*paused/);
  expect(JSON.parse((await page.textContent('[data-testid=interrupt-value]'))!)).toEqual({
    question: QUESTION,
    amount: 30,
  });
  // the graph answers an interrupt when it is invoked again: no decision form that could not apply
  expect(await page.locator('[data-testid=decision-form]').count()).toBe(0);
  expect(await page.textContent('section[aria-labelledby=idem-h]')).toMatch(/Idempotency entries\s*None\./);
  expect(await page.textContent('section[aria-labelledby=idem-h]')).not.toContain('__interrupt__');

  // the state's conversation (the diff above it shows the messages the last row added, as a conversation too)
  const messages = page.locator('[data-live=state] ol.conversation > li');
  const said = await messages.evaluateAll((lis) =>
    lis.map((li) => [
      li.querySelector('.msg-role')?.textContent?.trim(),
      [...li.querySelectorAll(':scope > pre.msg-text')].map((p) => p.textContent).join(' '),
      [...li.querySelectorAll('.tool-call strong')].map((s) => s.textContent).join(' '),
    ]),
  );
  expect(said).toEqual([
    ['user', 'Please refund my order 42', ''],
    ['assistant', 'Let me look up order 42.', 'lookup_order'],
    ['tool result lookup_order', 'order 42: $30, delivered', ''],
  ]);
  expect(await page.locator('[data-live=state] .msg-user').count()).toBe(1);
  expect(await page.locator('[data-live=state] .msg-assistant').count()).toBe(1);
  expect(await page.locator('[data-live=state] .msg-tool').count()).toBe(1);
  // nothing runs off a phone's screen
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  await page.screenshot({ path: join(SHOTS, `langgraph-${name}.png`), fullPage: true });
}

describe('a LangGraph thread waiting at interrupt()', () => {
  for (const width of [1280, 390]) {
    it(`local UI at ${width} px: paused, the interrupt shown as its pause, no pending write as an idempotency entry, the conversation by role`, async () => {
      const page = await localPage(width);
      await checkPaused(page, local.url, `local-${width}`);
      await page.context().close();
    });

    it(`plane inspector at ${width} px: the same, from the rows and entries the store sent`, async () => {
      const page = await planePage(width);
      await checkPaused(page, plane.url, `plane-${width}`);
      await page.context().close();
    });
  }

  it('once resumed, the thread is paused in neither inspector', async () => {
    const done = await saver.exclusive({ configurable: { thread_id: THREAD } }, (config) =>
      refundGraph(saver).invoke(new Command({ resume: { approved: false } }), config),
    );
    expect(done.messages.at(-1)?.content).toBe('Refund of order 42 declined.');
    await push();
    for (const [page, base] of [
      [await localPage(1280), local.url],
      [await planePage(1280), plane.url],
    ] as const) {
      await page.goto(`${base}/runs/${THREAD}`);
      expect(await page.locator('h1 .badge').textContent()).not.toBe('paused');
      expect(await page.locator('#pause-h').count()).toBe(0);
      expect(await page.locator('ol.conversation > li .msg-role').last().textContent()).toBe('assistant');
      expect(await page.locator('ol.conversation > li pre.msg-text').last().textContent()).toBe(
        'Refund of order 42 declined.',
      );
      await page.context().close();
    }
  });
});
