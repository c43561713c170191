/// <reference lib="dom" />
/**
 * Both web UIs as an attacker meets them, over real HTTP on 127.0.0.1 and in
 * headless Chromium: the local UI (`serveLocalUi`, what `waymark ui` serves)
 * and the plane's inspector.
 * - CSRF: a page of another origin (a form it submits, a no-cors fetch, a
 *   sandboxed frame whose Origin is `null`) records nothing, even holding the
 *   form's token; GET and other methods change nothing.
 * - DNS rebinding: a server without a login (the local UI, the plane's
 *   `--dev`) answers only to a loopback Host with its own port.
 * - XSS: markup in run ids, messages, tool arguments, pause reasons and
 *   context, error texts, quarantine reasons, decision comments, key and
 *   user names and writer ids stays inert text on every page.
 * - Headers: every page refuses framing and sniffing and sends no referrer.
 * - Auth: another project's runs, pauses and writers are not there for a
 *   session; a read key cannot decide; a revoked key's session and a logged
 *   out session open nothing.
 * - Open redirect: the login's `next` never leaves the plane.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import pino from 'pino';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, connectPlane, interrupt, ScriptedModel, tool, type Checkpointer } from '../../client/index.js';
import { decide } from '../../client/runtime/decide.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { createPlaneApp } from '../../plane/app.js';
import { createKey, revokeKey } from '../../plane/auth.js';
import { uuidv7 } from '../../shared/ids.js';
import { launchChromium } from '../helpers/browser.js';
import { call, openTestPlaneDatabase, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import { csrfIn } from '../helpers/html.js';

/** Markup that runs script if any page renders it as HTML (an element, an attribute breakout, a closing script tag). */
const X = `</script><script>window.__xss=1</script>"'><img src=x onerror="window.__xss=2"><svg onload="window.__xss=3">`;
/** The same in an id (ids are printable text of bounded length). */
const XID = `<img src=x onerror=window.__xss=4>`;

const tmp = scratchDir('waymark-security-');
const checkpointIn = (html: string) => /name="checkpointId" value="([^"]+)"/.exec(html)?.[1] ?? '';
const form = (body: Record<string, string>) => new URLSearchParams(body);

/** A request with headers fetch does not let us set (Host, Sec-Fetch-Site, Origin: null), over node:http. */
function raw(
  url: string,
  o: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: o.method ?? 'GET', headers: o.headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}
const formPost = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  raw(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: form(body).toString(),
  });

/** An agent whose every part a person reads carries markup: messages, tool arguments, the pause reason and context, the answer. */
function hostileAgent(store: Checkpointer): Agent {
  const lookup = tool({
    name: 'lookup',
    description: 'look something up',
    parameters: z.object({ q: z.string() }),
    execute: ({ q }) => {
      const d = interrupt(`approve ${X}`, { note: X, q });
      return d.approved ? `ok ${X}` : `declined ${X}`;
    },
  });
  return new Agent({
    name: 'hostile-bot',
    model: new ScriptedModel(({ turn }) =>
      turn === 0
        ? { content: `thinking ${X}`, toolCalls: [{ name: 'lookup', arguments: { q: X } }] }
        : { content: `done ${X}` },
    ),
    tools: [lookup],
    checkpointer: store,
  });
}

/** A failed run (its error text carries markup) and a paused one, in `store`; the paused run's pause. */
async function seedHostile(store: Checkpointer, paused: string, failed: string): Promise<void> {
  expect((await hostileAgent(store).run(`please ${X}`, { executionId: paused })).status).toBe('paused');
  const broken = new Agent({
    name: 'broken-bot',
    model: new ScriptedModel(() => {
      throw new Error(`upstream said ${X}`);
    }),
    tools: [],
    checkpointer: store,
  });
  expect((await broken.run(`hello ${X}`, { executionId: failed })).status).toBe('failed');
}

/** Nothing of the page's data became markup: no injected element, handler or script ran. */
async function expectInert(page: Page, where: string): Promise<void> {
  const found = await page.evaluate(() => ({
    xss: (window as unknown as { __xss?: number }).__xss ?? null,
    imgs: document.querySelectorAll('img, svg[onload], iframe, object, embed').length,
    scripts: [...document.querySelectorAll('script')].map((s) => s.getAttribute('src')),
    handlers: [...document.querySelectorAll('*')].flatMap((e) =>
      [...e.attributes].filter((a) => a.name.startsWith('on')).map((a) => `${e.tagName}@${a.name}`),
    ),
    base: document.querySelectorAll('base, meta[http-equiv]:not([http-equiv="refresh"])').length,
  }));
  expect(found, where).toEqual({
    xss: null,
    imgs: 0,
    scripts: ['/ui/local-time.js', '/ui/shortcuts.js'],
    handlers: [],
    base: 0,
  });
}

