/// <reference lib="dom" />
/**
 * Live updates (`?live=1`) in headless Chromium, on both UIs that serve the
 * inspector's pages (inspector/live.ts, one home): the plane's inspector over
 * rows a "laptop" store syncs through /v1/ingest, and `waymark ui` over a
 * SQLite store the test writes to.
 * - On a paused run's page with live on, a manager types half a comment; two
 *   batches of new rows arrive and show in the timeline in place (no reload,
 *   said in the page's polite status); the half comment, the focus and the
 *   caret are intact (on the plane a half-typed cancel reason too); the
 *   markup a new row carries is inert text; typing on and approving records
 *   the decision with the whole comment.
 * - A live page has no meta refresh anywhere and passes the accessibility
 *   checks (test/helpers/a11y.ts: axe's meta-refresh rule among them); it fits
 *   a phone (390 px).
 * - Without JavaScript a live page still works: it says it does not update,
 *   and the on/off toggle is a link.
 * - The run list with live on: a run started meanwhile shows in place, a
 *   half-typed filter stays.
 * Screenshots go to test-output/ui-screenshots/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { type LocalUi, serveLocalUi } from '../../client/ui/serve.js';
import { accessibilityProblems } from '../helpers/a11y.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pause, step, takeEvents } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-live-ui-');
const HALF = 'Approved: the customer';
const XSS = `<script>window.__xss=1</script> "><img src=x onerror="window.__xss=2">`;
/** A model call after the pause, its message carrying markup (shown in the state, swapped in live: inert text). */
const later = (id: string, i: number) =>
  step(id, i, { state: { messages: [{ role: 'user', content: `m${i} ${XSS}` }], turn: i } });
const REST = ' called back, the refund is fine';

let launching: Promise<Browser>;
let browser: Browser;
beforeAll(() => {
  mkdirSync(SHOTS, { recursive: true });
  launching = launchChromium();
  // a failed launch fails the describes that await it, not the process
  launching.catch(() => {});
});
afterAll(async () => {
  await (await launching?.catch(() => null))?.close();
  tmp.cleanup();
});

/** Three model calls, then a pause, in `store`; the pause's checkpoint id. */
async function pausedRun(store: SqliteCheckpointer, id: string): Promise<string> {
  for (let i = 0; i < 3; i++) await store.put(step(id, i));
  const context = { amount: 9000 };
  const row = await store.recordInterrupt(
    { ...pause(id, 3), interruptReason: 'manager_approval', interruptContext: context },
    { reason: 'manager_approval', context },
  );
  return row.checkpoint.id;
}

/** How many times the page's main frame navigated (a reload included) since it was called. */
function navigations(page: Page): () => number {
  let n = 0;
  page.on('framenavigated', (f) => {
    if (f === page.mainFrame()) n++;
  });
  return () => n;
}

/**
 * On `page`, at the run's live page: half a comment typed, two batches of rows arriving (`more(n)` writes n rows
 * after the pause at seq 3 and makes them reach the UI), then the rest typed and the decision approved. Returns
 * once the page is back on the run after the post.
 */
