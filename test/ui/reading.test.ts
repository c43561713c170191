/// <reference lib="dom" />
/**
 * What a person sees, on the plane's inspector and in `waymark ui` (one
 * store, replicated to a real plane, both served over real HTTP, read in
 * headless Chromium): a dark scheme whose text, links, badges and code blocks
 * keep WCAG AA contrast; the nav's current page marked; keyboard shortcuts
 * that never fire while typing, listed on the page, and pages that work
 * without them; numbers with thousands separators; writers by name; the
 * pending approvals count in the nav; the run list filtered by agent and error
 * code in its read (full pages, cursor paging), with a count of the matches,
 * and its "Needs attention" view.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'drizzle-orm';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, ScriptedModel, connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { createKey } from '../../plane/auth.js';
import { runErrorOf } from '../../shared/errors.js';
import { uuidv7 } from '../../shared/ids.js';
import { accessibilityProblems } from '../helpers/a11y.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-reading-');
const WRITER = `laptop-${uuidv7()}`;
const KEY_NAME = 'refund-workers';
/** Runs of the agent the filter looks for, among three times as many of another (so a page filtered after it was read would come up short). */
const NEEDLES = 60;

type Which = 'plane' | 'local';

describe('what a person sees, on the plane and in waymark ui', () => {
  let plane: TestPlane;
  let store: SqliteCheckpointer;
  let local: LocalUi;
  let browser: Browser;
  let launching: Promise<Browser> | undefined;
  let readKey = '';
  let ingestKey = '';
  let errorCode = '';
  const contexts: BrowserContext[] = [];
  const base = (w: Which) => (w === 'plane' ? plane.url : local.url);

  /** A new page of `w` (the plane's signed in with a read key), at 1280 px unless told. */
  async function open(w: Which, o: { width?: number; js?: boolean } = {}): Promise<Page> {
    const ctx = await browser.newContext({
      viewport: { width: o.width ?? 1280, height: 860 },
      javaScriptEnabled: o.js ?? true,
    });
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

  /** The runs the list shows, by id. */
  const listed = (page: Page) =>
    page.$$eval('tbody tr a[data-row-link]', (as) => as.map((a) => a.getAttribute('title') ?? ''));

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    launching = launchChromium();
    launching.catch(() => {});
    plane = await startTestPlane('pglite');
    const k = await createKey(plane.database.db, {
      createProject: true,
      project: 'acme',
      scopes: ['ingest'],
      name: KEY_NAME,
    });
    ingestKey = k.key;
    readKey = await plane.key('acme', ['read']);

    const dbFile = tmp.file('laptop.db');
    store = new SqliteCheckpointer({ path: dbFile, writerId: WRITER });
    const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file('l.jsonl')) });
    expect((await agent.run(refundRequest('7', 20), { executionId: 'refund-small' })).status).toBe('completed');
    expect((await agent.run(refundRequest('1042', 50000), { executionId: 'refund-large' })).status).toBe('paused');
    expect((await agent.run(refundRequest('1043', 60000), { executionId: 'refund-old' })).status).toBe('paused');
    const broken = new Agent({
      name: 'broken-bot',
      model: new ScriptedModel(() => {
        throw new Error('upstream model returned 500');
      }),
      tools: [],
      checkpointer: store,
    });
    expect((await broken.run('hello', { executionId: 'broken-run' })).status).toBe('failed');
    errorCode = runErrorOf((await store.latest('broken-run'))!.nodeOutput).code;
    // a run whose runner's lease expired mid-run, without an end: stale
    await store.put(step('stale-run', 0));
    await store.acquireLease('stale-run', { holder: 'worker-7', ttlMs: 50 });
    // a run with more tokens than a person reads without separators
    await store.put({
      ...step('big-usage', 0),
      nodeOutput: {
        usage: [
          {
            model: 'm',
            agentPath: 'agent:t',
            turn: 0,
            inputTokens: 1_234_567,
            outputTokens: 89_012,
            cachedInputTokens: 0,
            finishReason: 'stop',
          },
        ],
      },
    });
    // many completed runs: the needles' agent is one in four, interleaved by id
    for (let i = 0; i < NEEDLES * 4; i++) {
      const id = `bulk-${String(i).padStart(3, '0')}`;
      const agentPath = i % 4 === 0 ? 'agent:needle-finder' : 'agent:hay';
      const first = await store.put({ ...step(id, 0), agentPath });
      await store.put({
        ...step(id, 1),
        agentPath,
        nodeId: 'run_end',
        step: 'run_end',
        status: 'completed',
        prevId: first.id,
      });
    }
    await store.put({
      ...step('big-usage', 1),
      nodeId: 'run_end',
      step: 'run_end',
      status: 'completed',
      prevId: (await store.latest('big-usage'))!.id,
    });
    const replica = connectPlane(store, { url: plane.url, apiKey: ingestKey, pollMs: 0 });
    await replica.flush({ timeoutMs: 30_000 });
    await replica.stop();
    // two other machines, offline, both claimed one pause: a claim conflict (the plane's), and a backlog to report
    const pause = (await store.getPendingInterrupt('refund-large'))!;
    for (const writerId of ['laptop-c', 'laptop-d']) {
      const r = await call(`${plane.url}/v1/ingest`, {
        key: ingestKey,
        json: {
          protocol: 1,
          writerId,
          backlog: { rows: 1234, bytes: 40960, oldestPendingAt: new Date(Date.now() - 60_000).toISOString() },
          rows: [
            {
              kind: 'interrupt_claimed',
              id: uuidv7(),
              executionId: 'refund-large',
              checkpointId: pause.checkpointId,
              writerId,
              claimedAt: new Date().toISOString(),
            },
          ],
        },
      });
      expect(r.body.accepted).toBe(1);
    }
    // time passes: refund-old has waited two days for an answer, and the stale run's hold at the plane ran out
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString();
    await plane.database.db.execute(
      sql`UPDATE executions SET updated_at = ${twoDaysAgo}::timestamptz WHERE execution_id = 'refund-old'`,
    );
    await plane.database.db.execute(
      sql`UPDATE run_owners SET expires_at = now() - interval '1 minute' WHERE execution_id = 'stale-run'`,
    );
    const file = new Database(dbFile);
    file.prepare(`UPDATE executions SET updated_at = ? WHERE execution_id = 'refund-old'`).run(twoDaysAgo);
    file.close();
    local = await serveLocalUi(store, { port: 0 });
    browser = await launching;
  }, 120_000);
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await (await launching?.catch(() => null))?.close();
    await local?.close();
    await store?.close();
    await plane?.close();
    tmp.cleanup();
  });

  /** Every text the checks read, with its colour and the background it is drawn on, and the page's own background. */
  const colours = (page: Page) =>
    page.evaluate(() => {
      const rgb = (c: string) => {
        const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(c);
        return m ? { r: +m[1], g: +m[2], b: +m[3], a: m[4] === undefined ? 1 : +m[4] } : { r: 0, g: 0, b: 0, a: 0 };
      };
      const lum = ({ r, g, b }: { r: number; g: number; b: number }) => {
        const f = (v: number) => {
          const s = v / 255;
          return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
      };
      /** The colour an element is drawn on: the first opaque background from it up (the canvas is the root's). */
      const ground = (el: Element | null) => {
        for (let e = el; e; e = e.parentElement) {
          const c = rgb(getComputedStyle(e).backgroundColor);
          if (c.a > 0.5) return c;
        }
        return rgb(getComputedStyle(document.documentElement).backgroundColor);
      };
      const ratio = (el: Element) => {
        const fg = lum(rgb(getComputedStyle(el).color));
        const bg = lum(ground(el));
        return (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      };
      const kinds: Record<string, string> = {
        'body text': 'main td, main p:not(.muted), h1',
        links: 'a',
        badges: '.badge, .count',
        'muted text': '.muted, label, .row-meta',
        'code blocks': 'pre',
        buttons: 'button:not(.link)',
      };
      const found: { kind: string; text: string; ratio: number }[] = [];
      for (const [kind, selector] of Object.entries(kinds))
        for (const el of document.querySelectorAll(selector)) {
          if (!(el as HTMLElement).offsetParent && getComputedStyle(el).position !== 'fixed') continue;
          found.push({ kind, text: (el.textContent ?? '').trim().slice(0, 40), ratio: ratio(el) });
        }
      return { page: lum(ground(document.body)), found };
    });

  for (const w of ['plane', 'local'] as const) {
    it(`${w}: a dark scheme for a reader who asks for one, every text at WCAG AA contrast (4.5:1), in both schemes`, async () => {
      const page = await open(w);
      const paths = ['/', '/runs/broken-run', '/runs/refund-large', '/approvals', w === 'plane' ? '/writers' : '/sync'];
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const path of paths) {
          await page.goto(`${base(w)}${path}`);
          const c = await colours(page);
          // the page follows the reader's scheme: a dark ground in dark, a light one in light
          if (scheme === 'dark') expect(c.page, `${scheme} ${path}`).toBeLessThan(0.05);
          else expect(c.page, `${scheme} ${path}`).toBeGreaterThan(0.8);
          // the list shows every kind; a code block is the failed run's error
          const kinds =
            path === '/' ? ['body text', 'links', 'badges', 'muted text', 'buttons'] : ['body text', 'links'];
          if (path === '/runs/broken-run') kinds.push('code blocks', 'badges');
          for (const kind of kinds)
            expect(
              c.found.some((f) => f.kind === kind),
              `${scheme} ${path}: some ${kind} to check`,
            ).toBe(true);
          const low = c.found.filter((f) => f.ratio < 4.5).map((f) => `${f.kind} '${f.text}' ${f.ratio.toFixed(2)}`);
          expect(low, `${scheme} ${path}`).toEqual([]);
        }
      }
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.goto(`${base(w)}/`);
      await page.screenshot({ path: join(SHOTS, `reading-${w}-dark.png`), fullPage: true });
      await page.setViewportSize({ width: 390, height: 800 });
      await page.reload();
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(
        1,
      );
      await page.screenshot({ path: join(SHOTS, `reading-${w}-dark-narrow.png`), fullPage: true });
    });

    it(`${w}: the nav marks the page it is on (aria-current), and the run list its view`, async () => {
      const page = await open(w);
      const current = () =>
        page.$$eval('nav a[aria-current=page]', (as) =>
          as.map((a) => [a.getAttribute('href'), a.getAttribute('aria-current')]),
        );
      for (const path of ['/', '/approvals', '/quarantine', w === 'plane' ? '/writers' : '/sync']) {
        await page.goto(`${base(w)}${path}`);
        expect(await current(), path).toEqual([[path, 'page']]);
        expect(await accessibilityProblems(page), path).toEqual([]);
      }
      // a run's page is none of the nav's pages
      await page.goto(`${base(w)}/runs/refund-small`);
      expect(await current()).toEqual([]);
      await page.goto(`${base(w)}/?status=failed`);
      expect(await current()).toEqual([['/', 'page']]);
      // the list's own views: all runs, or the ones that need attention
      const view = () => page.$$eval('.views a[aria-current=page]', (as) => as.map((a) => a.textContent));
      expect(await view()).toEqual([]);
      await page.goto(`${base(w)}/`);
      expect(await view()).toEqual(['All runs']);
      await page.click('[data-testid=attention-view]');
      await page.waitForURL(/attention=1/);
      expect(await view()).toEqual(['Needs attention']);
      // the list pages by a next link only: it has no numbered page to mark
      expect(await page.locator('.pager [aria-current]').count()).toBe(0);
    });

    it(`${w}: keyboard shortcuts: / searches, j and k move through the runs, g a goes to approvals, ? lists them; never while typing; can be turned off`, async () => {
      const page = await open(w);
      await page.goto(`${base(w)}/`);
      expect(await page.locator('script[src="/ui/shortcuts.js"]').count()).toBe(1);
      const active = () =>
        page.evaluate(() => {
          const a = document.activeElement as HTMLElement | null;
          return a?.getAttribute('name') ?? a?.getAttribute('title') ?? a?.tagName ?? null;
        });
      const runs = await listed(page);
      await page.keyboard.press('/');
      expect(await active()).toBe('q');
      // typing in the search types: j, k, g, a and ? are letters there
      await page.keyboard.type('jk?ga');
      expect(await page.inputValue('input[name=q]')).toBe('jk?ga');
      expect(new URL(page.url()).pathname).toBe('/');
      expect(await active()).toBe('q');
      await page.fill('input[name=q]', '');
      await page.locator('input[name=q]').evaluate((e) => (e as HTMLInputElement).blur());
      await page.keyboard.press('j');
      expect(await active()).toBe(runs[0]);
      await page.keyboard.press('j');
      expect(await active()).toBe(runs[1]);
      await page.keyboard.press('k');
      expect(await active()).toBe(runs[0]);
      // held with Ctrl, a key is the browser's
      await page.keyboard.press('Control+j');
      expect(await active()).toBe(runs[0]);
      // ? opens the list of shortcuts, on the page (it says them without JavaScript too)
      expect(await page.locator('#keyboard').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
      await page.keyboard.press('?');
      expect(await page.locator('#keyboard').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
      const help = (await page.textContent('#keyboard'))!;
      for (const said of ['search the run list', 'next / previous run', 'go to Runs', 'go to Pending approvals'])
        expect(help).toContain(said);
      await page.keyboard.press('Escape');
      await page.locator('#keyboard summary').evaluate((e) => (e as HTMLElement).blur());
      await page.keyboard.press('g');
      await page.keyboard.press('a');
      await page.waitForURL(`${base(w)}/approvals`);
      await page.keyboard.press('g');
      await page.keyboard.press('r');
      await page.waitForURL(`${base(w)}/`);
      // a reader who does not want them turns them off (kept for this browser)
      await page.click('#keyboard summary');
      await page.click('[data-shortcuts-toggle]');
      expect(await page.textContent('[data-shortcuts-toggle]')).toBe('Turn keyboard shortcuts on');
      await page.reload();
      await page.keyboard.press('/');
      expect(await active()).not.toBe('q');
      await page.click('#keyboard summary');
      await page.click('[data-shortcuts-toggle]');
      await page.keyboard.press('/');
      expect(await active()).toBe('q');
    });

    it(`${w}: without JavaScript every page still works: the list filters by its form, the shortcuts are listed, nothing needs a script`, async () => {
      const page = await open(w, { js: false });
      await page.goto(`${base(w)}/`);
      expect(await page.locator('#keyboard summary').textContent()).toBe('Keyboard shortcuts');
      // the script's off switch is hidden: without the script it would do nothing
      expect(await page.locator('[data-shortcuts-toggle]').isVisible()).toBe(false);
      await page.fill('input[name=agent]', 'broken');
      await page.click('form.filters button');
      await page.waitForURL(/agent=broken/);
      expect(await listed(page)).toEqual(['broken-run']);
    });

    it(`${w}: counts, tokens and bytes read with thousands separators`, async () => {
      const page = await open(w);
      await page.goto(`${base(w)}/?q=big-usage`);
      expect(await page.textContent('tbody tr [data-testid=tokens]')).toBe('1,234,567 in / 89,012 out');
      expect(await page.getAttribute('tbody tr [data-testid=tokens]', 'title')).toMatch(/^1,234,567 input/);
      await page.goto(`${base(w)}/runs/big-usage`);
      expect(await page.textContent('[data-testid=usage]')).toMatch(/Tokens: 1,234,567 in \(0 cached\) · 89,012 out/);
      await page.goto(`${base(w)}/`);
      expect(await page.textContent('[data-testid=run-count]')).toMatch(/^\d{1,3}(,\d{3})* runs$/);
      if (w === 'plane') {
        await page.goto(`${plane.url}/writers`);
        expect(await page.textContent('tr:has-text("laptop-c") [data-testid=backlog]')).toBe(
          '1,234 rows (40,960 bytes)',
        );
      }
    });

    it(`${w}: writers by name ("name (short id)"), the full id on hover`, async () => {
      const page = await open(w);
      await page.goto(`${base(w)}/?q=refund-small`);
      const cell = page.locator('tbody tr td[data-label=Writer] .writer');
      const name = w === 'plane' ? KEY_NAME : 'this store';
      expect(await cell.textContent()).toBe(`${name} (…${WRITER.slice(-8)})`);
      expect(await cell.getAttribute('title')).toBe(WRITER);
      await page.goto(`${base(w)}/runs/refund-small`);
      expect(await page.textContent('main')).toContain(`last writer ${name} (…${WRITER.slice(-8)})`);
      if (w === 'plane') {
        // the API says the name too
        const api = (await call(`${plane.url}/v1/writers`, { key: readKey })).body.items as {
          writerId: string;
          keyName: string | null;
        }[];
        expect(api.find((x) => x.writerId === WRITER)?.keyName).toBe(KEY_NAME);
        await page.goto(`${plane.url}/writers`);
        expect(await page.textContent('tr:has-text("laptop-c") td .writer')).toBe(`${KEY_NAME} (laptop-c)`);
        await page.goto(`${plane.url}/runs/refund-large`);
        expect(await page.textContent('section[aria-labelledby=conflicts-h]')).toMatch(
          new RegExp(`won by ${KEY_NAME} \\(laptop-c\\), also\\s+claimed by ${KEY_NAME} \\(laptop-d\\)`),
        );
      }
    });

    it(`${w}: the nav says how many pauses wait, read as each page loads`, async () => {
      const page = await open(w);
      await page.goto(`${base(w)}/approvals`);
      const waiting = await page.locator('[data-testid=pause]').count();
      expect(waiting).toBeGreaterThan(0);
      expect(await page.textContent('nav a[href="/approvals"] [data-testid=pending-count]')).toBe(String(waiting));
      // a new pause: the next page load counts it
      const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file(`more-${w}.jsonl`)) });
      const id = `refund-more-${w}`;
      expect((await agent.run(refundRequest('2001', 70000), { executionId: id })).status).toBe('paused');
      if (w === 'plane') {
        const replica = connectPlane(store, { url: plane.url, apiKey: ingestKey, pollMs: 0 });
        await replica.flush({ timeoutMs: 10_000 });
        await replica.stop();
      }
      await page.goto(`${base(w)}/`);
      expect(await page.textContent('nav a[href="/approvals"] [data-testid=pending-count]')).toBe(String(waiting + 1));
      expect(await page.textContent('nav a[href="/approvals"]')).toBe(`Pending approvals ${waiting + 1}`);
    });

    it(`${w}: the run list filters by agent and error code in its read: full pages, the cursor exact, a count of the matches`, async () => {
      const page = await open(w);
      await page.goto(`${base(w)}/`);
      await page.fill('input[name=agent]', 'NEEDLE');
      await page.click('form.filters button');
      await page.waitForURL(/agent=NEEDLE/);
      expect(await page.textContent('[data-testid=run-count]')).toBe(`${NEEDLES} runs`);
      const first = await listed(page);
      expect(first.length).toBe(50);
      await page.click('.pager a[rel=next]');
      await page.waitForURL(/cursor=/);
      expect(new URL(page.url()).searchParams.get('agent')).toBe('NEEDLE');
      const second = await listed(page);
      expect(second.length).toBe(NEEDLES - 50);
      expect(await page.textContent('[data-testid=run-count]')).toBe(`${NEEDLES} runs`);
      const all = [...first, ...second];
      expect(new Set(all).size).toBe(NEEDLES);
      expect(all.every((id) => Number(id.slice(5)) % 4 === 0)).toBe(true);
      // an error code: the failed run that has it, and nothing for a code no run failed with
      await page.goto(`${base(w)}/?error=${encodeURIComponent(errorCode)}`);
      expect(await listed(page)).toEqual(['broken-run']);
      expect(await page.textContent('[data-testid=run-count]')).toBe('1 run');
      expect(await page.inputValue('input[name=error]')).toBe(errorCode);
      await page.goto(`${base(w)}/?error=NO_SUCH_CODE`);
      expect(await listed(page)).toEqual([]);
      expect(await page.textContent('[data-testid=run-count]')).toBe('0 runs');
      // with another status, a code matches nothing (only a failed run has one)
      await page.goto(`${base(w)}/?error=${encodeURIComponent(errorCode)}&status=completed`);
      expect(await listed(page)).toEqual([]);
      await page.screenshot({ path: join(SHOTS, `reading-${w}-filters.png`), fullPage: true });
      await page.setViewportSize({ width: 390, height: 800 });
      await page.goto(`${base(w)}/?agent=needle`);
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(
        1,
      );
      await page.screenshot({ path: join(SHOTS, `reading-${w}-filters-narrow.png`), fullPage: true });
    });

    it(`${w}: "Needs attention" lists the failed, the stale, the pauses unanswered for over a day${w === 'plane' ? ' and the claim conflicts' : ''}, and says so`, async () => {
      const page = await open(w);
      await page.goto(`${base(w)}/?attention=1`);
      const expected = ['broken-run', 'stale-run', 'refund-old', ...(w === 'plane' ? ['refund-large'] : [])];
      expect((await listed(page)).sort()).toEqual(expected.sort());
      expect(await page.textContent('[data-testid=run-count]')).toBe(`${expected.length} runs`);
      expect(await page.textContent('[data-testid=attention-words]')).toMatch(/failed runs; stale runs .*over a day/);
      expect(await page.locator('input[name=attention]').isChecked()).toBe(true);
      // with the other filters
      await page.goto(`${base(w)}/?attention=1&status=paused`);
      expect(await listed(page)).toEqual(w === 'plane' ? expect.arrayContaining(['refund-old']) : ['refund-old']);
      // a value the form cannot send is a mistake to say, not to drop
      expect((await page.request.get(`${base(w)}/?attention=yes`)).status()).toBe(400);
    });
  }
});
