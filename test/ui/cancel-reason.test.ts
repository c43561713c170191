/// <reference lib="dom" />
/**
 * A cancel's reason and the pause it closed, on the pages of both UIs, in
 * headless Chromium at 1280 and 390 px: the plane's inspector (its runs a
 * "laptop" store synced through /v1/ingest) and `waymark ui` over that laptop
 * store (`serveLocalUi` in this process, on 127.0.0.1 port 0):
 * - a reason given where a cancel is made (the plane's cancel endpoint, as
 *   `waymark cancel --plane` and `Replica.cancel` call it; the laptop's own
 *   `store.cancel`, as `waymark cancel` without a plane, synced) shows on the
 *   run's page and beside its status in the run list, as text: markup is not
 *   run, a character that reorders text is shown as its escape, as the CLI
 *   prints it;
 * - a run cancelled while paused shows that pause, closed by the cancel and
 *   not answered, also when a writer had claimed it and its resume never
 *   reached the plane.
 * Screenshots go to test-output/ui-screenshots/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { cancelThroughPlane } from '../../client/replica/cancel.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pause, step, takeEvents } from '../helpers/rows.js';

/** A reason as a person may type it: markup, a right-to-left override (`gnp.exe` would read `exe.png`), two lines from a text box. */
const REASON = 'withdrew <script>window.__xss=1</script> \u202egnp.exe\r\nticket 42';
/** How a page shows it: the markup as text, the override as its escape, the line break kept. */
const SHOWN = 'withdrew <script>window.__xss=1</script> \\u202egnp.exe\nticket 42';
const LAPTOP_REASON = 'duplicate <b>refund</b>';

/** The page has no horizontal overflow at its current width. */
const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