/** The secure headers every HTML page must carry. */
function expectSecureHeaders(h: Record<string, string | string[] | undefined>, where: string): void {
  expect(String(h['content-type']), where).toMatch(/^text\/html/);
  expect(String(h['content-security-policy']), where).toMatch(/frame-ancestors 'none'/);
  expect(String(h['content-security-policy']), where).toMatch(/default-src 'none'/);
  expect(String(h['content-security-policy']), where).toMatch(/script-src 'self'(;|$)/);
  expect(String(h['x-frame-options']), where).toMatch(/^(DENY|SAMEORIGIN)$/);
  expect(h['x-content-type-options'], where).toBe('nosniff');
  expect(h['referrer-policy'], where).toBe('no-referrer');
  // a page shows a run's content: never kept in the browser's cache (Back after logout)
  expect(h['cache-control'], where).toBe('no-store');
}

/** An attacker's site on another origin (another port of 127.0.0.1: another origin, the same site); serves `pages[path]`. */
async function attackerSite(): Promise<{ url: string; pages: Map<string, string>; close(): Promise<void> }> {
  const pages = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const body = pages.get(req.url ?? '');
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(body ?? 'not here');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pages,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The attacker's page: it submits a decision form to `target` (in a frame of its own, or sandboxed: Origin null) and fires a no-cors fetch. */
const attackPage = (target: string, fields: Record<string, string>, o: { sandboxed?: boolean } = {}) => {
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${k}" value="${v.replace(/"/g, '&quot;')}">`)
    .join('');
  const formHtml = `<form id="f" method="post" action="${target}">${inputs}</form><script>document.getElementById('f').submit()</script>`;
  const body = form(fields).toString();
  if (o.sandboxed)
    return `<!doctype html><iframe sandbox="allow-scripts allow-forms" srcdoc="${formHtml.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"></iframe>`;
  return `<!doctype html><script>fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: ${JSON.stringify(body)} }).catch(() => {});</script>${formHtml}`;
};

/**
 * Chromium as test/helpers/browser.ts launches it, with frames kept in their page's process: the attacker's
 * sandboxed frame then is no out-of-process frame, whose first request Playwright can miss on a loaded machine.
 */
const launchIsolationOff = () =>
  launchChromium(['--disable-site-isolation-trials', '--disable-features=IsolateOrigins,site-per-process']);

let browserLaunch: Promise<Browser>;
let browser: Browser;
let evil: Awaited<ReturnType<typeof attackerSite>>;
beforeAll(async () => {
  browserLaunch = launchIsolationOff();
  browserLaunch.catch(() => {});
  evil = await attackerSite();
});
afterAll(async () => {
  await (await browserLaunch?.catch(() => null))?.close();
  await evil?.close();
  tmp.cleanup();
});

/** Opens the attacker's page in `context` and waits until the post it makes to `target` is answered; that answer's status. */
async function visitAttack(context: BrowserContext, html: string, target: string): Promise<number> {
  const path = `/attack-${Math.random().toString(36).slice(2)}`;
  evil.pages.set(path, html);
  const page = await context.newPage();
  const answered = page.waitForResponse(
    (r) => r.url() === target && r.request().method() === 'POST' && r.request().resourceType() === 'document',
    { timeout: 60_000 },
  );
  await page.goto(`${evil.url}${path}`);
  const status = (await answered).status();
  await page.close();
  return status;
}

describe('the local UI (waymark ui) under attack', () => {
  let store: SqliteCheckpointer;
  let ui: LocalUi;
  const paused = `paused ${XID}`;
  const failed = `failed ${XID}`;
  const decided = `decided ${XID}`;

  beforeAll(async () => {
    store = new SqliteCheckpointer({ path: tmp.file('local.db') });
    await seedHostile(store, paused, failed);
    expect((await hostileAgent(store).run('again', { executionId: decided })).status).toBe('paused');
    await decide(store, decided, { approved: false, comment: `no ${X}`, decidedBy: `bob ${X}` });
    const [row] = await store.list(failed, { limit: 1 });
    await store.markQuarantined({ [row.id]: `plane: invalid_row: ${X}` });
    ui = await serveLocalUi(store, { port: 0, user: `alice ${X}`, label: `store ${X}` });
    browser = await browserLaunch;
  });
  afterAll(async () => {
    await ui?.close();
    await store?.close();
  });

  const run = (id: string) => `${ui.url}/runs/${encodeURIComponent(id)}`;
  const recorded = async (id: string) => (await store.listDecisions({ executionId: id })).items;

  it('DNS rebinding: answers only a loopback Host naming its own port', async () => {
    const port = Number(new URL(ui.url).port);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`])
      expect((await raw(`${ui.url}/`, { headers: { host } })).status, host).toBe(200);
    for (const host of [
      `evil.example:${port}`,
      'evil.example',
      `127.0.0.1.evil.example:${port}`,
      `localhost:${port + 1}`,
      `127.0.0.1:${port + 1}`,
      '127.0.0.1',
      `127.0.0.1:`,
    ]) {
      const r = await raw(run(paused), { headers: { host } });
      // (Node's server itself answers 400 to a Host it cannot parse)
      expect([host, r.status >= 400 && r.status !== 404, r.body.includes('hostile-bot')]).toEqual([host, true, false]);
    }
    // a rebound name cannot post a decision either
    const before = (await recorded(paused)).length;
    const html = await (await fetch(run(paused))).text();
    const r = await formPost(
      `${run(paused)}/decision`,
      { csrf: csrfIn(html), checkpointId: checkpointIn(html), approved: 'true' },
      { host: `evil.example:${port}` },
    );
    expect(r.status).toBe(403);
    expect(await recorded(paused)).toHaveLength(before);
  });

  it('CSRF over HTTP: a foreign Origin, no token, a text/plain body, a cross-site fetch with the token, GET and other methods record nothing', async () => {
    const html = await (await fetch(run(paused))).text();
    const csrf = csrfIn(html);
    const checkpointId = checkpointIn(html);
    expect([csrf, checkpointId].every(Boolean)).toBe(true);
    const target = `${run(paused)}/decision`;
    const ok = { csrf, checkpointId, approved: 'true' };
    const attempts: [string, Promise<{ status: number }>][] = [
      ['foreign origin', formPost(target, ok, { origin: 'http://evil.example' })],
      [
        'another port of loopback',
        formPost(target, ok, { origin: `http://127.0.0.1:${Number(new URL(ui.url).port) + 1}` }),
      ],
      ['no token', formPost(target, { checkpointId, approved: 'true' })],
      ['no token, Origin null', formPost(target, { checkpointId, approved: 'true' }, { origin: 'null' })],
      ['a wrong token', formPost(target, { ...ok, csrf: csrf.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) })],
      [
        'text/plain',
        raw(target, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: form(ok).toString() }),
      ],
      // the token alone is not enough: a browser says when a page of another site sent the request
      ['cross-site with the token', formPost(target, ok, { 'sec-fetch-site': 'cross-site', origin: 'null' })],
      ['same-site with the token', formPost(target, ok, { 'sec-fetch-site': 'same-site', origin: 'null' })],
      ['GET', raw(`${target}?${form(ok)}`)],
      [
        'PUT',
        raw(target, {
          method: 'PUT',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form(ok).toString(),
        }),
      ],
      ['DELETE', raw(run(paused), { method: 'DELETE' })],
    ];
    for (const [what, p] of attempts) expect([what, (await p).status >= 400]).toEqual([what, true]);
    expect(await recorded(paused)).toEqual([]);
  });

  it('CSRF in Chromium: a page of another origin submitting the form, fetching no-cors, or from a sandboxed frame holding the token records nothing', async () => {
    const html = await (await fetch(run(paused))).text();
    const fields = { checkpointId: checkpointIn(html), approved: 'true', comment: 'forged' };
    const target = `${run(paused)}/decision`;
    const context = await browser.newContext();
    try {
      expect(await visitAttack(context, attackPage(target, fields), target)).toBe(403);
      expect(await visitAttack(context, attackPage(target, fields, { sandboxed: true }), target)).toBe(403);
      // a page that somehow learnt the token (Origin null from a sandboxed frame, which no-referrer pages send too)
      expect(
        await visitAttack(context, attackPage(target, { ...fields, csrf: csrfIn(html) }, { sandboxed: true }), target),
      ).toBe(403);
      expect(await visitAttack(context, attackPage(target, { ...fields, csrf: csrfIn(html) }), target)).toBe(403);
      expect(await recorded(paused)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('XSS: markup in ids, messages, tool arguments, the pause, errors, the quarantine, decisions and names is inert text on every page', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    try {
      const urls = [
        `${ui.url}/`,
        `${ui.url}/?q=${encodeURIComponent(X)}`,
        `${ui.url}/?status=${encodeURIComponent(X)}`,
        run(paused),
        `${run(paused)}?a=0&b=2`,
        run(failed),
        run(decided),
        run(`missing ${X}`),
        `${ui.url}/approvals`,
        `${ui.url}/quarantine`,
        `${ui.url}/sync`,
        `${ui.url}/nothing/${encodeURIComponent(X)}`,
      ];
      for (const url of urls) {
        await page.goto(url);
        await expectInert(page, url);
      }
      // the payloads are there, as text
      await page.goto(run(paused));
      const text = (await page.textContent('body'))!;
      expect(text).toContain('window.__xss=1');
      expect(text).toContain(`alice ${X}`);
      await page.goto(run(decided));
      expect(await page.textContent('[data-testid=decided-by]')).toBe(`bob ${X}`);
      await page.goto(`${ui.url}/quarantine`);
      expect(await page.textContent('body')).toContain(`invalid_row${X}`);
      // the refusal page of a post names what it got, as text
      await page.goto(run(paused));
      await page.evaluate(() => {
        const f = document.querySelector<HTMLFormElement>('[data-testid=decision-form]')!;
        f.querySelector<HTMLInputElement>('[name=checkpointId]')!.value = '</script><img src=x onerror=window.__xss=5>';
      });
      await page.click('button[name=approved][value=true]');
      await page.waitForLoadState();
      await expectInert(page, 'refusal');
      expect(dialogs).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('headers: every page refuses framing and sniffing and sends no referrer; a frame of another origin shows nothing', async () => {
    const html = await (await fetch(run(paused))).text();
    const refused = await formPost(`${run(paused)}/decision`, {
      csrf: csrfIn(html),
      checkpointId: 'nope',
      approved: 'true',
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expectSecureHeaders(refused.headers, 'refusal');
    for (const path of [
      '/',
      `/runs/${encodeURIComponent(paused)}`,
      '/runs/none',
      '/approvals',
      '/quarantine',
      '/sync',
      '/nowhere',
    ]) {
      expectSecureHeaders((await raw(`${ui.url}${path}`)).headers, path);
    }
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      evil.pages.set('/frame', `<!doctype html><iframe id="f" src="${run(paused)}"></iframe>`);
      const framed = page.waitForResponse((r) => r.url() === run(paused));
      await page.goto(`${evil.url}/frame`);
      await framed;
      const frame = page.frames().find((f) => f !== page.mainFrame());
      // the frame is blocked: it never holds the run page
      const shown = frame ? await frame.evaluate(() => document.body?.textContent ?? '').catch(() => '') : '';
      expect(shown).not.toContain('hostile-bot');
    } finally {
      await context.close();
    }
  });

  it('a same-origin person still approves in the browser', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(run(paused));
      await page.fill('textarea[name=comment]', 'fine by me');
      await page.click('button[name=approved][value=true]');
      await page.waitForURL(/#decisions-h$/);
      expect(await page.textContent('[data-testid=decided-by]')).toBe(`alice ${X}`);
      expect(await recorded(paused)).toMatchObject([
        { approved: true, decidedBy: `alice ${X}`, metadata: { comment: 'fine by me' } },
      ]);
    } finally {
      await context.close();
    }
  });
});

describe('the plane inspector under attack', () => {
  let plane: TestPlane;
  const keys: Record<string, string> = {};
  const keyIds: Record<string, string> = {};
  const paused = `paused ${XID}`;
  const failed = `failed ${XID}`;
  const rivalRun = `rival-secret-run`;
  const hostileWriter = `writer ${XID}`;

  async function session(key: string): Promise<string> {
    const r = await fetch(`${plane.url}/login`, { method: 'POST', redirect: 'manual', body: form({ key, next: '/' }) });
    expect(r.status).toBe(303);
    return r.headers.get('set-cookie')!.split(';')[0];
  }
  const page = async (cookie: string, path: string) => raw(`${plane.url}${path}`, { headers: { cookie } });
  const decisions = async (key: string) =>
    (await call(`${plane.url}/v1/decisions?after=0&limit=1000`, { key })).body.items as {
      executionId: string;
      approved: boolean;
      decidedBy: string;
    }[];

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    const db = plane.database.db;
    for (const [name, project, scopes] of [
      ['approver', 'acme', ['approve', 'read']],
      ['reader', 'acme', ['read']],
      ['admin', 'acme', ['admin']],
      ['ingest', 'acme', ['ingest', 'read']],
      ['rival', 'rival', ['approve', 'read', 'admin']],
      ['rivalIngest', 'rival', ['ingest']],
    ] as const) {
      const k = await createKey(db, {
        project,
        name: `${name} ${X}`.slice(0, 128),
        scopes: [...scopes],
        createProject: true,
      });
      keys[name] = k.key;
      keyIds[name] = k.id;
    }
    // acme: a paused and a failed run with markup everywhere, a decision with a markup comment, a quarantined row from a writer named with markup
    const store = new SqliteCheckpointer({ path: tmp.file('acme.db') });
    const replica = connectPlane(store, { url: plane.url, apiKey: keys.ingest, pollMs: 0 });
    await seedHostile(store, paused, failed);
    expect((await hostileAgent(store).run('again', { executionId: `decided ${XID}` })).status).toBe('paused');
    await replica.flush({ timeoutMs: 10_000 });
    const pause = (await store.getPendingInterrupt(`decided ${XID}`))!;
    const d = await call(`${plane.url}/v1/executions/${encodeURIComponent(`decided ${XID}`)}/decision`, {
      key: keys.approver,
      json: { checkpointId: pause.checkpointId, approved: false, comment: `no ${X}` },
    });
    expect(d.status).toBe(201);
    const [latest] = await store.list(failed, { order: 'desc', limit: 1 });
    await call(`${plane.url}/v1/ingest`, {
      key: keys.ingest,
      json: {
        protocol: 1,
        writerId: hostileWriter,
        rows: [{ kind: 'checkpoint', id: latest.id, row: { ...latest, nodeId: `forged ${X}`.slice(0, 200) } }],
      },
    });
    await replica.stop();
    await store.close();
    // rival: a paused run of another project
    const rivalStore = new SqliteCheckpointer({ path: tmp.file('rival.db') });
    const rivalReplica = connectPlane(rivalStore, { url: plane.url, apiKey: keys.rivalIngest, pollMs: 0 });
    expect((await hostileAgent(rivalStore).run('rival', { executionId: rivalRun })).status).toBe('paused');
    await rivalReplica.flush({ timeoutMs: 10_000 });
    await call(`${plane.url}/v1/ingest`, {
      key: keys.rivalIngest,
      json: {
        protocol: 1,
        writerId: 'rival-writer',
        rows: [
          {
            kind: 'interrupt_claimed',
            id: uuidv7(),
            executionId: rivalRun,
            checkpointId: uuidv7(),
            writerId: 'rival-writer',
            claimedAt: new Date().toISOString(),
          },
        ],
      },
    });
    await rivalReplica.stop();
    await rivalStore.close();
    browser = await browserLaunch;
  });
  afterAll(async () => {
    await plane?.close();
  });

  it("open redirect: the login's next never leaves the plane", async () => {
    const origin = new URL(plane.url).origin;
    for (const next of [
      '//evil.example/',
      '/\\evil.example',
      '/\t/evil.example',
      '/\t\\evil.example',
      '/\n/evil.example',
      '/\r\n/evil.example',
      'https://evil.example/',
      '/.//evil.example',
      '/%2F/evil.example',
      ' //evil.example',
    ]) {
      const login = await raw(`${plane.url}/login?next=${encodeURIComponent(next)}`);
      const shown = /name="next" value="([^"]*)"/.exec(login.body)?.[1] ?? '';
      const r = await fetch(`${plane.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        body: form({ key: keys.reader, next }),
      });
      const location = r.headers.get('location') ?? '';
      expect([JSON.stringify(next), r.status, new URL(location, plane.url).origin]).toEqual([
        JSON.stringify(next),
        303,
        origin,
      ]);
      // what the page carries on is as safe (the browser posts the hidden field as the page has it)
      expect([
        JSON.stringify(next),
        new URL(
          shown.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n))),
          plane.url,
        ).origin,
      ]).toEqual([JSON.stringify(next), origin]);
    }
    // in Chromium, a link to the login with a next of another site lands on the plane
    const context = await browser.newContext();
    try {
      await context.route('http://evil.example/**', (r) =>
        r.fulfill({ contentType: 'text/html', body: '<h1>phished</h1>' }),
      );
      const p = await context.newPage();
      await p.goto(`${plane.url}/login?next=${encodeURIComponent('/\t/evil.example/')}`);
      await p.fill('input[name=key]', keys.reader);
      await p.click('button[type=submit]');
      await p.waitForLoadState();
      expect(new URL(p.url()).origin).toBe(origin);
      // a path of its own still works
      await p.goto(`${plane.url}/login?next=${encodeURIComponent('/approvals?cursor=')}`);
      await p.fill('input[name=key]', keys.reader);
      await p.click('button[type=submit]');
      await p.waitForURL(`${plane.url}/approvals?cursor=`);
    } finally {
      await context.close();
    }
  });

  it('DNS rebinding: a --dev plane (no login) answers only a loopback Host naming its own port', async () => {
    const database = await openTestPlaneDatabase('pglite');
    await createKey(database.db, { project: 'devproj', scopes: ['ingest'], createProject: true });
    const { app } = createPlaneApp({ database, logger: pino({ level: 'silent' }), dev: true });
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    const port = (server.address() as AddressInfo).port;
    try {
      const url = `http://127.0.0.1:${port}`;
      expect((await raw(`${url}/`, { headers: { host: `127.0.0.1:${port}` } })).status).toBe(200);
      expect((await raw(`${url}/`, { headers: { host: `localhost:${port}` } })).status).toBe(200);
      for (const host of [`evil.example:${port}`, 'evil.example', `localhost:${port + 1}`]) {
        // every page, and a path no page has yet (one added later is covered without a list to update)
        for (const path of [
          '/',
          '/approvals',
          '/quarantine',
          '/writers',
          '/runs/any-run',
          '/keys',
          '/login',
          '/not-a-page-yet',
        ]) {
          const r = await raw(`${url}${path}`, { headers: { host } });
          expect([host, path, r.status]).toEqual([host, path, 403]);
        }
      }
      // the API keeps its keys: a Host check is not its guard
      expect((await raw(`${url}/healthz`, { headers: { host: `evil.example:${port}` } })).status).not.toBe(403);
    } finally {
      await new Promise<void>((r) => {
        (server as unknown as { closeAllConnections(): void }).closeAllConnections();
        server.close(() => r());
      });
      await database.close();
    }
  });

  it('CSRF over HTTP: the decision, Keys and logout forms refuse a foreign Origin, no token, and a cross-site request holding the token', async () => {
    const approver = await session(keys.approver);
    const html = (await page(approver, `/runs/${encodeURIComponent(paused)}`)).body;
    const csrf = csrfIn(html);
    const checkpointId = checkpointIn(html);
    expect([csrf, checkpointId].every(Boolean)).toBe(true);
    const target = `${plane.url}/runs/${encodeURIComponent(paused)}/decision`;
    const ok = { csrf, checkpointId, approved: 'true' };
    for (const [what, headers, body] of [
      ['foreign origin', { origin: 'http://evil.example' }, ok],
      ['same site, another origin', { origin: `http://127.0.0.1:${Number(new URL(plane.url).port) + 1}` }, ok],
      ['no token', {}, { checkpointId, approved: 'true' }],
      ['cross-site with the token', { 'sec-fetch-site': 'cross-site', origin: 'null' }, ok],
      ['same-site with the token', { 'sec-fetch-site': 'same-site' }, ok],
    ] as const) {
      const r = await formPost(target, body, { cookie: approver, ...headers });
      expect([what, r.status]).toEqual([what, 403]);
    }
    expect((await raw(`${target}?${form(ok)}`, { headers: { cookie: approver } })).status).toBe(404);
    expect((await decisions(keys.ingest)).filter((d) => d.executionId === paused)).toEqual([]);

    // the Keys page's forms: create and revoke
    const admin = await session(keys.admin);
    const adminCsrf = csrfIn((await page(admin, '/keys')).body);
    expect(adminCsrf).not.toBe('');
    for (const headers of [
      { 'sec-fetch-site': 'cross-site', origin: 'null' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'http://evil.example' },
    ] as Record<string, string>[]) {
      const made = await formPost(
        `${plane.url}/keys`,
        { csrf: adminCsrf, name: 'forged', scopes: 'admin' },
        { cookie: admin, ...headers },
      );
      expect([headers, made.status]).toEqual([headers, 403]);
      const revoked = await formPost(
        `${plane.url}/keys/${keyIds.reader}/revoke`,
        { csrf: adminCsrf, confirm: 'yes' },
        { cookie: admin, ...headers },
      );
      expect([headers, revoked.status]).toEqual([headers, 403]);
    }
    const listed = (await call(`${plane.url}/v1/admin/keys`, { key: keys.admin })).body as
      | { items?: { name: string; revokedAt: string | null }[] }
      | { name: string }[];
    const all = Array.isArray(listed) ? listed : (listed.items ?? []);
    expect(all.map((k) => k.name)).not.toContain('forged');
    // logout from another site: the session lives on
    const out = await formPost(
      `${plane.url}/logout`,
      { csrf: csrfIn((await page(approver, '/')).body) },
      { cookie: approver, 'sec-fetch-site': 'cross-site', origin: 'null' },
    );
    expect(out.status).toBe(403);
    expect((await page(approver, '/')).status).toBe(200);
  });

  it('CSRF in Chromium: a logged-in manager visiting a page of another origin records nothing; the same manager approves on the plane', async () => {
    const context = await browser.newContext();
    try {
      const p = await context.newPage();
      await p.goto(`${plane.url}/login?next=${encodeURIComponent(`/runs/${encodeURIComponent(paused)}`)}`);
      await p.fill('input[name=key]', keys.approver);
      await p.click('button[type=submit]');
      await p.waitForURL(/\/runs\//);
      const html = await p.content();
      const fields = { checkpointId: checkpointIn(html), approved: 'true', comment: 'forged' };
      const target = `${plane.url}/runs/${encodeURIComponent(paused)}/decision`;
      // another origin of the same site: the SameSite=Strict cookie goes along, so Origin and the token must hold
      expect(await visitAttack(context, attackPage(target, fields), target)).toBe(403);
      expect(await visitAttack(context, attackPage(target, { ...fields, csrf: csrfIn(html) }), target)).toBe(403);
      // a sandboxed frame (Origin null, as the inspector's own no-referrer pages send) holding the token: where the
      // cookie goes along (the frame's page is of this site; Chromium with site isolation sends it), only Sec-Fetch-Site
      // tells it from the manager's own form (403); where it does not, the post is sent to log in (303): nothing either way
      expect([403, 303]).toContain(
        await visitAttack(context, attackPage(target, { ...fields, csrf: csrfIn(html) }, { sandboxed: true }), target),
      );
      expect((await decisions(keys.ingest)).filter((d) => d.executionId === paused)).toEqual([]);
      // the manager's own form still records
      await p.fill('textarea[name=comment]', 'real');
      await p.click('button[name=approved][value=true]');
      await p.waitForURL(/#decisions-h$/);
      expect((await decisions(keys.ingest)).filter((d) => d.executionId === paused)).toMatchObject([
        { approved: true },
      ]);
    } finally {
      await context.close();
    }
  });

  it("auth: another project's runs, pauses and writers are not there; a read key cannot decide; a revoked key's session and a logged out one open nothing", async () => {
    const approver = await session(keys.approver);
    const rival = await session(keys.rival);
    // acme's session: rival's run by its id is 404, and neither the lists nor the inbox name it
    expect((await page(approver, `/runs/${rivalRun}`)).status).toBe(404);
    for (const path of ['/', `/?q=${rivalRun}`, '/approvals', '/quarantine', '/writers']) {
      const r = await page(approver, path);
      expect([path, r.status, r.body.includes(`href="/runs/${rivalRun}`) || r.body.includes('rival-writer')]).toEqual([
        path,
        200,
        false,
      ]);
    }
    // rival's session: acme's runs are not there, and it cannot decide acme's pause with its own token
    const acmeHtml = (await page(approver, `/runs/${encodeURIComponent(`decided ${XID}`)}`)).body;
    expect((await page(rival, `/runs/${encodeURIComponent(paused)}`)).status).toBe(404);
    for (const path of ['/', '/approvals', '/quarantine', '/writers']) {
      const body = (await page(rival, path)).body;
      expect([
        path,
        body.includes('paused &lt;img'),
        body.includes('failed &lt;img'),
        body.includes('writer &lt;img'),
      ]).toEqual([path, false, false, false]);
    }
    const rivalCsrf = csrfIn((await page(rival, '/')).body);
    const acmePauses = (await call(`${plane.url}/v1/pauses?limit=10`, { key: keys.ingest })).body.items as {
      executionId: string;
      checkpointId: string;
    }[];
    for (const p of acmePauses) {
      const r = await formPost(
        `${plane.url}/runs/${encodeURIComponent(p.executionId)}/decision`,
        { csrf: rivalCsrf, checkpointId: p.checkpointId, approved: 'true' },
        { cookie: rival },
      );
      expect(r.status).toBe(404);
    }
    // rival's admin cannot revoke acme's key from its Keys page
    const rivalKeysCsrf = csrfIn((await page(rival, '/keys')).body);
    const revoke = await formPost(
      `${plane.url}/keys/${keyIds.reader}/revoke`,
      { csrf: rivalKeysCsrf, confirm: 'yes' },
      { cookie: rival },
    );
    expect(revoke.status).toBe(404);
    expect(acmeHtml).not.toBe('');

    // a read key: no form, and a post with its own token is FORBIDDEN
    const reader = await session(keys.reader);
    const readerHtml = (await page(reader, `/runs/${encodeURIComponent(paused)}`)).body;
    expect(readerHtml).not.toContain('data-testid="decision-form"');
    const pauseId =
      acmePauses.find((p) => p.executionId === paused)?.checkpointId ??
      checkpointIn((await page(approver, `/runs/${encodeURIComponent(paused)}`)).body);
    const forbidden = await formPost(
      `${plane.url}/runs/${encodeURIComponent(paused)}/decision`,
      { csrf: csrfIn(readerHtml), checkpointId: pauseId, approved: 'true' },
      { cookie: reader },
    );
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toContain('FORBIDDEN');
    expect((await page(reader, '/keys')).status).toBe(403);

    // a revoked key: its session opens nothing and decides nothing
    const doomed = await createKey(plane.database.db, { project: 'acme', name: 'doomed', scopes: ['approve', 'read'] });
    const doomedSession = await session(doomed.key);
    const doomedCsrf = csrfIn((await page(doomedSession, '/')).body);
    expect(await revokeKey(plane.database.db, doomed.id)).toBe(true);
    for (const path of ['/', '/approvals', `/runs/${encodeURIComponent(paused)}`, '/writers']) {
      const r = await page(doomedSession, path);
      expect([path, r.status, String(r.headers.location)]).toEqual([path, 303, expect.stringMatching(/^\/login/)]);
    }
    const late = await formPost(
      `${plane.url}/runs/${encodeURIComponent(paused)}/decision`,
      { csrf: doomedCsrf, checkpointId: pauseId, approved: 'false' },
      { cookie: doomedSession },
    );
    expect(late.status).toBe(303);
    expect((await decisions(keys.ingest)).filter((d) => d.decidedBy === 'doomed')).toEqual([]);

    // logout ends the session for every page
    const gone = await session(keys.reader);
    const out = await formPost(`${plane.url}/logout`, { csrf: csrfIn((await page(gone, '/')).body) }, { cookie: gone });
    expect(out.status).toBe(303);
    expect((await page(gone, '/')).status).toBe(303);
    expect((await page(gone, '/approvals')).status).toBe(303);
  });

  it('XSS: markup in run content, key names, decisions, writer ids and quarantine reasons is inert text on every page; headers on every page', async () => {
    const context = await browser.newContext();
    const p = await context.newPage();
    try {
      await p.goto(`${plane.url}/login`);
      await expectInert(p, 'login');
      await p.fill('input[name=key]', keys.admin);
      await p.click('button[type=submit]');
      await p.waitForURL(`${plane.url}/`);
      const paths = [
        '/',
        `/?q=${encodeURIComponent(X)}`,
        `/?status=${encodeURIComponent(X)}`,
        `/runs/${encodeURIComponent(paused)}`,
        `/runs/${encodeURIComponent(paused)}?a=0&b=2`,
        `/runs/${encodeURIComponent(failed)}`,
        `/runs/${encodeURIComponent(`decided ${XID}`)}`,
        `/runs/${encodeURIComponent(`missing ${X}`)}`,
        '/approvals',
        '/quarantine',
        '/writers',
        '/keys',
        `/login?next=${encodeURIComponent(`/"><script>window.__xss=9</script>`)}`,
      ];
      for (const path of paths) {
        await p.goto(`${plane.url}${path}`);
        await expectInert(p, path);
        const r = await p.request.get(`${plane.url}${path}`);
        expectSecureHeaders(r.headers(), path);
      }
      await p.goto(`${plane.url}/runs/${encodeURIComponent(`decided ${XID}`)}`);
      expect(await p.textContent('body')).toContain(`no ${X}`);
      await p.goto(`${plane.url}/keys`);
      expect(await p.textContent('body')).toContain(`approver ${X}`);
      await p.goto(`${plane.url}/writers`);
      expect(
        await p.evaluate(
          (w) =>
            [...document.querySelectorAll('[title]')].some((e) => e.getAttribute('title') === w) ||
            document.body.textContent!.includes(w),
          hostileWriter,
        ),
      ).toBe(true);
      // a refused decision names what it got, as text, with the same headers
      const r = await p.request.post(`${plane.url}/runs/${encodeURIComponent(paused)}/decision`, {
        form: { csrf: 'x', checkpointId: X, approved: 'true' },
      });
      expect(r.status()).toBe(403);
      expectSecureHeaders(r.headers(), 'refusal');
    } finally {
      await context.close();
    }
  });
});
