/// <reference lib="dom" />
/**
 * Run requests from the plane's inspector, in headless Chromium, applied by
 * real application processes (test/decisions/request-worker-child.ts: a
 * SQLite store, a replica, serveDecisions):
 * - a person retries a failed run: the plane records the request, a worker
 *   applies it, the page then shows it applied and the run completed;
 * - a person recovers a stale run (its runner SIGKILLed mid-run, its lease
 *   and its plane hold expired): a worker takes it over and completes it;
 * - a person forks a run from a row: the page links the fork, which says what
 *   it was forked from;
 * - the rows after each request's row all carry a worker's writer id, never
 *   the plane's: the plane runs no step;
 * - a read-only session sees no form and a sentence why; its forged post is
 *   FORBIDDEN; a post without the CSRF token, or from another origin, is
 *   refused; a retry of a run that has not failed is RUN_NOT_FAILED; each
 *   refusal changes nothing;
 * - a phone (390 px) shows the forms without horizontal scrolling, and the
 *   page passes the accessibility checks (test/helpers/a11y.ts).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { eq, sql } from 'drizzle-orm';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrfOf } from '../../inspector/csrf.js';
import { runOwners } from '../../plane/db/schema.js';
import { accessibilityProblems } from '../helpers/a11y.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { forkTs, nextMessage, runTs } from '../helpers/child.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pollUntil } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const WORKER = fileURLToPath(new URL('../decisions/request-worker-child.ts', import.meta.url));
const STALE = fileURLToPath(new URL('./stale-run-child.ts', import.meta.url));
/** The killed runner's lease, and the plane's takeover delay: both expire soon after it dies. */
const LEASE_MS = 300;
type Msg = { type: string; [k: string]: unknown };

const post = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', redirect: 'manual', headers, body: new URLSearchParams(body) });
const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

