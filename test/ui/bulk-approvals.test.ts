/// <reference lib="dom" />
/**
 * Approving from the inbox's list, on the plane's inspector and on `waymark
 * ui`, in headless Chromium over real HTTP: tick two of three pauses and
 * approve them together (one decision each, the application's worker applies
 * them), a row's own Decline, a read-only session (no form, a sentence why),
 * a post without the CSRF token or from another origin (nothing recorded),
 * a post naming pauses that cannot be decided (each listed with its code, the
 * others recorded) and one naming too many (refused whole).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane, serveDecisions, type Checkpointer, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { createKey } from '../../plane/auth.js';
import { csrfOf } from '../../inspector/csrf.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { uuidv7 } from '../../shared/ids.js';
import { LIMITS } from '../../shared/limits.js';
import { launchChromium } from '../helpers/browser.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import { csrfIn } from '../helpers/html.js';

const tmp = scratchDir('waymark-bulk-approvals-');
const post = (url: string, body: URLSearchParams, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', redirect: 'manual', headers, body });

let browserLaunch: Promise<Browser>;
let browser: Browser;
beforeAll(() => {
  browserLaunch = launchChromium();
  browserLaunch.catch(() => {});
});
afterAll(async () => {
  await (await browserLaunch?.catch(() => null))?.close();
  tmp.cleanup();
});

/** Three refunds over the approval threshold, paused in `store`; their ids. */
async function threePaused(store: Checkpointer, ledger: Ledger, prefix: string): Promise<string[]> {
  const { agent } = refundAgent({ store, ledger });
  const ids = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
  for (const [i, id] of ids.entries())
    expect((await agent.run(refundRequest(`${prefix}${i}`, 5000), { executionId: id })).status).toBe('paused');
  return ids;
}

/** Tick the pauses of `pick` in the inbox, write `comment`, press Approve selected; the outcome page. */
async function approveSelected(page: Page, base: string, pick: string[], comment: string): Promise<void> {
  await page.goto(`${base}/approvals`);
  for (const id of pick) await page.check(`[data-testid=pause][data-execution="${id}"] input[name=pause]`);
  await page.fill('[data-testid=bulk-form] textarea[name=comment]', comment);
  await page.click('[data-testid=bulk-form] button[name=approved][value=true]');
  await page.waitForSelector('[data-testid=bulk-summary]');
}

/** Resolves once `check` resolves true (20 s at most). */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(await check()).toBe(true);
}

