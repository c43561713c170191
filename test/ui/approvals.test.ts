/// <reference lib="dom" />
/**
 * Approvals in the inspector, end to end with real processes and
 * headless Chromium:
 * - plane: a refund pauses on a "laptop" child process connected to a real
 *   plane and running the decision worker; a manager logs in with an
 *   `approve` key, opens Pending approvals, approves with a comment; the
 *   laptop's worker applies it; one charge; the pages show it applied by the
 *   laptop's writer;
 * - local: `waymark ui --db` (the real binary) approve → a worker process
 *   applies it → completed, no plane;
 * - bad input through the form: no CSRF token or a foreign Origin (403),
 *   a second decision (409 naming the first), a read key (no form; a forged
 *   post refused), another project's pause (404), a bad field (400): each
 *   records nothing.
 * Screenshots go to test-output/ui-screenshots/ (docs/img's pictures are
 * `npm run screenshots`').
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { createKey } from '../../plane/auth.js';
import { csrfOf } from '../../inspector/csrf.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { BIN, ROOT } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';
import { csrfIn } from '../helpers/html.js';

const LAPTOP = fileURLToPath(new URL('./approvals-laptop-child.ts', import.meta.url));
const WORKER = fileURLToPath(new URL('../decisions/worker-child.ts', import.meta.url));
const tmp = scratchDir('waymark-approvals-ui-');

type Msg = { type: string; [k: string]: unknown };

/** A screenshot's path in test-output/. */
const shotPath = (name: string) => join(SHOTS, `${name}.png`);

async function session(url: string, key: string): Promise<string> {
  const r = await fetch(`${url}/login`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ key, next: '/' }),
  });
  expect(r.status).toBe(303);
  return r.headers.get('set-cookie')!.split(';')[0];
}
const post = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', redirect: 'manual', headers, body: new URLSearchParams(body) });

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const stopped = nextMessage<Msg>(child, (m) => m.type === 'stopped').catch(() => null);
  child.send({ type: 'stop' });
  await stopped;
  if (child.exitCode === null) await once(child, 'exit');
}

/** Resolves once `cond` holds, checked every 20 ms (60 s at most). */
async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(cond()).toBe(true);
}