describe('retry, recover and fork from the plane inspector, applied by the application', () => {
  let plane: TestPlane;
  let browser: Browser;
  let launching: Promise<Browser>;
  const tmp = scratchDir('waymark-requests-ui-');
  const keys: Record<string, string> = {};
  const kids: ChildProcess[] = [];
  const workers: string[] = [];
  const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  const startWorker = async (db: string) => {
    const child = forkTs(WORKER, [db, plane.url, keys.ingest, tmp.file('fail'), tmp.file('ledger'), tmp.file('hold')]);
    child.stderr?.on('data', (d) => process.stderr.write(`[worker] ${d}`));
    const ready = await nextMessage<Msg>(child, (m) => m.type === 'ready');
    kids.push(child);
    workers.push(ready.writerId as string);
    return child;
  };
  const rowsAtPlane = async (id: string) => {
    const rows: { seq: number; step: string; status: string; writerId: string; id: string }[] = [];
    let cursor: string | null = null;
    do {
      const r = await call(
        `${plane.url}/v1/executions/${id}/restore${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
        { key: keys.reader },
      );
      expect(r.status).toBe(200);
      rows.push(...r.body.rows);
      cursor = r.body.nextCursor;
    } while (cursor);
    return rows;
  };
  const allRequests = async () =>
    (await call(`${plane.url}/v1/requests`, { key: keys.reader })).body.items as {
      requestId: string;
      state: string;
      checkpointSeq: number;
      settledBy: string | null;
      forkExecutionId: string | null;
    }[];
  const signedIn = async (key: string, width = 1100, next = '/') => {
    const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage();
    await page.goto(`${plane.url}/login?next=${encodeURIComponent(next)}`);
    await page.fill('input[name=key]', key);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}${next}`);
    return page;
  };
  /** Reload the run's page until `selector` shows (the worker applied the request and synced). */
  const reloadUntil = async (page: Page, selector: string) => {
    await pollUntil(
      async () => {
        await page.reload();
        return (await page.locator(selector).count()) > 0;
      },
      60_000,
      300,
    );
  };
  /** The rows after `seq` were all written by the application's workers, none by the plane. */
  const writtenByWorkers = async (id: string, seq: number) => {
    const after = (await rowsAtPlane(id)).filter((r) => r.seq > seq);
    expect(after.length).toBeGreaterThan(0);
    for (const r of after) expect(workers).toContain(r.writerId);
    expect(after.some((r) => r.writerId === 'plane')).toBe(false);
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    launching = launchChromium();
    launching.catch(() => {});
    plane = await startTestPlane('pglite', { takeoverAfterMs: LEASE_MS });
    keys.ingest = await plane.key('acme', ['ingest']);
    keys.reader = await plane.key('acme', ['read']);
    keys.operator = await plane.key('acme', ['read', 'operate']);

    // a runner SIGKILLed mid-run, its rows on the plane
    const staleDb = tmp.file('stale.db');
    const child = await runTs(STALE, [staleDb, plane.url, keys.ingest, 'stale-run', String(LEASE_MS)]);
    expect([child.signal, child.stderr]).toEqual(['SIGKILL', '']);
    // a run that fails (its model answers 500 while the fail file exists)
    writeFileSync(tmp.file('fail'), '');
    const a = await startWorker(tmp.file('a.db'));
    const ran = nextMessage<Msg>(a, (m) => m.type === 'ran');
    a.send({ type: 'run', executionId: 'failed-run' });
    expect((await ran).status).toBe('failed');
    rmSync(tmp.file('fail'));
    // the dead runner's hold at the plane expires
    await pollUntil(async () => {
      const held = await plane.database.db
        .select({ live: sql<boolean>`${runOwners.expiresAt} > now()` })
        .from(runOwners)
        .where(eq(runOwners.executionId, 'stale-run'));
      return held.length === 1 && held[0].live === false;
    }, 20_000);
    // the application: the first machine, and the stale runner's machine restarted on its store
    const b = await startWorker(staleDb);
    for (const k of [a, b]) {
      const serving = nextMessage<Msg>(k, (m) => m.type === 'serving');
      k.send({ type: 'serve' });
      await serving;
    }
    browser = await launching;
  }, 120_000);
  afterAll(async () => {
    await (await launching?.catch(() => null))?.close();
    for (const k of kids) {
      if (k.exitCode !== null) continue;
      const stopped = nextMessage<Msg>(k, (m) => m.type === 'stopped').catch(() => null);
      k.send({ type: 'stop' });
      await Promise.race([stopped, new Promise((r) => setTimeout(r, 10_000))]);
      k.kill('SIGKILL');
    }
    await plane?.close();
    tmp.cleanup();
  });

  it('a person retries a failed run: recorded at the plane, applied by the application, the page shows it applied and the run completed', async () => {
    const page = await signedIn(keys.operator);
    await page.goto(`${plane.url}/runs/failed-run`);
    expect(await page.textContent('h1')).toContain('failed');
    expect(await page.locator('[data-testid=recover-form]').count()).toBe(0);
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.locator('#retry-reason').fill('the model provider is back');
    await shot(page, 'request-retry-form');
    await page.getByRole('button', { name: 'Retry run' }).click();
    await page.waitForURL(`${plane.url}/runs/failed-run#requests-h`);
    const item = page.locator('[data-testid=request][data-action=retry]');
    expect(await item.count()).toBe(1);
    // no second Retry form while this one waits (or its rows are on their way)
    expect(await page.locator('[data-testid=retry-form]').count()).toBe(0);
    expect(await item.textContent()).toContain('the model provider is back');
    await reloadUntil(page, '[data-testid=request][data-action=retry] [data-testid=request-applied]');
    await pollUntil(
      async () => {
        await page.reload();
        return (await page.textContent('h1'))!.includes('completed');
      },
      30_000,
      300,
    );
    expect(await page.textContent('[data-testid=request][data-action=retry]')).toContain('the run went on from #');
    expect(await page.locator('[data-testid=retry-form]').count()).toBe(0);
    await shot(page, 'request-retry-applied');
    const [req] = (await allRequests()).filter((r) => r.state === 'applied');
    expect(workers).toContain(req.settledBy);
    await writtenByWorkers('failed-run', req.checkpointSeq);
    await page.context().close();
  });

  it('a person recovers a stale run (its runner SIGKILLed): a worker takes it over and completes it', async () => {
    const page = await signedIn(keys.operator, 390);
    await page.goto(`${plane.url}/runs/stale-run`);
    expect(await page.textContent('h1 .badge')).toBe('stale');
    expect(await page.locator('[data-testid=retry-form]').count()).toBe(0);
    expect(await fitsWidth(page)).toBe(true);
    expect(await accessibilityProblems(page)).toEqual([]);
    await shot(page, 'request-recover-form-390');
    await page.getByRole('button', { name: 'Recover run' }).click();
    await page.waitForURL(`${plane.url}/runs/stale-run#requests-h`);
    await reloadUntil(page, '[data-testid=request][data-action=recover] [data-testid=request-applied]');
    await pollUntil(
      async () => {
        await page.reload();
        return (await page.textContent('h1'))!.includes('completed');
      },
      30_000,
      300,
    );
    const recover = (await call(`${plane.url}/v1/requests?state=applied`, { key: keys.reader })).body.items.find(
      (r: { action: string }) => r.action === 'recover',
    );
    expect(workers).toContain(recover.settledBy);
    await writtenByWorkers('stale-run', recover.checkpointSeq);
    await page.context().close();
  });

  it('a person forks a run from a row: the page links the fork, which was written by a worker from that row', async () => {
    const page = await signedIn(keys.operator);
    await page.goto(`${plane.url}/runs/failed-run`);
    const from = (await rowsAtPlane('failed-run')).find((r) => r.step === 'llm_call')!;
    await page.locator('#fork-seq').fill(String(from.seq));
    await page.getByRole('button', { name: 'Fork from this row' }).click();
    await page.waitForURL(`${plane.url}/runs/failed-run#requests-h`);
    await reloadUntil(page, '[data-testid=request][data-action=fork] [data-testid=request-applied]');
    await shot(page, 'request-fork-applied');
    await page.locator('[data-testid=request][data-action=fork] [data-testid=request-applied] a').click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    expect(await page.textContent('.fork')).toContain('Forked from failed-run');
    const forkId = new URL(page.url()).pathname.split('/').pop()!;
    const fork = await rowsAtPlane(forkId);
    expect(fork[0]).toMatchObject({ step: 'fork_origin' });
    for (const r of fork) expect(workers).toContain(r.writerId);
    await page.context().close();
  });

  it('a read-only session sees no form and why; forged, token-less and foreign posts, and a retry of a run not failed, are refused and change nothing', async () => {
    // a request of its own (through the API), so this test does not lean on the others' outcomes
    const first = (await rowsAtPlane('stale-run'))[0];
    const own = await call(`${plane.url}/v1/executions/stale-run/requests`, {
      key: keys.operator,
      json: { action: 'fork', checkpointId: first.id },
    });
    expect(own.status).toBe(201);
    const page = await signedIn(keys.reader);
    await page.goto(`${plane.url}/runs/stale-run`);
    for (const f of ['retry', 'recover', 'fork']) expect(await page.locator(`[data-testid=${f}-form]`).count()).toBe(0);
    expect(await page.textContent('[data-testid=no-requests]')).toContain('no operate scope');
    // the run's requests are shown to it too
    expect(await page.locator('[data-testid=request]').count()).toBeGreaterThan(0);
    // what is recorded (the workers may settle requests meanwhile: their states are not this test's)
    const ids = async () => (await allRequests()).map((r) => r.requestId);
    const before = await ids();

    const readerCookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const readerToken = csrfOf(/wm_session=([^;]+)/.exec(readerCookie)![1]);
    const forged = await post(
      `${plane.url}/runs/failed-run/requests`,
      { csrf: readerToken, action: 'fork', seq: '0' },
      { cookie: readerCookie },
    );
    expect(forged.status).toBe(403);
    const forgedText = await forged.text();
    expect(forgedText).toContain('FORBIDDEN');
    expect(forgedText).toContain('Nothing was changed.');

    const op = await signedIn(keys.operator);
    const cookie = (await op.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const token = csrfOf(/wm_session=([^;]+)/.exec(cookie)![1]);
    const noToken = await post(`${plane.url}/runs/failed-run/requests`, { action: 'fork', seq: '0' }, { cookie });
    expect(noToken.status).toBe(403);
    expect(await noToken.text()).toContain('CSRF_FAILED');
    const foreign = await post(
      `${plane.url}/runs/failed-run/requests`,
      { csrf: token, action: 'fork', seq: '0' },
      { cookie, origin: 'https://evil.example' },
    );
    expect(foreign.status).toBe(403);
    expect(await foreign.text()).toContain('CSRF_FAILED');
    const crossSite = await post(
      `${plane.url}/runs/failed-run/requests`,
      { csrf: token, action: 'fork', seq: '0' },
      { cookie, 'sec-fetch-site': 'cross-site' },
    );
    expect(crossSite.status).toBe(403);
    // a run that never failed (running, stale or recovered) is not retried: the refusal names the stable code
    const notFailed = await post(`${plane.url}/runs/stale-run/requests`, { csrf: token, action: 'retry' }, { cookie });
    expect(notFailed.status).toBe(409);
    const text = await notFailed.text();
    expect(text).toContain('RUN_NOT_FAILED');
    expect(text).toContain('Nothing was changed.');
    expect(await ids()).toEqual(before);
    await page.context().close();
    await op.context().close();
  });
});