describe('bulk approvals on the plane inspector', () => {
  let plane: TestPlane;
  let store: SqliteCheckpointer;
  let replica: Replica;
  let ids: string[];
  const keys: Record<string, string> = {};
  const ledger = new Ledger(tmp.file('plane-ledger.jsonl'));

  const session = async (key: string) => {
    const r = await fetch(`${plane.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ key, next: '/' }),
    });
    expect(r.status).toBe(303);
    return r.headers.get('set-cookie')!.split(';')[0];
  };
  const decisions = async () =>
    (await call(`${plane.url}/v1/decisions?after=0&limit=1000`, { key: keys.ingest })).body.items as {
      executionId: string;
      checkpointId: string;
      approved: boolean;
      decidedBy: string;
      metadata: Record<string, unknown>;
    }[];

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    const db = plane.database.db;
    keys.approver = (
      await createKey(db, { project: 'acme', name: 'manager', scopes: ['approve', 'read'], createProject: true })
    ).key;
    keys.reader = (await createKey(db, { project: 'acme', name: 'auditor', scopes: ['read'] })).key;
    keys.ingest = await plane.key('acme', ['ingest', 'read']);
    store = new SqliteCheckpointer({ path: tmp.file('plane-side.db') });
    replica = connectPlane(store, { url: plane.url, apiKey: keys.ingest, pollMs: 0 });
    [ids, browser] = await Promise.all([threePaused(store, ledger, 'plane'), browserLaunch]);
    await replica.flush({ timeoutMs: 10_000 });
  });
  afterAll(async () => {
    await replica?.stop();
    await store?.close();
    await plane?.close();
  });

  it('a read-only session sees the pauses but no checkboxes or buttons, and a sentence why', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${plane.url}/login?next=/approvals`);
    await page.fill('input[name=key]', keys.reader);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}/approvals`);
    expect(await page.locator('[data-testid=pause]').count()).toBe(3);
    expect(await page.locator('[data-testid=bulk-form]').count()).toBe(0);
    expect(await page.locator('input[type=checkbox], [data-testid=row-buttons]').count()).toBe(0);
    expect(await page.textContent('[data-testid=no-bulk-form]')).toContain('no approve scope');
    await context.close();
  });

  it('a post without the CSRF token, or from another origin, records nothing', async () => {
    const cookie = await session(keys.approver);
    const html = await (await fetch(`${plane.url}/approvals`, { headers: { cookie } })).text();
    const csrf = csrfIn(html);
    expect(csrf).not.toBe('');
    const pauses = await Promise.all(ids.map(async (id) => (await store.getPendingInterrupt(id))!));
    const body = (extra: Record<string, string>) => {
      const f = new URLSearchParams({ approved: 'true', ...extra });
      for (const p of pauses) f.append('pause', `${p.checkpointId}:${p.executionId}`);
      return f;
    };
    const none = await post(`${plane.url}/approvals`, body({}), { cookie });
    expect(none.status).toBe(403);
    expect(await none.text()).toContain('CSRF_FAILED');
    const foreign = await post(`${plane.url}/approvals`, body({ csrf }), { cookie, origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    const reader = await session(keys.reader);
    const readerCsrf = csrfOf(reader.slice(reader.indexOf('=') + 1));
    // a read session's own token passes the CSRF check; its scope is checked again on the post
    const forbidden = await post(`${plane.url}/approvals`, body({ csrf: readerCsrf }), { cookie: reader });
    expect(forbidden.status).toBe(403);
    expect(await forbidden.text()).toContain('FORBIDDEN');
    expect(await decisions()).toEqual([]);
  });

  it('a manager ticks two of three pauses and approves them; one decision each, and the worker applies them', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${plane.url}/login?next=/approvals`);
    await page.fill('input[name=key]', keys.approver);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}/approvals`);
    expect(await page.locator('[data-testid=pause] input[name=pause]').count()).toBe(3);
    // the form, its checkboxes and each row's buttons fit a phone's width
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await approveSelected(page, plane.url, [ids[0], ids[1]], 'both fine');
    expect(await page.textContent('[data-testid=bulk-summary]')).toContain('2 decisions recorded (approved)');
    expect(await page.locator('[data-testid=bulk-refused]').count()).toBe(0);
    const recorded = await decisions();
    expect(recorded.map((d) => d.executionId).sort()).toEqual([ids[0], ids[1]]);
    for (const d of recorded)
      expect(d).toMatchObject({ approved: true, decidedBy: 'manager', metadata: { comment: 'both fine' } });

    // the worker of the machine that holds the runs applies both; the third stays paused
    const stop = new AbortController();
    const { agent } = refundAgent({ store, ledger });
    const served = serveDecisions({ agent, store, replica, signal: stop.signal, pollMs: 100 });
    try {
      await until(
        async () =>
          (await store.latest(ids[0]))?.status === 'completed' && (await store.latest(ids[1]))?.status === 'completed',
      );
    } finally {
      stop.abort();
      await served;
    }
    expect(await store.getPendingInterrupt(ids[2])).not.toBeNull();
    expect(
      ledger
        .charges()
        .map((c) => c.order)
        .sort(),
    ).toEqual(['plane0', 'plane1']);
    await context.close();
  });
});

describe('bulk approvals on waymark ui', () => {
  let store: SqliteCheckpointer;
  let ui: LocalUi;
  let ids: string[];
  const ledger = new Ledger(tmp.file('local-ledger.jsonl'));

  beforeAll(async () => {
    store = new SqliteCheckpointer({ path: tmp.file('local.db') });
    [ids, browser] = await Promise.all([threePaused(store, ledger, 'local'), browserLaunch]);
    ui = await serveLocalUi(store, { user: 'alice' });
  });
  afterAll(async () => {
    await ui?.close();
    await store?.close();
  });

  it('tick two of three, approve; decline the third from its row; the worker applies all three', async () => {
    const page = await (await browser.newContext()).newPage();
    await approveSelected(page, ui.url, [ids[0], ids[2]], 'ok by me');
    expect(await page.textContent('[data-testid=bulk-summary]')).toContain('2 decisions recorded (approved)');
    for (const id of [ids[0], ids[2]])
      expect(await store.getDecision(id, (await store.getPendingInterrupt(id))!.checkpointId)).toMatchObject({
        approved: true,
        decidedBy: 'alice',
        source: 'local',
        metadata: { comment: 'ok by me' },
      });
    expect((await store.listDecisions({ limit: 10 })).items).toHaveLength(2);

    // the inbox no longer offers the decided ones; the third's own Decline
    await page.goto(`${ui.url}/approvals`);
    expect(await page.locator('input[name=pause]').count()).toBe(1);
    await page.click(`[data-testid=pause][data-execution="${ids[1]}"] button[name=one][value^="false:"]`);
    await page.waitForSelector('[data-testid=bulk-summary]');
    expect(await page.textContent('[data-testid=bulk-summary]')).toContain('1 decision recorded (declined)');

    const stop = new AbortController();
    const { agent } = refundAgent({ store, ledger });
    const served = serveDecisions({ agent, store, signal: stop.signal, pollMs: 100 });
    try {
      await until(async () => {
        const s = await Promise.all(ids.map(async (id) => (await store.latest(id))?.status));
        return s.every((x) => x === 'completed');
      });
    } finally {
      stop.abort();
      await served;
    }
    expect(
      ledger
        .charges()
        .map((c) => c.order)
        .sort(),
    ).toEqual(['local0', 'local2']);
  });

  it('a post naming pauses that cannot be decided lists each with its code and records the others', async () => {
    const { agent } = refundAgent({ store, ledger });
    expect((await agent.run(refundRequest('local9', 5000), { executionId: 'local-d' })).status).toBe('paused');
    const open = (await store.getPendingInterrupt('local-d'))!;
    const closed = (await store.listDecisions({ limit: 10 })).items.find((d) => d.executionId === ids[0])!;
    const html = await (await fetch(`${ui.url}/approvals`)).text();
    const f = new URLSearchParams({ csrf: csrfIn(html), approved: 'false' });
    f.append('pause', `${closed.checkpointId}:${ids[0]}`); // decided and applied
    f.append('pause', `${uuidv7()}:no-such-run`); // not found
    f.append('pause', 'not-a-pause'); // not a pause's key
    f.append('pause', `${open.checkpointId}:local-d`);
    const r = await post(`${ui.url}/approvals`, f);
    expect(r.status).toBe(200);
    const body = await r.text();
    expect(body).toContain('1 decision recorded (declined); 3 not recorded');
    for (const code of ['ALREADY_DECIDED', 'PAUSE_NOT_FOUND', 'INVALID_DECISION'])
      expect(body).toContain(`data-code="${code}"`);
    expect(await store.getDecision('local-d', open.checkpointId)).toMatchObject({ approved: false });
    expect((await store.listDecisions({ limit: 10 })).items).toHaveLength(4);
  });

  it(`more than LIMITS.bulkDecisions pauses in one post are refused whole (TOO_MANY_PAUSES)`, async () => {
    const { agent } = refundAgent({ store, ledger });
    expect((await agent.run(refundRequest('local8', 5000), { executionId: 'local-e' })).status).toBe('paused');
    const open = (await store.getPendingInterrupt('local-e'))!;
    const html = await (await fetch(`${ui.url}/approvals`)).text();
    const f = new URLSearchParams({ csrf: csrfIn(html), approved: 'true' });
    f.append('pause', `${open.checkpointId}:local-e`);
    for (let i = 0; i < LIMITS.bulkDecisions; i++) f.append('pause', `${uuidv7()}:other-${i}`);
    const r = await post(`${ui.url}/approvals`, f);
    expect(r.status).toBe(400);
    expect(await r.text()).toContain('TOO_MANY_PAUSES');
    expect(await store.getDecision('local-e', open.checkpointId)).toBeNull();
    // and without the token, or from another origin: nothing
    const forged = new URLSearchParams({ approved: 'true', pause: `${open.checkpointId}:local-e` });
    expect((await post(`${ui.url}/approvals`, forged)).status).toBe(403);
    forged.set('csrf', csrfIn(html));
    expect((await post(`${ui.url}/approvals`, forged, { origin: 'http://evil.example' })).status).toBe(403);
    expect(await store.getDecision('local-e', open.checkpointId)).toBeNull();
  });
});