async function approveWhileRowsArrive(
  page: Page,
  url: string,
  id: string,
  more: (n: number) => Promise<void>,
  o: { reason?: string } = {},
): Promise<void> {
  await page.goto(`${url}/runs/${id}?live=1`);
  const navigated = navigations(page);
  await page.evaluate(() => {
    (window as unknown as { __samePage: boolean }).__samePage = true;
  });
  expect(await page.locator('ol.timeline li').count()).toBe(4);
  if (o.reason !== undefined) await page.getByRole('textbox', { name: /Reason/ }).fill(o.reason);
  const comment = page.locator('textarea[name=comment]');
  await comment.click();
  await page.keyboard.type(HALF);

  // two updates: the rows show in the timeline where the page is, each said in the status
  await more(1);
  await page.waitForSelector('ol.timeline li#seq-4', { timeout: 20_000 });
  await more(2);
  await page.waitForSelector('ol.timeline li#seq-6', { timeout: 20_000 });

  // the page was never reloaded: what was typed, the focus and the caret are as they were
  const kept = await page.evaluate(() => {
    const a = document.activeElement as HTMLTextAreaElement | null;
    return {
      samePage: (window as unknown as { __samePage?: boolean }).__samePage ?? false,
      comment: document.querySelector<HTMLTextAreaElement>('textarea[name=comment]')!.value,
      reason: document.querySelector<HTMLTextAreaElement>('textarea[name=reason]')?.value ?? null,
      focused: a?.getAttribute('name') ?? a?.tagName ?? null,
      caret: a && 'selectionStart' in a ? [a.selectionStart, a.selectionEnd] : null,
    };
  });
  expect(kept).toEqual({
    samePage: true,
    comment: HALF,
    reason: o.reason ?? null,
    focused: 'comment',
    caret: [HALF.length, HALF.length],
  });
  expect(navigated()).toBe(0);
  expect(await page.textContent('main')).toMatch(/7 rows/);
  // the markup a new row carries arrived as text
  expect(await page.textContent('ol.conversation')).toContain(XSS);
  expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
  expect(await page.locator('img').count()).toBe(0);
  expect(await page.textContent('[data-testid=live-status]')).toMatch(/^Updated .*timeline/);
  // the new rows' times were rewritten into local time like the first rows'
  expect(await page.locator('#seq-6 time').textContent()).not.toMatch(/UTC$/);

  // typing goes on in the same field; the decision carries the whole comment
  await page.keyboard.type(REST);
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.waitForURL(new RegExp(`/runs/${id}#decisions-h$`));
}

