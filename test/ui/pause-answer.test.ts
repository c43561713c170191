/// <reference lib="dom" />
/**
 * A resumed pause's card on the run page says what it was answered, in
 * headless Chromium on both inspectors (`waymark ui` and the plane's): a
 * decision a worker applied (approved, its comment and metadata, who
 * decided, where it was recorded, the writer that resumed the run) and a
 * resume from code (declined, with its metadata, no decision).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane, serveDecisions, type Checkpointer, type Replica } from '../../client/index.js';
import { decide } from '../../client/runtime/decide.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { createKey } from '../../plane/auth.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { launchChromium } from '../helpers/browser.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-pause-answer-');
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

/** Two refunds paused in `store`: `approved` is answered by a decision the worker applies (`record` records it), `fromCode` by a resume from code. */
async function answerBoth(
  store: Checkpointer,
  ledger: Ledger,
  ids: { approved: string; fromCode: string },
  record: (checkpointId: string) => Promise<void>,
  replica?: Replica,
): Promise<void> {
  const { agent } = refundAgent({ store, ledger });
  for (const id of [ids.approved, ids.fromCode])
    expect((await agent.run(refundRequest(id, 5000), { executionId: id })).status).toBe('paused');
  await replica?.flush({ timeoutMs: 10_000 });
  await record((await store.getPendingInterrupt(ids.approved))!.checkpointId);
  const stop = new AbortController();
  const served = serveDecisions({ agent, store, replica, signal: stop.signal, pollMs: 100 });
  try {
    const deadline = Date.now() + 20_000;
    while ((await store.latest(ids.approved))?.status !== 'completed' && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
  } finally {
    stop.abort();
    await served;
  }
  expect((await store.latest(ids.approved))?.status).toBe('completed');
  const declined = await agent.resume(ids.fromCode, { approved: false, metadata: { reason: 'over budget' } });
  expect(declined.status).toBe('completed');
  await replica?.flush({ timeoutMs: 10_000 });
}

/** The pause card's answer on the run page of `id`. */
async function answerOn(page: Page, url: string): Promise<{ text: string; approved: string | null }> {
  await page.goto(url);
  const a = page.locator('section:has(#pause-h) [data-testid=pause-answer]');
  expect(await a.count()).toBe(1);
  return { text: (await a.textContent()) ?? '', approved: await a.getAttribute('data-approved') };
}

describe('a resumed pause on waymark ui', () => {
  let store: SqliteCheckpointer;
  let ui: LocalUi;
  const ids = { approved: 'local-approved', fromCode: 'local-from-code' };

  beforeAll(async () => {
    store = new SqliteCheckpointer({ path: tmp.file('local.db') });
    const ledger = new Ledger(tmp.file('local.jsonl'));
    await answerBoth(store, ledger, ids, async (checkpointId) => {
      await decide(store, ids.approved, {
        approved: true,
        comment: 'fine by me',
        metadata: { ticket: 'T-1' },
        decidedBy: 'alice',
        checkpointId,
      });
    });
    [browser, ui] = await Promise.all([browserLaunch, serveLocalUi(store, { user: 'alice' })]);
  });
  afterAll(async () => {
    await ui?.close();
    await store?.close();
  });

  it('says the decision applied: approved, its comment and metadata, by whom, where, and the writer that resumed it', async () => {
    const page = await (await browser.newContext()).newPage();
    const a = await answerOn(page, `${ui.url}/runs/${ids.approved}`);
    expect(a.approved).toBe('true');
    expect(a.text).toMatch(
      /^Approved by alice at .+ \(recorded in a local store\); the run was resumed with it by writer/,
    );
    expect(a.text).toContain('“fine by me”');
    expect(a.text).toContain('"ticket": "T-1"');
    const d = await answerOn(page, `${ui.url}/runs/${ids.fromCode}`);
    expect(d.approved).toBe('false');
    expect(d.text).toContain('Declined from code (no decision was recorded for it)');
    expect(d.text).toContain('"reason": "over budget"');
    await page.context().close();
  });
});

describe('a resumed pause on the plane inspector', () => {
  let plane: TestPlane;
  let store: SqliteCheckpointer;
  let replica: Replica;
  let readKey = '';
  const ids = { approved: 'plane-approved', fromCode: 'plane-from-code' };

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    const approver = (
      await createKey(plane.database.db, {
        project: 'acme',
        name: 'manager',
        scopes: ['approve', 'read'],
        createProject: true,
      })
    ).key;
    readKey = (await createKey(plane.database.db, { project: 'acme', name: 'auditor', scopes: ['read'] })).key;
    store = new SqliteCheckpointer({ path: tmp.file('plane-side.db') });
    replica = connectPlane(store, { url: plane.url, apiKey: await plane.key('acme', ['ingest', 'read']), pollMs: 0 });
    const ledger = new Ledger(tmp.file('plane.jsonl'));
    await answerBoth(
      store,
      ledger,
      ids,
      async (checkpointId) => {
        const r = await call(`${plane.url}/v1/executions/${ids.approved}/decision`, {
          key: approver,
          json: { checkpointId, approved: true, comment: 'ship it', metadata: { ticket: 'T-2' } },
        });
        expect(r.status).toBe(201);
      },
      replica,
    );
    browser = await browserLaunch;
  });
  afterAll(async () => {
    await replica?.stop();
    await store?.close();
    await plane?.close();
  });

  it('says the decision applied and a resume from code, as the local UI does', async () => {
    const page = await (await browser.newContext({ viewport: { width: 390, height: 900 } })).newPage();
    await page.goto(`${plane.url}/login?next=/`);
    await page.fill('input[name=key]', readKey);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}/`);
    const a = await answerOn(page, `${plane.url}/runs/${ids.approved}`);
    expect(a.approved).toBe('true');
    expect(a.text).toMatch(
      /^Approved by manager at .+ \(recorded on the plane\); the run was resumed with it by writer/,
    );
    expect(a.text).toContain('“ship it”');
    expect(a.text).toContain('"ticket": "T-2"');
    const d = await answerOn(page, `${plane.url}/runs/${ids.fromCode}`);
    expect(d.approved).toBe('false');
    expect(d.text).toContain('Declined from code (no decision was recorded for it)');
    expect(d.text).toContain('"reason": "over budget"');
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.context().close();
  });
});