/** The page has no horizontal overflow at its current width. */
async function fitsWidth(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

/** One Chromium for the file, launched while each describe starts its processes (each awaits it). */
let browserLaunch: Promise<Browser>;
let browser: Browser;
beforeAll(() => {
  mkdirSync(SHOTS, { recursive: true });
  browserLaunch = launchChromium();
  // a failed launch fails the describes that await it, not the process
  browserLaunch.catch(() => {});
});
afterAll(async () => {
  await (await browserLaunch?.catch(() => null))?.close();
  tmp.cleanup();
});

describe('approvals on the plane inspector', () => {
  let plane: TestPlane;
  // the laptop reaches the plane through a proxy: cutting it off is the laptop going offline
  let proxy: FaultProxy;
  let laptop: ChildProcess;
  // a second machine of the same project, for the race (it holds only the run it restores)
  let other: ChildProcess;
  let ledger: Ledger;
  const keys: Record<string, string> = {};
  let feedKey = '';

  /** A laptop process on `db`; resolves once it listens (its `ready`). */
  const startLaptop = async (db: string, url: string) => {
    const child = forkTs(LAPTOP, [db, ledger.path, url, keys.laptop]);
    child.stderr?.on('data', (d) => process.stderr.write(d));
    await nextMessage<Msg>(child, (m) => m.type === 'ready');
    return child;
  };

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    proxy = await new FaultProxy(plane.url).start();
    const db = plane.database.db;
    keys.approver = (
      await createKey(db, { project: 'acme', name: 'manager', scopes: ['approve'], createProject: true })
    ).key;
    keys.reader = (await createKey(db, { project: 'acme', name: 'auditor', scopes: ['read'] })).key;
    keys.admin = (await createKey(db, { project: 'acme', name: 'owner', scopes: ['admin'] })).key;
    keys.rival = (
      await createKey(db, { project: 'rival', name: 'rival manager', scopes: ['approve', 'read'], createProject: true })
    ).key;
    feedKey = keys.laptop = await plane.key('acme', ['ingest', 'read']);
    // both machines charge into one ledger (each charge names its order, the run's id, and its process)
    ledger = new Ledger(tmp.file('laptop.jsonl'));
    // the machines and the browser start at once: their start-ups overlap
    [laptop, other, browser] = await Promise.all([
      startLaptop(tmp.file('laptop.db'), proxy.url),
      startLaptop(tmp.file('other.db'), plane.url),
      browserLaunch,
    ]);
  });
  afterAll(async () => {
    await Promise.all([laptop, other].filter(Boolean).map(stopChild));
    await proxy?.close();
    await plane?.close();
  });

  const pauseOn = async (child: ChildProcess, executionId: string) => {
    const paused = nextMessage<Msg>(child, (m) => m.type === 'paused');
    child.send({ type: 'run', executionId });
    const m = await paused;
    expect(m.status).toBe('paused');
    return m as Msg & { checkpointId: string; writerId: string };
  };
  const pauseOnLaptop = (executionId: string) => pauseOn(laptop, executionId);
  const decisions = async () =>
    (await call(`${plane.url}/v1/decisions?after=0&limit=1000`, { key: feedKey })).body.items as {
      decisionId: string;
      executionId: string;
      approved: boolean;
      decidedBy: string;
    }[];

  /** A manager logs in with `key`, opens the pause from Pending approvals and approves it with `comment`; the run page after the post. */
  const approveInBrowser = async (key: string, manager: string, id: string, comment: string): Promise<Page> => {
    const page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    await page.goto(`${plane.url}/login?next=/approvals`);
    await page.fill('input[name=key]', key);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}/approvals`);
    const card = page.locator(`[data-testid=pause][data-execution="${id}"]`);
    expect(await card.textContent()).toContain('No decision yet.');
    await card.locator('a[href^="/runs/"]').click();
    await page.waitForURL(new RegExp(`/runs/${id}`));
    await page.fill('textarea[name=comment]', comment);
    await page.click('button[name=approved][value=true]');
    await page.waitForURL(new RegExp(`/runs/${id}#decisions-h$`));
    expect(await page.textContent('[data-testid=decided-by]')).toBe(manager);
    return page;
  };

  /** The run page and the inbox show the one decision applied by `writerId`, and the run completed. */
  const expectShownApplied = async (page: Page, id: string, decisionId: string, writerId: string) => {
    await page.goto(`${plane.url}/runs/${id}`);
    const shown = page.locator('[data-testid=run-approvals] [data-testid=decision]');
    expect(await shown.count()).toBe(1);
    expect(await shown.getAttribute('data-state')).toBe('applied');
    expect(await shown.locator('[data-testid=applied-by] .writer').getAttribute('title')).toBe(writerId);
    expect(await page.textContent('h1')).toContain('completed');
    await page.goto(`${plane.url}/approvals`);
    expect(await page.locator(`[data-testid=pause][data-execution="${id}"]`).count()).toBe(0);
    const row = page.locator(`tr[data-decision="${decisionId}"]`);
    expect(await row.getAttribute('data-state')).toBe('applied');
    expect(await row.locator('td').last().locator('[title]').getAttribute('title')).toBe(writerId);
  };

  it('a manager approves from Pending approvals; the laptop worker applies it once; the pages show it applied by the laptop writer', async () => {
    const id = `refund-${Date.now().toString(36)}`;
    const pause = await pauseOnLaptop(id);

    const page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    await page.goto(`${plane.url}/login?next=/approvals`);
    await page.fill('input[name=key]', keys.approver);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}/approvals`);
    const card = page.locator(`[data-testid=pause][data-execution="${id}"]`);
    expect(await card.textContent()).toContain('manager_approval');
    expect(await card.locator('[data-testid=age]').textContent()).toMatch(/^paused \d+ seconds? ago$/);
    expect(await card.locator('pre').textContent()).toContain('9000');
    expect(await card.textContent()).toContain('No decision yet.');
    await page.screenshot({ path: shotPath('approvals-inbox'), fullPage: true });

    await card.locator(`a[href^="/runs/"]`).click();
    // the inbox lands on the pause (reason and context), the form below it
    await page.waitForURL(new RegExp(`/runs/${id}#pause-h$`));
    await page.fill('textarea[name=comment]', 'Within policy: customer has a receipt.');
    // the pause with its context, and the form under it
    await page.evaluate(() => window.scrollTo(0, 0)); // bounding boxes are of the viewport; the clip of a full page is of the page
    const top = (await page.locator('section[aria-labelledby=pause-h]').boundingBox())!;
    const bottom = (await page.locator('[data-testid=decision-form]').boundingBox())!;
    await page.screenshot({
      path: shotPath('approve-form'),
      fullPage: true,
      clip: { x: 0, y: top.y - 8, width: 1100, height: bottom.y + bottom.height - top.y + 16 },
    });
    const outcome = nextMessage<Msg>(laptop, (m) => m.type === 'outcome');
    await page.click('button[name=approved][value=true]');
    await page.waitForURL(new RegExp(`/runs/${id}#decisions-h$`));
    // the redirect after the post: the decision shown, the form gone
    expect(await page.locator('[data-testid=decision-form]').count()).toBe(0);
    expect(await page.textContent('[data-testid=decided-by]')).toBe('manager');

    const o = await outcome;
    expect(o).toMatchObject({ outcome: 'applied', status: 'completed' });
    expect(ledger.charges().filter((c) => c.order === id)).toHaveLength(1);

    await page.reload();
    const shown = page.locator('[data-testid=run-approvals] [data-testid=decision]');
    expect(await shown.getAttribute('data-state')).toBe('applied');
    expect(await shown.locator('[data-testid=applied-by] .writer').getAttribute('title')).toBe(pause.writerId);
    expect(await shown.textContent()).toContain('Within policy: customer has a receipt.');
    expect(await page.textContent('h1')).toContain('completed');

    await page.goto(`${plane.url}/approvals`);
    expect(await page.locator(`[data-testid=pause][data-execution="${id}"]`).count()).toBe(0);
    const row = page.locator(`tr[data-decision="${String(o.decisionId)}"]`);
    expect(await row.getAttribute('data-state')).toBe('applied');
    expect(await row.textContent()).toContain('manager');
    expect(await row.textContent()).not.toContain('in a local store');

    // a phone: no horizontal overflow on the inbox and the form
    const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    await phone.goto(`${plane.url}/login?next=/approvals`);
    await phone.fill('input[name=key]', keys.approver);
    await phone.click('button[type=submit]');
    await phone.waitForURL(`${plane.url}/approvals`);
    expect(await fitsWidth(phone)).toBe(true);
    // the decisions table stacks at phone width: 'Applied by' is on screen, nothing scrolls out of its box
    expect(await phone.$$eval('.table-wrap', (ws) => ws.map((w) => w.scrollWidth - w.clientWidth))).toEqual([0]);
    expect(await phone.locator('td[data-label="Applied by"]').first().isVisible()).toBe(true);
    // an approve session's nav offers only what it may open: no Keys (its page is admin-only)
    // (each link's own words: the approvals link also says how many pauses wait)
    expect(await phone.locator('nav a').evaluateAll((as) => as.map((a) => a.firstChild!.textContent))).toEqual([
      'Runs',
      'Pending approvals',
      'Quarantine',
      'Writers',
    ]);
    const next = `phone-${Date.now().toString(36)}`;
    await pauseOnLaptop(next);
    await phone.goto(`${plane.url}/runs/${next}`);
    expect(await phone.locator('[data-testid=decision-form]').count()).toBe(1);
    expect(await fitsWidth(phone)).toBe(true);
    await phone.goto(`${plane.url}/approvals`);
    expect(await fitsWidth(phone)).toBe(true);
    await phone.screenshot({ path: shotPath('approvals-inbox-phone'), fullPage: true });
    await phone.context().close();
    await page.context().close();
  });

  it('bad input through the form records nothing and says why', async () => {
    const id = `bad-${Date.now().toString(36)}`;
    const pause = await pauseOnLaptop(id);
    const target = `${plane.url}/runs/${id}/decision`;
    const approver = await session(plane.url, keys.approver);
    const html = await (await fetch(`${plane.url}/runs/${id}`, { headers: { cookie: approver } })).text();
    const csrf = csrfIn(html);
    expect(csrf).not.toBe('');
    const before = (await decisions()).length;
    const ok = { checkpointId: pause.checkpointId, approved: 'true', comment: 'fine' };

    // no token, a forged one, another origin: 403 CSRF_FAILED
    for (const [body, headers] of [
      [ok, {}],
      [{ ...ok, csrf: 'forged' }, {}],
      [{ ...ok, csrf }, { origin: 'http://evil.example' }],
    ] as const) {
      const r = await post(target, body, { cookie: approver, ...headers });
      expect(r.status).toBe(403);
      expect(await r.text()).toContain('CSRF_FAILED');
    }
    // a GET changes nothing (there is no GET of the form's target)
    expect(
      (await fetch(`${target}?approved=true&checkpointId=${pause.checkpointId}`, { headers: { cookie: approver } }))
        .status,
    ).toBe(404);
    // bad fields: 400 naming each, with the code a decision's body gets everywhere
    const bad = await post(
      target,
      { csrf, checkpointId: pause.checkpointId, approved: 'maybe', extra: '1' },
      { cookie: approver },
    );
    expect(bad.status).toBe(400);
    const badText = await bad.text();
    expect(badText).toContain('INVALID_DECISION');
    expect(badText).toContain('unknown field');
    expect(badText).toContain('approved:');
    // a pause id that cannot be one is named beside the other problems, not found out after them (newcomer run)
    const both = await (
      await post(target, { csrf, checkpointId: 'zzz', approved: 'maybe' }, { cookie: approver })
    ).text();
    expect(both).toContain('INVALID_DECISION');
    expect(both).toContain('checkpointId: not a pause&#39;s id');
    expect(both).toContain('approved:');

    // a read key: no form, and a forged post with its own session's token is refused
    const reader = await session(plane.url, keys.reader);
    const readerHtml = await (await fetch(`${plane.url}/runs/${id}`, { headers: { cookie: reader } })).text();
    expect(readerHtml).not.toContain('data-testid="decision-form"');
    expect(readerHtml).toContain('no approve scope');
    const readerCsrf = csrfOf(reader.split('=')[1]);
    const forged = await post(target, { ...ok, csrf: readerCsrf }, { cookie: reader });
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain('FORBIDDEN');

    // an admin key decides through the API (every scope of its project): its session gets the form (its own run, so the
    // decision recorded below by the approver stays this test's), and its post records a decision under the key's name
    const adminId = `admin-${Date.now().toString(36)}`;
    const adminPause = await pauseOnLaptop(adminId);
    const admin = await session(plane.url, keys.admin);
    const adminHtml = await (await fetch(`${plane.url}/runs/${adminId}`, { headers: { cookie: admin } })).text();
    expect(adminHtml).toContain('data-testid="decision-form"');
    expect(adminHtml).not.toContain('no approve scope');
    const byAdmin = await post(
      `${plane.url}/runs/${adminId}/decision`,
      { csrf: csrfIn(adminHtml), checkpointId: adminPause.checkpointId, approved: 'true', comment: 'as owner' },
      { cookie: admin },
    );
    expect(byAdmin.status).toBe(303);
    expect((await decisions()).find((d) => d.executionId === adminId)).toMatchObject({
      approved: true,
      decidedBy: 'owner',
    });

    // another project's session: the run is not there, and its pause is 404
    const rival = await session(plane.url, keys.rival);
    expect((await fetch(`${plane.url}/runs/${id}`, { headers: { cookie: rival } })).status).toBe(404);
    const rivalCsrf = csrfOf(rival.split('=')[1]);
    const foreign = await post(target, { ...ok, csrf: rivalCsrf }, { cookie: rival });
    expect(foreign.status).toBe(404);
    expect(await foreign.text()).toContain('PAUSE_NOT_FOUND');
    // nothing recorded but the admin session's decision above
    expect(await decisions()).toHaveLength(before + 1);

    // the first decision is recorded; a second is 409 naming the first
    const first = await post(target, { ...ok, csrf }, { cookie: approver });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe(`/runs/${id}#decisions-h`);
    const second = await post(target, { ...ok, approved: 'false', csrf }, { cookie: approver });
    expect(second.status).toBe(409);
    const secondText = await second.text();
    expect(secondText).toContain('ALREADY_DECIDED');
    expect(secondText).toContain('already decided by &#39;manager&#39;');
    // the first decision's time in the message is shown as the cards show times (local time, UTC on hover), not raw ISO
    expect(secondText).toMatch(
      /already decided by &#39;manager&#39; at <time datetime="[^"]+Z" data-local="absolute">[^<]+ UTC<\/time>/,
    );
    expect(secondText).toContain('data-testid="decision"');
    const mine = (await decisions()).filter((d) => d.executionId === id);
    expect(mine).toHaveLength(1);
    // the laptop applies it (and the pause is then closed: a late decision is PAUSE_CLOSED or ALREADY_DECIDED, never recorded)
    await nextMessage<Msg>(
      laptop,
      (m) => m.type === 'outcome' && m.decisionId === (mine[0] as { decisionId: string }).decisionId,
    );
  });

  it('a laptop offline when the manager approves applies the decision once it is back online: one charge; the pages show it applied by the laptop writer', async () => {
    const id = `offline-${Date.now().toString(36)}`;
    const pause = await pauseOnLaptop(id);
    // the laptop loses its network: its connections drop (the held long poll too) and new ones are reset
    proxy.rule = () => 'reset';
    for (const s of proxy.sockets) s.destroy();
    try {
      const page = await approveInBrowser(keys.approver, 'manager', id, 'Approved while the laptop was offline.');
      const decidedAt = Date.now();
      // the laptop asked for decisions after this one was recorded, and did not get through
      await until(() =>
        proxy.seen.some((r) => /^\/v1\/(writer-)?decisions\?/.test(r.path) && r.fault === 'reset' && r.at > decidedAt),
      );
      expect(await page.locator('[data-testid=run-approvals] [data-testid=decision]').getAttribute('data-state')).toBe(
        'pending',
      );
      expect(ledger.charges().filter((c) => c.order === id)).toHaveLength(0);

      // back online: the laptop's worker gets the decision on its next ask and applies it
      const outcome = nextMessage<Msg>(laptop, (m) => m.type === 'outcome' && m.executionId === id);
      proxy.rule = null;
      const o = await outcome;
      expect(o).toMatchObject({ outcome: 'applied', status: 'completed', writerId: pause.writerId });
      expect(ledger.charges().filter((c) => c.order === id)).toMatchObject([{ pid: laptop.pid }]);
      await expectShownApplied(page, id, String(o.decisionId), pause.writerId);
      await page.context().close();
    } finally {
      proxy.rule = null;
    }
  });

  it('two machines race the decision made in the browser: one applies it, the other sees it applied; one charge in all; the pages show one applier', async () => {
    const id = `race-${Date.now().toString(36)}`;
    await pauseOnLaptop(id);
    // the other machine holds the run too: restored from the plane with its open pause
    const restored = nextMessage<Msg>(other, (m) => m.type === 'restored');
    other.send({ type: 'restore', executionId: id });
    expect(await restored).toMatchObject({ pendingImported: true });

    const both = [laptop, other];
    // each worker holds the decision once it has read it as pending: neither claims before both have
    await Promise.all(
      both.map((c) => {
        const holding = nextMessage<Msg>(c, (m) => m.type === 'holding');
        c.send({ type: 'hold', executionId: id });
        return holding;
      }),
    );
    const held = both.map((c) => nextMessage<Msg>(c, (m) => m.type === 'held'));
    // the loser may first meet the winner's claim before it is applied: 'failed', tried again, then applied_elsewhere
    const settled = both.map((c) =>
      nextMessage<Msg>(c, (m) => m.type === 'outcome' && m.executionId === id && m.outcome !== 'failed'),
    );
    const page = await approveInBrowser(keys.approver, 'manager', id, 'Approved; whichever machine gets there.');
    const [ha, hb] = await Promise.all(held);
    expect(hb.decisionId).toBe(ha.decisionId);
    for (const c of both) c.send({ type: 'go', decisionId: ha.decisionId });

    const outcomes = await Promise.all(settled);
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['applied', 'applied_elsewhere']);
    const w = outcomes.findIndex((o) => o.outcome === 'applied');
    const [winner, loser] = [outcomes[w], outcomes[1 - w]];
    expect(winner).toMatchObject({ status: 'completed', decisionId: ha.decisionId });
    expect(loser).toMatchObject({ decisionId: ha.decisionId, appliedBy: winner.writerId });
    expect(loser.writerId).not.toBe(winner.writerId);
    // one charge in all, by the winner's process
    expect(ledger.charges().filter((c) => c.order === id)).toMatchObject([{ pid: both[w].pid }]);
    await expectShownApplied(page, id, String(ha.decisionId), String(winner.writerId));
    await page.context().close();
  });
});

