/// <reference lib="dom" />
/**
 * The inspector in a real browser (Debian chromium, headless, via
 * playwright-core) against a real plane seeded by real client runs.
 * Screenshots go to test-output/ui-screenshots/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { Agent, ScriptedModel, connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import { uuidv7 } from '../../shared/ids.js';

export const SHOTS = join(fileURLToPath(new URL('../..', import.meta.url)), 'test-output', 'ui-screenshots');
const XSS = `<script>window.__xss=1</script> "><img src=x onerror="window.__xss=2">`;

export const launch = (): Promise<Browser> => launchChromium();

describe('the inspector in headless chromium', () => {
  const tmp = scratchDir('waymark-ui-');
  let plane: TestPlane;
  let browser: Browser;
  let launching: Promise<Browser> | undefined;
  let page: Page;
  let readKey = '';
  let pausedId = '';
  const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    console.log(`[ui] screenshots in ${SHOTS}`);
    // Chromium starts while the plane does and is filled
    launching = launch();
    launching.catch(() => {});
    plane = await startTestPlane('pglite');
    const ingestKey = await plane.key('acme', ['ingest']);
    readKey = await plane.key('acme', ['read']);
    // a real client: one completed run and one paused run whose input carries markup
    const store = new SqliteCheckpointer({ path: tmp.file('laptop.db') });
    const replica = connectPlane(store, { url: plane.url, apiKey: ingestKey, pollMs: 0 });
    const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file('l.jsonl')) });
    await agent.run(refundRequest('7', 20), { executionId: 'refund-small' });
    await agent.fork('refund-small', { executionId: 'refund-small-fork' });
    // a run whose model call threw: it must say why on the list and the run page, and its model-call row must not say "completed"
    const broken = new Agent({
      name: 'broken-bot',
      model: new ScriptedModel(() => {
        throw new Error('upstream model returned 500');
      }),
      tools: [],
      checkpointer: store,
    });
    expect((await broken.run('hello', { executionId: 'broken-run' })).status).toBe('failed');
    pausedId = (await agent.run(`${refundRequest('1042', 50000)} ${XSS}`, { executionId: 'refund-large' })).executionId;
    // a supervised run: a supervisor delegates to the refund agent, which pauses inside its tool
    const desk = new Agent({
      name: 'desk',
      kind: 'supervisor',
      model: new ScriptedModel(({ turn, toolResults }) =>
        turn === 0
          ? { toolCalls: [{ name: 'refunds', arguments: { task: refundRequest('77', 9000) } }] }
          : { content: `supervisor: ${toolResults[0].content}` },
      ),
      tools: [agent.asTool({ name: 'refunds' })],
      checkpointer: store,
    });
    expect((await desk.run('handle refunds', { executionId: 'desk-run' })).status).toBe('paused');
    await replica.flush({ timeoutMs: 10_000 });
    // then two machines, offline, both claimed its pause: the plane keeps the first and records a conflict
    const deskPause = (await store.getPendingInterrupt('desk-run'))!;
    for (const writerId of ['laptop-c', 'laptop-d']) {
      const r = await call(`${plane.url}/v1/ingest`, {
        key: ingestKey,
        json: {
          protocol: 1,
          writerId,
          rows: [
            {
              kind: 'interrupt_claimed',
              id: uuidv7(),
              executionId: 'desk-run',
              checkpointId: deskPause.checkpointId,
              writerId,
              claimedAt: new Date().toISOString(),
            },
          ],
        },
      });
      expect(r.body.accepted).toBe(1);
    }
    // a forged copy of a synced row: the plane refuses it and quarantines it
    const [latest] = await store.list('refund-small', { order: 'desc', limit: 1 });
    await call(`${plane.url}/v1/ingest`, {
      key: ingestKey,
      json: {
        protocol: 1,
        writerId: 'laptop-b',
        backlog: { rows: 42, bytes: 4096, oldestPendingAt: new Date(Date.now() - 600_000).toISOString() },
        rows: [{ kind: 'checkpoint', id: latest.id, row: { ...latest, nodeId: `forged ${XSS}` } }],
      },
    });
    await replica.stop();
    await store.close();
    browser = await launching;
    page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  });
  afterAll(async () => {
    await (await launching?.catch(() => null))?.close();
    await plane?.close();
    tmp.cleanup();
  });

  it('asks for a key, then sets an HttpOnly SameSite=Strict session cookie', async () => {
    await page.goto(`${plane.url}/`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await shot('01-login');
    await page.fill('input[name=key]', 'wm_wrong');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('[role=alert]')).toMatch(/unknown or revoked/);
    await page.fill('input[name=key]', readKey);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}/`);
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === 'wm_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    // the login form's own cookie (its CSRF secret) is as closed
    expect(cookies.find((c) => c.name === 'wm_login')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
      path: '/login',
    });
    expect(await page.content()).not.toContain(readKey);
  });

  it('lists runs with their status and finds one by id', async () => {
    await expect.poll(() => page.locator('tbody tr').count()).toBe(5);
    expect(await page.textContent('body')).toMatch(/refund-large\s*paused/);
    expect(await page.textContent('body')).toMatch(/refund-small\s*completed/);
    await shot('02-runs');
    await page.fill('input[name=q]', 'refund-l');
    await page.click('form.filters button');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
  });

  it('run list agent column: each run shows the agent path of its first row', async () => {
    await page.goto(`${plane.url}/`);
    await expect.poll(() => page.locator('tbody tr').count()).toBe(5);
    expect(await page.textContent('thead')).toContain('Agent');
    const agentOf = (id: string) =>
      page
        .locator('tbody tr', { has: page.locator(`a[href="/runs/${id}"]`) })
        .locator('[data-testid=agent]')
        .textContent();
    expect((await agentOf('refund-small'))?.trim()).toBe('agent:refund-bot');
    expect((await agentOf('refund-large'))?.trim()).toBe('agent:refund-bot');
    expect((await agentOf('broken-run'))?.trim()).toBe('agent:broken-bot');
  });

  it('regression: a failed run never said why, and the row of the model call that threw said "completed"', async () => {
    await page.goto(`${plane.url}/?status=failed`);
    const list = (await page.textContent('tbody'))!;
    expect(list).toMatch(/broken-run\s*failed/);
    expect(list).toContain('upstream model returned 500');
    await page.click('a[href="/runs/broken-run"]');
    await page.waitForURL(`${plane.url}/runs/broken-run`);
    expect(await page.textContent('#failed-h')).toMatch(/Failed: \w+/);
    expect(await page.textContent('section.failed pre')).toContain('upstream model returned 500');
    const modelRow = page.locator('ol.timeline li', { hasText: 'llm_call' }).first();
    expect(await modelRow.locator('.badge').textContent()).toBe('failed');
    expect(await modelRow.textContent()).toMatch(/the model call failed/);
    expect(
      await page.locator('ol.timeline li', { hasText: 'llm_call' }).locator('.badge', { hasText: 'completed' }).count(),
    ).toBe(0);
    await shot('02b-run-failed');
    await page.goto(`${plane.url}/`);
  });

  it('opens a paused run: timeline, frozen context, idempotency; diffs two rows', async () => {
    await page.click(`a[href="/runs/${pausedId}"]`);
    await page.waitForURL(`${plane.url}/runs/${pausedId}`);
    const body = (await page.textContent('body'))!;
    expect(body).toMatch(/Pause: manager_approval/);
    expect(body).toContain('"amount": 50000');
    expect(await page.locator('ol.timeline li').count()).toBe(3);
    await shot('03-run-paused');
    await page.fill('input[name=a]', '0');
    await page.fill('input[name=b]', '1');
    await page.click('#diff-h + form button');
    await page.waitForURL(/a=0&b=1/);
    const diff = (await page.textContent('[data-testid=diff]'))!;
    expect(diff).toMatch(/1 message in common; 1 added; 2 fields changed/);
    // the added message as a conversation: the tool call by name, its arguments pretty-printed
    expect(diff).toContain('calls refund{\n  "order": "1042",\n  "amount": 50000\n}');
    expect(diff).toMatch(/toolCallId/);
    await shot('04-run-diff');
  });

  it('renders markup from rows as inert text', async () => {
    expect(await page.textContent('body')).toContain('<script>window.__xss=1</script>');
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('img').count()).toBe(0);
    // the scripts are our own static files; the CSP allows no other (no inline script)
    expect(await page.$$eval('script', (s) => s.map((e) => e.getAttribute('src')))).toEqual([
      '/ui/local-time.js',
      '/ui/shortcuts.js',
    ]);
    const csp = (await page.request.get(`${plane.url}/`)).headers()['content-security-policy'];
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'self'(;|$)/);
  });

  it('shows the quarantine entry and a writer backlog', async () => {
    await page.goto(`${plane.url}/quarantine`);
    const q = (await page.textContent('main'))!;
    expect(q).toMatch(/conflict/);
    expect(q).toMatch(/laptop-b/);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await shot('05-quarantine');
    await page.goto(`${plane.url}/writers`);
    expect(await page.textContent('tr:has-text("laptop-b") [data-testid=backlog]')).toBe('42 rows (4,096 bytes)');
    expect(await page.textContent('tr:has-text("laptop-b")')).toMatch(/oldest row waiting since 1\dm ago/); // 10 minutes before the seed, read minutes later on a busy machine
    await shot('06-writers');
  });

  it('fits a narrow window and is keyboard reachable', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`${plane.url}/runs/${pausedId}`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await shot('07-run-narrow');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Runs');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${plane.url}/`);
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('reads as a person reads: local times (UTC on hover), a conversation, fork links, opt-in live updates, a styled 404, no "First page" on the first page', async () => {
    const tz = await browser.newContext({ viewport: { width: 1280, height: 860 }, timezoneId: 'Asia/Kolkata' });
    await tz.addCookies(await page.context().cookies());
    const p2 = await tz.newPage();
    await p2.goto(`${plane.url}/`);
    expect(await p2.locator('text=First page').count()).toBe(0);
    const started = p2.locator('tbody tr:has-text("refund-small-fork") time').first();
    expect(await started.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+05:30$/);
    expect(await started.getAttribute('title')).toMatch(/ UTC$/);
    // live updates are off by default and a person can turn them on: in place, never a reload (test/ui/live.test.ts)
    expect(await p2.locator('script[src="/ui/live.js"]').count()).toBe(0);
    await p2.click('text=Show changes live');
    await p2.waitForURL(/live=1/);
    expect(await p2.locator('script[src="/ui/live.js"]').count()).toBe(1);
    expect(await p2.locator('meta[http-equiv=refresh]').count()).toBe(0);
    // a fork links to its origin, and the origin to its forks
    await p2.goto(`${plane.url}/runs/refund-small-fork`);
    expect(await p2.textContent('p.fork')).toMatch(/Forked from refund-small at its llm_call row/);
    await p2.click('p.fork a');
    // on the page of the timeline that holds the row it was forked at, scrolled to it
    await p2.waitForURL(/\/runs\/refund-small\?seq=\d+#seq-\d+$/);
    expect(await p2.locator(':target').textContent()).toContain('llm_call');
    expect(await p2.textContent('main')).toMatch(/Forks of this run:\s*refund-small-fork/);
    // the state reads as a conversation: roles, the tool call with its arguments, the tool result pretty-printed
    const convo = p2.locator('ol.conversation');
    expect(await convo.locator('.msg-role').allTextContents()).toEqual(expect.arrayContaining(['user', 'assistant']));
    expect(await convo.locator('.tool-call').first().textContent()).toMatch(/calls refund[\s\S]*"order": "7"/);
    expect(await convo.locator('.msg-tool .msg-text').first().textContent()).toMatch(/^\{\n {2}"approved": true,\n/);
    expect(await p2.locator('h3', { hasText: 'Other state fields' }).count()).toBe(1);
    await p2.screenshot({ path: join(SHOTS, '08-run-conversation.png'), fullPage: true });
    // rows show the time since the previous row
    expect(await p2.locator('ol.timeline li').nth(1).textContent()).toMatch(/\+\d+(\.\d)? (ms|s)/);
    const missing = await p2.goto(`${plane.url}/runs/no-such-run`);
    expect(missing!.status()).toBe(404);
    expect(await p2.locator('header .brand').count()).toBe(1);
    expect(await p2.textContent('main')).toMatch(/No run 'no-such-run' in this project/);
    // on a phone the run list fits: no sideways scroll, long writer ids hidden or shortened
    await p2.setViewportSize({ width: 390, height: 800 });
    await p2.goto(`${plane.url}/`);
    expect(await p2.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(1);
    await p2.screenshot({ path: join(SHOTS, '09-runs-narrow.png'), fullPage: true });
    await tz.close();
  });

  it('a supervised run shows its worker nested under it; a conflicted run is marked in the list and explained on its page; desktop and 390 px', async () => {
    await page.goto(`${plane.url}/`);
    const row = page.locator('tbody tr', { hasText: 'desk-run' });
    expect(await row.locator('[data-testid=conflicted]').textContent()).toBe('claim conflict');
    await page.click('a[href="/runs/desk-run"]');
    await page.waitForURL(`${plane.url}/runs/desk-run`);
    // the worker's rows sit one level in, its tool's a level further: the nesting of the agent paths
    const depthOf = async (path: string) =>
      (await page.locator('ol.timeline li', { hasText: path }).first().getAttribute('class'))!.match(/depth-(\d)/)![1];
    expect(await depthOf('#0turn:0llm_call')).toBe('0');
    expect(await depthOf('supervisor:desk/agent:refund-bot')).toBe('1');
    expect(await depthOf('supervisor:desk/agent:refund-bot/tool:refund')).toBe('2');
    expect(await page.textContent('#conflicts-h')).toMatch(/Claim conflicts/);
    expect(await page.textContent('section[aria-labelledby=conflicts-h]')).toMatch(
      /won by key \(laptop-c\), also\s+claimed by key \(laptop-d\)/,
    );
    await shot('10-run-supervised-conflicted');
    await page.setViewportSize({ width: 390, height: 800 });
    await page.reload();
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(1);
    await shot('11-run-supervised-conflicted-narrow');
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('logs out, and the old session no longer opens a page', async () => {
    const [cookie] = await page.context().cookies();
    await page.click('text=Log out');
    await page.waitForURL(/\/login/);
    const again = await fetch(`${plane.url}/`, {
      headers: { cookie: `wm_session=${cookie.value}` },
      redirect: 'manual',
    });
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toMatch(/^\/login/);
  });
});
