/// <reference lib="dom" />
/**
 * A long run's page on both UIs that serve it (`waymark ui` over a SQLite store, the plane's inspector over the
 * same rows synced to PGlite), in headless Chromium at 1280 and 390 px. The run is 500 rows written through the
 * real runtime (bench/lib/long-run.ts: model calls and tool calls of a few hundred characters, a delegated
 * worker, a pause, idempotent charges).
 * - Every page of it is at most 100 kB of HTML: the timeline is a page of rows, and the run page carries the
 *   newest messages of the state, the whole state being on its own page (paged too).
 * - The timeline is grouped by turn (older turns folded), filtered by step and by agent path, paged from its
 *   newest rows back, and "go to seq" lands on the row.
 * - A link to a row from elsewhere lands on it, whatever page of the timeline it is on: the diff's, a hole's on
 *   the plane, a fork's to the row it was forked at, and a bare `#seq-N` of the newest row.
 * Screenshots go to test-output/ui-screenshots/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { writeLongRun } from '../../bench/lib/long-run.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { type LocalUi, serveLocalUi } from '../../client/ui/serve.js';
import { accessibilityProblems } from '../helpers/a11y.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { takeEvents } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-long-run-ui-');
/** The row of the run that is left out of what the plane receives of `gappy`: a hole there. */
const GAP = 120;
let launching: Promise<Browser>;
let browser: Browser;
let store: SqliteCheckpointer;
let ui: LocalUi;
let plane: TestPlane;
let cookie = '';
let forkedAt = 0;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  launching = launchChromium();
  launching.catch(() => {});
  store = new SqliteCheckpointer({ path: tmp.file('laptop.db'), writerId: 'laptop' });
  const { agent } = await writeLongRun(store, 'long-run', 500);
  // a fork from a model call of the supervisor well before the newest page of the timeline
  const at = (await store.list('long-run', { afterSeq: 119, step: 'llm_call' })).find(
    (r) => r.agentPath === 'supervisor:desk',
  )!;
  forkedAt = at.seq;
  await agent.fork('long-run', { checkpointId: at.id, executionId: 'long-fork' });
  await writeLongRun(store, 'gappy', 199);
  ui = await serveLocalUi(store, { port: 0 });
  plane = await startTestPlane('pglite');
  const ingest = await plane.key('acme', ['ingest']);
  // every row to the plane but row GAP of `gappy`, which never arrives: a hole in the plane's copy of it
  const events = (await takeEvents(store)).filter(
    (e) => !(e.kind === 'checkpoint' && e.row.executionId === 'gappy' && e.row.seq === GAP),
  );
  for (let i = 0; i < events.length; i += 200) {
    const r = await call(`${plane.url}/v1/ingest`, {
      key: ingest,
      json: { protocol: 1, writerId: store.writerId, rows: events.slice(i, i + 200) },
    });
    expect([r.status, r.body.rejected]).toEqual([200, 0]);
  }
  const login = await fetch(`${plane.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ key: await plane.key('acme', ['read']), next: '/' }),
  });
  cookie = login.headers.get('set-cookie')!.split(';')[0];
  browser = await launching;
}, 180_000);
afterAll(async () => {
  await (await launching?.catch(() => null))?.close();
  await ui?.close();
  await plane?.close();
  await store?.close();
  tmp.cleanup();
});

const UIS = [
  { name: 'waymark ui', url: () => ui.url, cookie: () => '' },
  { name: 'plane inspector', url: () => plane.url, cookie: () => cookie },
];
type Ui = (typeof UIS)[number];

/** A new page of `u` at `width` px (signed in on the plane). */
async function open(u: Ui, width: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  if (u.cookie()) {
    const [name, value] = u.cookie().split('=');
    await context.addCookies([{ name, value, url: u.url() }]);
  }
  return context.newPage();
}

/** Whether the element `selector` is on screen: shown, and its top within the window. */
const onScreen = (page: Page, selector: string) =>
  page.locator(selector).evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.top >= -1 && r.top < window.innerHeight;
  });
/** The seqs of the rows the timeline shows. */
const seqs = (page: Page) =>
  page.locator('ol.timeline li[id^="seq-"]').evaluateAll((lis) => lis.map((li) => Number(li.id.slice(4))));

describe('a 500-row run', () => {
  it('every page of it is at most 100 kB of HTML on both UIs: the timeline a page of rows, the state a tail of it', async () => {
    const paths = [
      '/runs/long-run',
      '/runs/long-run?live=1',
      '/runs/long-run?from=0',
      '/runs/long-run?seq=250',
      '/runs/long-run?step=tool_call',
      '/runs/long-run?agent=supervisor:desk/agent:refund-bot',
      '/runs/long-run?a=0&b=499',
      '/runs/long-run/state?seq=499',
      '/runs/long-run/state?seq=499&from=0',
    ];
    for (const u of UIS) {
      const sizes: Record<string, number> = {};
      for (const path of paths) {
        const res = await fetch(`${u.url()}${path}`, { headers: u.cookie() ? { cookie: u.cookie() } : {} });
        const html = await res.text();
        sizes[path] = Buffer.byteLength(html);
        expect(sizes[path], `${u.name} ${path}`).toBeLessThanOrEqual(100_000);
        expect(res.status, `${u.name} ${path}`).toBe(200);
        if (path === '/runs/long-run') expect(html).toContain('500 rows');
      }
      console.log(`[long run] ${u.name}: HTML bytes ${JSON.stringify(sizes)}`);
    }
  });

  for (const width of [1280, 390])
    for (const u of UIS)
      it(`${u.name} at ${width} px: turns fold, the newest open; filters by step and agent path; pages back and on; go to seq`, async () => {
        const page = await open(u, width);
        await page.goto(`${u.url()}/runs/long-run`);
        // the newest rows, by turn: the newest turns open, the older ones folded to a line
        expect(await page.textContent('[data-testid=timeline-span]')).toContain('#450–#499');
        expect(await seqs(page)).toEqual(Array.from({ length: 50 }, (_, i) => 450 + i));
        const turns = page.locator('details.turn');
        const opened = await turns.evaluateAll((ds) => ds.map((d) => (d as HTMLDetailsElement).open));
        expect(opened.length).toBeGreaterThan(10);
        expect(opened.slice(-2)).toEqual([true, true]);
        expect(opened.filter((o) => !o).length).toBeGreaterThanOrEqual(opened.length - 3);
        expect(await page.locator('#seq-499').isVisible()).toBe(true);
        expect(await page.locator('#seq-450').isVisible()).toBe(false);
        await turns.first().locator('summary').click();
        expect(await page.locator('#seq-450').isVisible()).toBe(true);
        expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(
          1,
        );
        expect(await accessibilityProblems(page)).toEqual([]);
        await page.screenshot({ path: join(SHOTS, `long-run-${u.name.split(' ')[0]}-${width}.png`), fullPage: true });

        // back a page and on again, then the first rows
        await page.getByRole('link', { name: '← Earlier rows' }).first().click();
        await page.waitForURL(/before=450#timeline-h$/);
        expect(await seqs(page)).toEqual(Array.from({ length: 50 }, (_, i) => 400 + i));
        await page.getByRole('link', { name: 'Later rows →' }).first().click();
        await page.waitForURL(/from=450#timeline-h$/);
        expect(await seqs(page)).toEqual(Array.from({ length: 50 }, (_, i) => 450 + i));
        await page.getByRole('link', { name: 'First rows' }).first().click();
        expect(await seqs(page)).toEqual(Array.from({ length: 50 }, (_, i) => i));

        // by step: the run's one pause row
        await page.selectOption('select[name=step]', 'hitl_pause');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.waitForURL(/step=hitl_pause/);
        const pauses = page.locator('ol.timeline li[id^="seq-"]');
        expect(await pauses.count()).toBe(1);
        expect(await pauses.first().textContent()).toContain('hitl_pause');
        expect(await pauses.first().isVisible()).toBe(true);

        // by agent path: the worker's rows (and its tools'), paged, the filter kept
        await page.selectOption('select[name=step]', '');
        await page.fill('input[name=agent]', 'supervisor:desk/agent:refund-bot');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.waitForURL(/agent=supervisor/);
        const paths = () => page.locator('ol.timeline li[id^="seq-"] .row-meta > .mono:first-child').allTextContents();
        const worker = await paths();
        expect(worker.length).toBe(50);
        for (const p of worker) expect(p).toMatch(/^supervisor:desk\/agent:refund-bot(\/tool:refund)?$/);
        const newestWorker = await seqs(page);
        await page.getByRole('link', { name: '← Earlier rows' }).first().click();
        await page.waitForURL(/agent=supervisor.*before=|before=.*agent=supervisor/);
        const earlier = await seqs(page);
        expect(earlier.length).toBeGreaterThan(0);
        expect(Math.max(...earlier)).toBeLessThan(Math.min(...newestWorker));
        for (const p of await paths()) expect(p).toMatch(/^supervisor:desk\/agent:refund-bot/);
        await page.getByRole('link', { name: 'Every row' }).click();
        expect(new URL(page.url()).searchParams.get('agent')).toBeNull();

        // go to a seq: the rows around it, scrolled to it, its turn open
        await page.fill('input[name=jump]', '97');
        await page.getByRole('button', { name: 'Go', exact: true }).click();
        await page.waitForURL(/\?seq=97#seq-97$/);
        expect(await onScreen(page, '#seq-97')).toBe(true);
        expect(await page.locator(':target').getAttribute('id')).toBe('seq-97');
        const around = await seqs(page);
        expect(around).toContain(97);
        expect(Math.min(...around)).toBeLessThan(97);
        expect(Math.max(...around)).toBeGreaterThan(97);
        await page.context().close();
      });

  it("the run page shows the newest messages of the state; the state's own page has every one, 25 at a time", async () => {
    for (const u of UIS) {
      const page = await open(u, 1280);
      await page.goto(`${u.url()}/runs/long-run`);
      // the state's messages (the diff's are a conversation too, without anchors)
      const ids = () => page.locator('ol.conversation > li[id]').evaluateAll((lis) => lis.map((li) => li.id));
      const tail = await ids();
      expect(tail.length).toBeGreaterThan(0);
      expect(tail.length).toBeLessThanOrEqual(8);
      const n = Number(tail[tail.length - 1].slice(4)) + 1;
      expect(await page.textContent('[data-testid=state-earlier]')).toContain(`${n - tail.length} earlier messages`);
      await page.click('[data-testid=state-whole]');
      await page.waitForURL(/\/runs\/long-run\/state\?seq=499#messages$/);
      const msgs = (from: number, count: number) => Array.from({ length: count }, (_, i) => `msg-${from + i}`);
      expect(await ids()).toEqual(msgs(n - 25, 25));
      await page.getByRole('link', { name: '← Earlier messages' }).first().click();
      await page.waitForURL(/from=/);
      expect(await ids()).toEqual(msgs(n - 50, 25));
      await page.getByRole('link', { name: 'First messages' }).first().click();
      await page.waitForURL(/from=0#messages$/);
      expect(await ids()).toEqual(msgs(0, 25));
      expect(await page.textContent('main')).toContain('Other state fields');
      await page.context().close();
    }
  });

  for (const width of [1280, 390])
    it(`at ${width} px, a link to a row from elsewhere lands on it: the diff's, a hole's, a fork's, the newest row's`, async () => {
      for (const u of UIS) {
        const page = await open(u, width);
        // the diff names its two rows
        await page.goto(`${u.url()}/runs/long-run?a=100&b=101`);
        await page.locator('[data-testid=diff] a', { hasText: '#100' }).click();
        await page.waitForURL(/\?seq=100#seq-100$/);
        expect(await onScreen(page, '#seq-100'), `${u.name}: the diff's link`).toBe(true);
        // a fork names the row it was forked at
        await page.goto(`${u.url()}/runs/long-fork`);
        await page.click('p.fork a');
        await page.waitForURL(new RegExp(`/runs/long-run\\?seq=${forkedAt}#seq-${forkedAt}$`));
        expect(await onScreen(page, `#seq-${forkedAt}`), `${u.name}: the fork's link`).toBe(true);
        // a bare anchor of the newest row (the cancel card's link to its marker): the page opens at the newest rows
        await page.goto(`${u.url()}/runs/long-run#seq-499`);
        expect(await onScreen(page, '#seq-499'), `${u.name}: the newest row's anchor`).toBe(true);
        await page.context().close();
      }
      // the plane's copy of `gappy` misses a row: its holes list links to where it falls in the timeline
      const page = await open(UIS[1], width);
      await page.goto(`${plane.url}/runs/gappy`);
      await page.locator('[data-testid=holes] a', { hasText: `seq ${GAP}` }).click();
      await page.waitForURL(new RegExp(`\\?seq=${GAP}#seq-${GAP}$`));
      expect(await onScreen(page, `#seq-${GAP}`)).toBe(true);
      expect(await page.textContent(`#seq-${GAP}`)).toContain('not on this plane');
      expect(await seqs(page)).toContain(GAP + 1);
      await page.screenshot({ path: join(SHOTS, `long-run-hole-${width}.png`) });
      await page.context().close();
    });
});