interface Ui {
  url: string;
  stop(): Promise<void>;
}

/** `waymark ui` (the real binary) as a child process, once it says where it listens. */
async function startUi(args: string[]): Promise<Ui> {
  const child = spawn(process.execPath, [BIN, 'ui', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', () => {
      const m = /listening on (http:\/\/\S+?)\/? /.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`waymark ui exited (${code}): ${out}`)));
  });
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('approvals in the local UI (waymark ui --db), no plane', () => {
  beforeAll(async () => {
    browser = await browserLaunch;
  });
  it('approve in the browser → a worker process applies it → completed with one charge; CSRF and Origin guarded', async () => {
    const file = tmp.file('local.db');
    const ledger = new Ledger(tmp.file('local.jsonl'));
    const store = new SqliteCheckpointer({ path: file });
    const id = `local-${Date.now().toString(36)}`;
    const pause = (await refundAgent({ store, ledger }).agent.run(refundRequest('L-1', 4200), { executionId: id }))
      .pendingInterrupt!;
    await store.close();

    const ui = await startUi(['--db', file, '--port', '0', '--user', 'alice']);
    const worker = forkTs(WORKER, [file, ledger.path]);
    try {
      // the guards first: no token, a foreign origin
      const html = await (await fetch(`${ui.url}/runs/${id}`)).text();
      const csrf = csrfIn(html);
      expect(csrf).not.toBe('');
      const target = `${ui.url}/runs/${id}/decision`;
      expect((await post(target, { checkpointId: pause.checkpointId, approved: 'true' })).status).toBe(403);
      expect(
        (
          await post(
            target,
            { checkpointId: pause.checkpointId, approved: 'true', csrf },
            { origin: 'http://evil.example' },
          )
        ).status,
      ).toBe(403);
      expect((await fetch(`${ui.url}/runs/${id}`, { method: 'POST' })).status).toBe(405);

      const page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
      await page.goto(`${ui.url}/approvals`);
      const card = page.locator(`[data-testid=pause][data-execution="${id}"]`);
      expect(await page.textContent('[data-testid=recording-as]')).toBe('recording decisions as alice');
      expect(await card.textContent()).toContain('No decision yet.');
      await page.screenshot({ path: shotPath('local-approvals-inbox'), fullPage: true });
      await card.locator('a[href^="/runs/"]').click();
      await page.fill('textarea[name=comment]', 'ok from my laptop');
      const outcome = nextMessage<Msg>(worker, (m) => m.type === 'outcome');
      await page.click('button[name=approved][value=true]');
      await page.waitForURL(new RegExp(`/runs/${id}#decisions-h$`));
      expect(await page.textContent('[data-testid=decided-by]')).toBe('alice');
      expect(await outcome).toMatchObject({ outcome: 'applied', status: 'completed' });
      expect(ledger.charges()).toHaveLength(1);

      await page.reload();
      const shown = page.locator('[data-testid=run-approvals] [data-testid=decision]');
      expect(await shown.getAttribute('data-state')).toBe('applied');
      const check = new SqliteCheckpointer({ path: file });
      const stored = await check.getDecision(id, pause.checkpointId);
      await check.close();
      expect(stored).toMatchObject({
        state: 'applied',
        decidedBy: 'alice',
        source: 'local',
        metadata: { comment: 'ok from my laptop' },
      });
      expect(await shown.locator('[data-testid=applied-by] .writer').getAttribute('title')).toBe(stored!.appliedBy);
      expect(await page.textContent('h1')).toContain('completed');
      // a second decision for the answered pause: refused, nothing recorded
      const again = await post(target, { checkpointId: pause.checkpointId, approved: 'false', csrf });
      expect(again.status).toBe(409);
      expect(await again.text()).toContain('ALREADY_DECIDED');

      // a pause answered from code while the form was open: 409 PAUSE_CLOSED naming the claim, nothing recorded
      const other = `closed-${Date.now().toString(36)}`;
      const code = new SqliteCheckpointer({ path: file });
      const codeLedger = new Ledger(tmp.file('code.jsonl'));
      const { agent } = refundAgent({ store: code, ledger: codeLedger });
      const open = (await agent.run(refundRequest('L-2', 4300), { executionId: other })).pendingInterrupt!;
      const formHtml = await (await fetch(`${ui.url}/runs/${other}`)).text();
      expect(formHtml).toContain('data-testid="decision-form"');
      expect((await agent.resume(other, { approved: true })).status).toBe('completed');
      const late = await post(`${ui.url}/runs/${other}/decision`, {
        checkpointId: open.checkpointId,
        approved: 'false',
        csrf: csrfIn(formHtml),
      });
      expect(late.status).toBe(409);
      const lateText = await late.text();
      expect(lateText).toContain('PAUSE_CLOSED');
      expect(lateText).toContain(code.writerId);
      expect(await code.getDecision(other, open.checkpointId)).toBeNull();
      // another run's decided pause named on this run's form, or on a run not in the store: 404 PAUSE_NOT_FOUND, never a 500, never the other run's decision
      for (const run of [other, 'no-such-run']) {
        const foreign = await post(`${ui.url}/runs/${run}/decision`, {
          checkpointId: pause.checkpointId,
          approved: 'false',
          csrf: csrfIn(formHtml),
        });
        expect(foreign.status, run).toBe(404);
        const text = await foreign.text();
        expect(text).toContain('PAUSE_NOT_FOUND');
        expect(text).not.toContain('ok from my laptop');
      }
      expect((await code.listDecisions({ executionId: other })).items).toEqual([]);
      await code.close();
      await page.context().close();
    } finally {
      await stopChild(worker);
      await ui.stop();
    }
  });
});