describe("a cancel's reason and the pause it closed, on both UIs", () => {
  let plane: TestPlane;
  let ui: LocalUi;
  let browser: Browser;
  let launching: Promise<Browser>;
  const keys: Record<string, string> = {};
  let laptop: SqliteCheckpointer;
  const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  const sync = async () => {
    const r = await call(`${plane.url}/v1/ingest`, {
      key: keys.ingest,
      json: { protocol: 1, writerId: laptop.writerId, rows: await takeEvents(laptop) },
    });
    expect([r.status, r.body.rejected]).toEqual([200, 0]);
  };
  /** A run on the laptop, synced: two model calls, then paused if asked. */
  const run = async (id: string, paused = false) => {
    for (let i = 0; i < 2; i++) await laptop.put(step(id, i));
    const context = { amount: 9000 };
    if (paused)
      await laptop.recordInterrupt(
        { ...pause(id, 2), interruptReason: 'manager_approval', interruptContext: context },
        { reason: 'manager_approval', context },
      );
    await sync();
    return id;
  };
  /** A browser page at `width`, signed in to the plane with a read and cancel key when `signIn` says so. */
  const open = async (width: number, signIn: boolean) => {
    const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage();
    if (signIn) {
      await page.goto(`${plane.url}/login`);
      await page.fill('input[name=key]', keys.canceller);
      await page.click('button[type=submit]');
      await page.waitForURL(`${plane.url}/`);
    }
    return page;
  };
  /** The reason shown on a run's page, and that nothing in it ran as markup. */
  const reasonOnPage = async (page: Page) => {
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('main script, [data-testid=cancelled] b').count()).toBe(0);
    return page.textContent('[data-testid=cancelled] [data-testid=cancel-reason]');
  };
  /** The reason beside a run's status in the run list: its text and its title (the whole reason). */
  const reasonInList = async (page: Page, id: string) => {
    const cell = page.locator(`tr:has(a[href="/runs/${id}"]) [data-testid=cancel-reason]`);
    expect(await cell.isVisible(), id).toBe(true);
    return { text: await cell.textContent(), title: await cell.getAttribute('title') };
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    launching = launchChromium();
    launching.catch(() => {});
    plane = await startTestPlane('pglite');
    keys.ingest = await plane.key('acme', ['ingest']);
    keys.canceller = await plane.key('acme', ['read', 'cancel']);
    laptop = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-a' });

    // cancelled at the plane, as `waymark cancel --plane` does (the laptop takes the plane's marker)
    await run('at-plane');
    const atPlane = await cancelThroughPlane(laptop, 'at-plane', {
      url: plane.url,
      apiKey: keys.canceller,
      reason: REASON,
    });
    expect(atPlane.local).toBe('restored');
    // cancelled on the laptop while paused, as `waymark cancel` without a plane does; its marker synced
    await run('on-laptop', true);
    await laptop.cancel('on-laptop', { reason: LAPTOP_REASON });
    await sync();
    // paused, claimed at the plane by another writer (to resume it), then cancelled there before any row of the resume came
    await run('claimed', true);
    const checkpointId = (await call(`${plane.url}/v1/executions/claimed`, { key: keys.canceller })).body.pause.pending
      .checkpointId;
    const claim = await call(`${plane.url}/v1/executions/claimed/claim`, {
      key: keys.ingest,
      json: { checkpointId, writerId: 'laptop-b' },
    });
    expect(claim.status).toBe(200);
    const cancel = await call(`${plane.url}/v1/executions/claimed/cancel`, { key: keys.canceller, json: {} });
    expect(cancel.body).toMatchObject({ closedPause: checkpointId });

    ui = await serveLocalUi(laptop, { port: 0 });
    browser = await launching;
  });
  afterAll(async () => {
    await (await launching?.catch(() => null))?.close();
    await ui?.close();
    await laptop?.close();
    await plane?.close();
  });

  for (const width of [1280, 390]) {
    it(`the plane's inspector at ${width} px: the reason on the run page and in the run list, as text`, async () => {
      const page = await open(width, true);
      await page.goto(`${plane.url}/runs/at-plane`);
      expect(await page.textContent('h1')).toContain('cancelled');
      expect(await reasonOnPage(page)).toBe(SHOWN);
      expect(await fitsWidth(page)).toBe(true);
      await shot(page, `cancel-reason-plane-${width}`);
      await page.goto(`${plane.url}/runs/on-laptop`);
      expect(await reasonOnPage(page)).toBe(LAPTOP_REASON);
      expect(await page.textContent('[data-testid=cancelled]')).toContain('Cancelled by writer key (laptop-a)');

      for (const list of ['/', '/?status=cancelled']) {
        await page.goto(`${plane.url}${list}`);
        expect(await reasonInList(page, 'at-plane')).toEqual({ text: SHOWN, title: SHOWN });
        expect(await reasonInList(page, 'on-laptop')).toEqual({ text: LAPTOP_REASON, title: LAPTOP_REASON });
        expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
        expect(await fitsWidth(page)).toBe(true);
      }
      // a cancel with no reason says nothing beside its status
      expect(await page.locator('tr:has(a[href="/runs/claimed"]) [data-testid=cancel-reason]').count()).toBe(0);
      await shot(page, `cancel-reason-plane-list-${width}`);
      await page.context().close();
    });

    it(`the plane's inspector at ${width} px: a run cancelled while paused shows that pause, closed by the cancel, also when a writer had claimed it`, async () => {
      const page = await open(width, true);
      for (const id of ['on-laptop', 'claimed']) {
        await page.goto(`${plane.url}/runs/${id}`);
        const closed = page.locator('[data-testid=cancelled] [data-testid=cancel-closed-pause]');
        expect(await closed.isVisible(), id).toBe(true);
        const text = await closed.textContent();
        expect(text, id).toContain('manager_approval');
        expect(text, id).toContain('closed by the cancel, not answered');
        expect(await closed.locator('pre').textContent(), id).toContain('9000');
        expect(await fitsWidth(page)).toBe(true);
      }
      // the claim is said, and that its resume never came
      expect(await page.textContent('[data-testid=cancel-closed-pause]')).toContain(
        'Writer laptop-b had claimed it to resume it, but no row of that resume reached this plane before the cancel',
      );
      expect(await page.textContent('[data-testid=cancel-reason-shown]')).toContain('none was given');
      await shot(page, `cancel-closed-claimed-pause-${width}`);
      await page.context().close();
    });

    it(`waymark ui at ${width} px: the reason on the run page and in the run list, as text`, async () => {
      const page = await open(width, false);
      await page.goto(`${ui.url}/runs/at-plane`);
      expect(await page.textContent('h1')).toContain('cancelled');
      expect(await reasonOnPage(page)).toBe(SHOWN);
      expect(await page.textContent('[data-testid=cancelled]')).toContain('Cancelled by writer plane');
      expect(await fitsWidth(page)).toBe(true);
      await shot(page, `cancel-reason-local-${width}`);
      await page.goto(`${ui.url}/runs/on-laptop`);
      expect(await reasonOnPage(page)).toBe(LAPTOP_REASON);
      // the pause it closed, in the page's pause section
      expect(await page.textContent('section[aria-labelledby=pause-h]')).toContain(
        'closed by a cancel of the run, not answered',
      );
      await page.goto(`${ui.url}/?status=cancelled`);
      expect(await reasonInList(page, 'at-plane')).toEqual({ text: SHOWN, title: SHOWN });
      expect(await reasonInList(page, 'on-laptop')).toEqual({ text: LAPTOP_REASON, title: LAPTOP_REASON });
      expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
      expect(await fitsWidth(page)).toBe(true);
      await shot(page, `cancel-reason-local-list-${width}`);
      await page.context().close();
    });
  }
});