/** A live page's static promises: no meta refresh in its markup or its DOM, the live script, the accessibility checks. */
async function expectLivePageSound(page: Page, url: string, id: string): Promise<void> {
  const html = await (await page.request.get(`${url}/runs/${id}?live=1`)).text();
  expect(html).not.toMatch(/http-equiv\s*=\s*["']?refresh/i);
  await page.goto(`${url}/runs/${id}?live=1`);
  expect(await page.locator('meta[http-equiv]').count()).toBe(0);
  expect(await page.locator('script[src="/ui/live.js"]').count()).toBe(1);
  expect(await page.locator('[data-testid=live-status][role=status][aria-live=polite]').count()).toBe(1);
  expect(await accessibilityProblems(page)).toEqual([]);
  // the toggle is a link both ways
  await page.getByRole('link', { name: 'stop', exact: true }).click();
  await page.waitForURL(`${url}/runs/${id}`);
  expect(await page.locator('script[src="/ui/live.js"]').count()).toBe(0);
  await page.getByRole('link', { name: 'Show changes live' }).click();
  await page.waitForURL(`${url}/runs/${id}?live=1`);
}

/** With JavaScript off a live page reads and posts as any other, says it does not update, and its toggle works. */
async function expectWorksWithoutScript(
  url: string,
  id: string,
  cookies: Parameters<BrowserContext['addCookies']>[0] = [],
): Promise<void> {
  const ctx = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
  if (cookies.length) await ctx.addCookies(cookies);
  const page = await ctx.newPage();
  await page.goto(`${url}/runs/${id}?live=1`);
  expect(await page.textContent('[data-testid=live]')).toContain('live updates need JavaScript');
  expect(await page.locator('ol.timeline li').count()).toBeGreaterThan(0);
  await page.getByRole('link', { name: 'stop', exact: true }).click();
  await page.waitForURL(`${url}/runs/${id}`);
  expect(await page.textContent('[data-testid=live]')).toBe('Show changes live');
  await ctx.close();
}

describe('live updates on the plane inspector', () => {
  let plane: TestPlane;
  let laptop: SqliteCheckpointer;
  const keys: Record<string, string> = {};

  /** Everything the laptop has not sent, to the plane. */
  const sync = async () => {
    const r = await call(`${plane.url}/v1/ingest`, {
      key: keys.ingest,
      json: { protocol: 1, writerId: laptop.writerId, rows: await takeEvents(laptop) },
    });
    expect([r.status, r.body.rejected]).toEqual([200, 0]);
  };

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    keys.ingest = await plane.key('acme', ['ingest']);
    keys.reader = await plane.key('acme', ['read']);
    // a manager who may approve and cancel: the live page shows both forms
    keys.manager = await plane.key('acme', ['approve', 'cancel']);
    laptop = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-a' });
    browser = await launching;
  });
  afterAll(async () => {
    await laptop?.close();
    await plane?.close();
  });

  it('a half-typed comment survives two updates of a live page; the decision carries the whole comment; no meta refresh; accessible; fits 390 px; works without JavaScript', async () => {
    const id = 'live-plane';
    const checkpointId = await pausedRun(laptop, id);
    await sync();
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(`${plane.url}/login?next=${encodeURIComponent('/')}`);
    await page.fill('input[name=key]', keys.manager);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}/`);

    let next = 4;
    await approveWhileRowsArrive(
      page,
      plane.url,
      id,
      async (n) => {
        for (let i = 0; i < n; i++) await laptop.put(later(id, next++));
        await sync();
      },
      { reason: 'half a reason' },
    );
    const d = (await call(`${plane.url}/v1/executions/${id}`, { key: keys.reader })).body;
    expect(d.pause.decision).toMatchObject({
      checkpointId,
      approved: true,
      metadata: { comment: HALF + REST },
    });
    expect(d.execution.status).toBe('running');

    await expectLivePageSound(page, plane.url, id);
    await page.screenshot({ path: join(SHOTS, 'live-run.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'live-run-narrow.png'), fullPage: true });
    await expectWorksWithoutScript(plane.url, id, await ctx.cookies());
    await ctx.close();
  });
});

describe('live updates in the local UI (waymark ui)', () => {
  let store: SqliteCheckpointer;
  let ui: LocalUi;

  beforeAll(async () => {
    store = new SqliteCheckpointer({ path: tmp.file('live.db') });
    ui = await serveLocalUi(store, { user: 'alice' });
    browser = await launching;
  });
  afterAll(async () => {
    await ui?.close();
    await store?.close();
  });

  it('a half-typed comment survives two updates of a live page; the decision carries the whole comment; no meta refresh; accessible; works without JavaScript; the run list updates in place too', async () => {
    const id = 'live-local';
    const checkpointId = await pausedRun(store, id);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    let next = 4;
    await approveWhileRowsArrive(page, ui.url, id, async (n) => {
      for (let i = 0; i < n; i++) await store.put(later(id, next++));
    });
    expect(await store.getDecision(id, checkpointId)).toMatchObject({
      approved: true,
      decidedBy: 'alice',
      metadata: { comment: HALF + REST },
    });
    await expectLivePageSound(page, ui.url, id);
    await expectWorksWithoutScript(ui.url, id);

    // the run list too: a run started meanwhile shows in place, a half-typed filter stays
    await page.goto(`${ui.url}/?live=1`);
    const navigated = navigations(page);
    await page.getByRole('textbox', { name: 'Writer' }).click();
    await page.keyboard.type('laptop');
    await store.put(step('live-later', 0));
    await page.waitForSelector('a[href="/runs/live-later"]', { timeout: 20_000 });
    expect(
      await page.evaluate(() => [
        document.activeElement?.getAttribute('name'),
        document.activeElement && (document.activeElement as HTMLInputElement).value,
      ]),
    ).toEqual(['writer', 'laptop']);
    expect(navigated()).toBe(0);
    expect(await page.textContent('[data-testid=live-status]')).toMatch(/^Updated .*runs/);
    expect(await accessibilityProblems(page)).toEqual([]);
    await ctx.close();
  });
});
