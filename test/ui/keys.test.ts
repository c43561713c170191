/// <reference lib="dom" />
/**
 * The inspector's Keys page: in headless chromium for an admin session
 * (list, create with the secret shown once, revoke), and over plain HTTP for
 * CSRF and tenancy (a read session and another project's admin session); at
 * 1280 and 390 px, with no script: Log out ends the session (a later page asks
 * for sign-in), Created is in the reader's local time, and a revoke takes a
 * confirmation that names the session's own key (revoking it ends the session).
 * Create is Post/Redirect/Get: a reload of the page showing a new key's secret
 * makes no second key and shows the secret no more; the secret is in no URL or
 * cookie, its page is its session's only, and it expires (a plane restart, on
 * Postgres, forgets it too).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { refusedWithin } from '../helpers/plane-process.js';
import { launchChromium as launch, SHOTS } from '../helpers/browser.js';
import { accessibilityProblems } from '../helpers/a11y.js';
import { createTestDatabase, pgReady } from '../helpers/pg.js';
import { csrfIn } from '../helpers/html.js';

async function session(url: string, key: string): Promise<string> {
  const r = await fetch(`${url}/login`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ key, next: '/' }),
  });
  expect(r.status).toBe(303);
  return r.headers.get('set-cookie')!.split(';')[0];
}
/** Any key's secret in `text` (a key's id alone is not one). */
const SECRET = /wm_[0-9a-f]{16}_[A-Za-z0-9_-]{43}/;
/** A Create post answered with a page to GET: its Location, which names the key and a token, never the secret. */
const NEW_KEY_PAGE = /^\/keys\/([0-9a-f]{16})\/new\/[A-Za-z0-9_-]{43}$/;

const postgresUp = await pgReady('the Keys page across a plane restart');

describe('the Keys page', () => {
  let plane: TestPlane;
  let browser: Browser;
  let page: Page;
  const keys: Record<string, string> = {};

  // Chromium starts while the plane does
  let launching: Promise<Browser> | undefined;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    launching = launch();
    launching.catch(() => {});
    plane = await startTestPlane('pglite');
    keys.admin = await plane.key('acme', ['admin']);
    keys.read = await plane.key('acme', ['read']);
    keys.rivalAdmin = await plane.key('rival', ['admin']);
    keys.rival = await plane.key('rival', ['read']);
    browser = await launching;
    page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  });
  afterAll(async () => {
    await (await launching?.catch(() => null))?.close();
    await plane?.close();
  });

  it('an admin session lists the project keys, creates one (the secret shown once) and revokes it', async () => {
    await page.goto(`${plane.url}/login?next=/keys`);
    await page.fill('input[name=key]', keys.admin);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}/keys`);
    const listed = await page.$$eval('tr[data-key]', (rows) => rows.map((r) => r.getAttribute('data-key')));
    expect(listed.sort()).toEqual([keys.admin, keys.read].map((k) => k.slice(3, 19)).sort());

    await page.fill('input[name=name]', 'laptop');
    await page.check('input[name=scopes][value=ingest]');
    await page.check('input[name=scopes][value=read]');
    await page.click('form[action="/keys"] button[type=submit]');
    const secret = (await page.textContent('[data-testid=secret]'))!.trim();
    expect(secret).toMatch(/^wm_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    await page.screenshot({ path: join(SHOTS, 'keys-created.png'), fullPage: true });
    expect((await call(`${plane.url}/v1/executions`, { key: secret })).status).toBe(200);

    // shown once: the list page never carries it again
    await page.goto(`${plane.url}/keys`);
    expect(await page.content()).not.toContain(secret.slice(20));
    const id = secret.slice(3, 19);
    await page.getByRole('link', { name: `Revoke ${id}` }).click();
    await page.waitForURL(`${plane.url}/keys/${id}/revoke`);
    await page.getByRole('button', { name: `Revoke ${id}` }).click();
    await page.waitForURL(`${plane.url}/keys`);
    expect(await page.textContent(`tr[data-key="${id}"]`)).toMatch(/revoked/);
    // refused within 1 s of the page saying so, judged by when each request was sent (not by how fast it was answered)
    await refusedWithin(
      async () => (await call(`${plane.url}/v1/executions`, { key: secret })).status,
      performance.now(),
      1000,
    );
  });

  it('a form post without the CSRF token, or from another origin, is refused and changes nothing', async () => {
    const cookie = await session(plane.url, keys.admin);
    const html = await (await fetch(`${plane.url}/keys`, { headers: { cookie } })).text();
    const csrf = csrfIn(html);
    expect(csrf).not.toBe('');
    const target = `${plane.url}/keys/${keys.read.slice(3, 19)}/revoke`;
    for (const [body, headers] of [
      [new URLSearchParams({ confirm: 'yes' }), {}],
      [new URLSearchParams({ csrf: 'forged', confirm: 'yes' }), {}],
      [new URLSearchParams({ csrf, confirm: 'yes' }), { origin: 'http://evil.example' }],
    ] as const) {
      const r = await fetch(target, { method: 'POST', redirect: 'manual', headers: { cookie, ...headers }, body });
      expect(r.status).toBe(403);
    }
    const create = await fetch(`${plane.url}/keys`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie },
      body: new URLSearchParams({ name: 'x', scopes: 'read' }),
    });
    expect(create.status).toBe(403);
    expect((await call(`${plane.url}/v1/executions`, { key: keys.read })).status).toBe(200);
    // another session's token is not this session's
    const other = await session(plane.url, keys.admin);
    const r = await fetch(target, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: other },
      body: new URLSearchParams({ csrf, confirm: 'yes' }),
    });
    expect(r.status).toBe(403);
    expect((await call(`${plane.url}/v1/admin/keys`, { key: keys.admin })).body.items).toHaveLength(3);
  });

  it("a read session gets no Keys page; another project's admin session sees none of this project's keys and cannot revoke them", async () => {
    const reader = await session(plane.url, keys.read);
    const refused = await fetch(`${plane.url}/keys`, { headers: { cookie: reader } });
    expect(refused.status).toBe(403);
    // a read session's nav does not offer the page it cannot open; an admin session's does
    expect(await refused.text()).not.toContain('href="/keys"');
    expect(await (await fetch(`${plane.url}/`, { headers: { cookie: reader } })).text()).not.toContain('href="/keys"');
    expect(
      await (await fetch(`${plane.url}/writers`, { headers: { cookie: await session(plane.url, keys.admin) } })).text(),
    ).toContain('href="/keys"');
    const rival = await session(plane.url, keys.rivalAdmin);
    const html = await (await fetch(`${plane.url}/keys`, { headers: { cookie: rival } })).text();
    for (const k of [keys.admin, keys.read]) expect(html).not.toContain(k.slice(3, 19));
    expect(html).toContain(keys.rival.slice(3, 19));
    expect(html).not.toContain('acme');
    const r = await fetch(`${plane.url}/keys/${keys.read.slice(3, 19)}/revoke`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: rival },
      body: new URLSearchParams({ csrf: csrfIn(html), confirm: 'yes' }),
    });
    expect(r.status).toBe(404);
    const made = await fetch(`${plane.url}/keys`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: rival },
      body: new URLSearchParams({ csrf: csrfIn(html), project: 'acme', name: 'x', scopes: 'read' }),
    });
    // as the API answers UNKNOWN_PROJECT: another project's name is not known to this session
    expect(made.status).toBe(404);
    expect(await made.text()).toMatch(/UNKNOWN_PROJECT/);
    expect((await call(`${plane.url}/v1/executions`, { key: keys.read })).status).toBe(200);
    expect(
      (await call(`${plane.url}/v1/admin/keys`, { key: keys.admin })).body.items.filter(
        (k: { revokedAt: string | null }) => !k.revokedAt,
      ),
    ).toHaveLength(2);
  });

  it('an operator session (the bootstrap key) sees every project and makes a key in another project from the page', async () => {
    const operator = await plane.key('ops', ['admin', 'operator']);
    const cookie = await session(plane.url, operator);
    const html = await (await fetch(`${plane.url}/keys`, { headers: { cookie } })).text();
    for (const k of [keys.admin, keys.rival]) expect(html).toContain(k.slice(3, 19));
    expect(html).toMatch(/<option value="rival">rival<\/option>/);
    const body = new URLSearchParams({ csrf: csrfIn(html), project: 'rival', name: 'from operator', scopes: 'read' });
    const made = await fetch(`${plane.url}/keys`, { method: 'POST', redirect: 'manual', headers: { cookie }, body });
    expect(made.status).toBe(303);
    const shown = await fetch(`${plane.url}${made.headers.get('location')}`, { headers: { cookie } });
    const secret = /data-testid="secret">([^<]+)</.exec(await shown.text())![1].trim();
    const mine = await call(`${plane.url}/v1/admin/keys`, { key: keys.rivalAdmin });
    expect(mine.body.items.find((k: { id: string }) => k.id === secret.slice(3, 19))).toMatchObject({
      project: 'rival',
      name: 'from operator',
      scopes: ['read'],
    });
  });
  /** A browser page at `width` (no script when `js` is false), signed in with `key` and on `/keys`. */
  const keysPage = async (key: string, width: number, o: { js?: boolean; timezoneId?: string } = {}) => {
    const context = await browser.newContext({
      viewport: { width, height: 860 },
      javaScriptEnabled: o.js ?? true,
      ...(o.timezoneId ? { timezoneId: o.timezoneId } : {}),
    });
    const p = await context.newPage();
    await p.goto(`${plane.url}/login?next=/keys`);
    await p.fill('input[name=key]', key);
    await p.click('button[type=submit]');
    await p.waitForURL(`${plane.url}/keys`);
    return p;
  };
  it("an operator session's create form starts at its own project, not the first by name", async () => {
    const operator = await plane.key('ops', ['admin', 'operator']);
    const p = await keysPage(operator, 1280);
    const names = await p.locator('select[name=project] option').allTextContents();
    // 'acme' comes first by name: the default is still the session's own
    expect(names[0]).not.toBe('ops');
    expect(names).toContain('ops');
    expect(await p.inputValue('select[name=project]')).toBe('ops');
    await p.context().close();
  });
  const fitsWidth = (p: Page) => p.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  const works = async (key: string) => (await call(`${plane.url}/v1/executions`, { key })).status;
  const sessionCookie = async (p: Page) =>
    (await p.context().cookies()).filter((c) => c.name === 'wm_session').map((c) => `${c.name}=${c.value}`)[0];

  for (const width of [1280, 390]) {
    it(`at ${width} px, a reload of the page showing a new key's secret makes no second key and shows the secret no more`, async () => {
      const name = `reloaded at ${width}`;
      const named = async () =>
        (await call(`${plane.url}/v1/admin/keys`, { key: keys.admin })).body.items.filter(
          (k: { name: string }) => k.name === name,
        );
      const p = await keysPage(keys.admin, width, { js: false });
      const posts: string[] = [];
      p.on('request', (r) => {
        if (r.method() !== 'GET') posts.push(`${r.method()} ${r.url()}`);
      });
      await p.fill('input[name=name]', name);
      await p.check('input[name=scopes][value=read]');
      await p.click('form[action="/keys"] button[type=submit]');
      const secret = (await p.textContent('[data-testid=secret]'))!.trim();
      expect(secret).toMatch(SECRET);
      const id = secret.slice(3, 19);
      expect(posts).toEqual([`POST ${plane.url}/keys`]);
      expect(await named()).toHaveLength(1);
      expect(await accessibilityProblems(p)).toEqual([]);
      expect(await fitsWidth(p)).toBe(true);
      await p.screenshot({ path: join(SHOTS, `keys-new-${width}.png`), fullPage: true });

      posts.length = 0;
      await p.reload();
      // the reload asked for a page: nothing was posted, no second key, and the secret is not on the page again
      expect(await named()).toHaveLength(1);
      expect(posts).toEqual([]);
      expect(await p.content()).not.toContain(secret.slice(20));
      expect(await p.textContent('[data-testid=secret-gone]')).toContain(`The secret of key ${id} is not shown again`);
      expect(await p.getByRole('link', { name: `revoke key ${id}` }).getAttribute('href')).toBe(`/keys/${id}/revoke`);
      expect(await accessibilityProblems(p)).toEqual([]);
      expect(await fitsWidth(p)).toBe(true);
      await p.screenshot({ path: join(SHOTS, `keys-new-reloaded-${width}.png`), fullPage: true });

      // the secret is in no URL this tab went to, and in no cookie
      expect(new URL(p.url()).pathname).toMatch(NEW_KEY_PAGE);
      expect(p.url()).not.toContain(secret.slice(20));
      for (const c of await p.context().cookies()) expect(c.value).not.toContain(secret.slice(20));
      // a second tab of the same session, on the same page: the secret is not shown there either
      const tab = await p.context().newPage();
      await tab.goto(p.url());
      expect(await tab.content()).not.toMatch(SECRET);
      expect(await tab.locator('[data-testid=secret-gone]').count()).toBe(1);
      // Back goes to the form page, re-posting nothing
      await p.goBack();
      expect(p.url()).toBe(`${plane.url}/keys`);
      expect(await p.content()).not.toMatch(SECRET);
      expect(posts).toEqual([]);
      expect(await named()).toHaveLength(1);
      expect((await call(`${plane.url}/v1/executions`, { key: secret })).status).toBe(200);
      await p.context().close();
    });

    it(`at ${width} px, Log out on the Keys page ends the session: a later page load asks for sign-in`, async () => {
      const admin = await plane.key('acme', ['admin']);
      const p = await keysPage(admin, width, { js: false });
      const cookie = await sessionCookie(p);
      const logOut = p.getByRole('button', { name: 'Log out' });
      expect(await logOut.isVisible()).toBe(true);
      expect(await fitsWidth(p)).toBe(true);
      await logOut.click();
      await p.waitForURL(`${plane.url}/login`);
      // the next page load asks for a key again
      await p.goto(`${plane.url}/keys`);
      expect(p.url()).toBe(`${plane.url}/login?next=%2Fkeys`);
      // ended on the plane, not only forgotten by the browser: the old cookie opens nothing
      const again = await fetch(`${plane.url}/keys`, { headers: { cookie }, redirect: 'manual' });
      expect([again.status, again.headers.get('location')]).toEqual([303, '/login?next=%2Fkeys']);
      expect(await works(admin)).toBe(200);
      await p.context().close();
    });

    it(`at ${width} px, Created is in the reader's local time, as on every other page`, async () => {
      const p = await keysPage(keys.admin, width, { timezoneId: 'Asia/Kolkata' });
      const listed = (await call(`${plane.url}/v1/admin/keys`, { key: keys.admin })).body.items as {
        id: string;
        createdAt: string;
      }[];
      const k = listed.find((x) => x.id === keys.read.slice(3, 19))!;
      // Kolkata is UTC+05:30 all year
      const local = new Date(Date.parse(k.createdAt) + 5.5 * 3600_000).toISOString();
      const cell = p.locator(`tr[data-key="${k.id}"] td[data-label=Created]`);
      expect(await cell.textContent()).toBe(`${local.slice(0, 10)} ${local.slice(11, 19)} +05:30`);
      expect(await fitsWidth(p)).toBe(true);
      await p.screenshot({ path: join(SHOTS, `keys-${width}.png`), fullPage: true });
      await p.context().close();
    });

    it(`at ${width} px, a revoke asks first, with no script: one click revokes nothing; the session's own key says that revoking it ends the session`, async () => {
      const admin = await plane.key('acme', ['admin']);
      const other = await plane.key('acme', ['read']);
      const [adminId, otherId] = [admin.slice(3, 19), other.slice(3, 19)];
      const p = await keysPage(admin, width, { js: false });
      // the session's own key is marked in the list, another is not
      expect(await p.locator(`tr[data-key="${adminId}"] [data-testid=own-key]`).count()).toBe(1);
      expect(await p.locator(`tr[data-key="${otherId}"] [data-testid=own-key]`).count()).toBe(0);

      // one click: a page naming the key, and nothing revoked
      await p.getByRole('link', { name: `Revoke ${otherId}` }).click();
      await p.waitForURL(`${plane.url}/keys/${otherId}/revoke`);
      expect(await p.textContent('h1')).toContain(otherId);
      expect(await p.locator('[data-testid=own-key-warning]').count()).toBe(0);
      expect(await fitsWidth(p)).toBe(true);
      expect(await works(other)).toBe(200);
      // Keep it: back, still active
      await p.getByRole('link', { name: 'Keep it' }).click();
      await p.waitForURL(`${plane.url}/keys`);
      expect(await p.textContent(`tr[data-key="${otherId}"]`)).not.toMatch(/revoked/);
      expect(await works(other)).toBe(200);
      // a post of the old one-click form (the token, no confirmation) revokes nothing either
      const cookie = await sessionCookie(p);
      const csrf = csrfIn(await p.content());
      const oneClick = await fetch(`${plane.url}/keys/${otherId}/revoke`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie },
        body: new URLSearchParams({ csrf }),
      });
      expect(oneClick.status).toBe(400);
      expect(await oneClick.text()).toContain('Nothing was revoked');
      expect(await works(other)).toBe(200);
      // confirmed: revoked
      await p.getByRole('link', { name: `Revoke ${otherId}` }).click();
      await p.getByRole('button', { name: `Revoke ${otherId}` }).click();
      await p.waitForURL(`${plane.url}/keys`);
      expect(await p.textContent(`tr[data-key="${otherId}"]`)).toMatch(/revoked/);
      expect(await works(other)).toBe(401);

      // the session's own key: the page says plainly that revoking it ends this session
      await p.getByRole('link', { name: `Revoke ${adminId}` }).click();
      await p.waitForURL(`${plane.url}/keys/${adminId}/revoke`);
      expect(await p.textContent('[data-testid=own-key-warning]')).toContain(
        'This is the key this session is signed in with: revoking it ends this session',
      );
      expect(await works(admin)).toBe(200);
      expect(await fitsWidth(p)).toBe(true);
      await p.screenshot({ path: join(SHOTS, `keys-revoke-own-${width}.png`), fullPage: true });
      await p.getByRole('button', { name: 'Revoke it and log out' }).click();
      await p.waitForURL(`${plane.url}/login?next=%2Fkeys`);
      expect(await works(admin)).toBe(401);
      await p.goto(`${plane.url}/keys`);
      expect(p.url()).toBe(`${plane.url}/login?next=%2Fkeys`);
      await p.context().close();
    });
  }

  it("a new key's page is its own session's, once: another session sees no secret (and takes nothing), a second look none", async () => {
    const mine = await session(plane.url, keys.admin);
    const csrf = csrfIn(await (await fetch(`${plane.url}/keys`, { headers: { cookie: mine } })).text());
    const made = await fetch(`${plane.url}/keys`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: mine },
      body: new URLSearchParams({ csrf, name: 'one session', scopes: 'read' }),
    });
    expect(made.status).toBe(303);
    expect(made.headers.get('set-cookie')).toBeNull();
    const location = made.headers.get('location')!;
    const id = NEW_KEY_PAGE.exec(location)?.[1];
    expect(id).toBeDefined();
    const look = async (cookie: string) => {
      const r = await fetch(`${plane.url}${location}`, { headers: { cookie } });
      expect(r.headers.get('set-cookie')).toBeNull();
      return r.text();
    };
    // another session of the same admin key, and another project's admin session: no secret, the page says so
    const other = await look(await session(plane.url, keys.admin));
    expect(other).not.toMatch(SECRET);
    expect(other).toContain(`The secret of key ${id} is not shown again`);
    const rival = await look(await session(plane.url, keys.rivalAdmin));
    expect(rival).not.toMatch(SECRET);
    // not a key of that project's: not named there
    expect(rival).not.toContain(id);
    expect(rival).toContain('data-testid="secret-gone"');
    // the session that made it: the secret, which works, and is not in the URL it was shown at
    const shown = await look(mine);
    const secret = SECRET.exec(shown)?.[0] ?? '';
    expect(secret.slice(3, 19)).toBe(id);
    expect(location).not.toContain(secret.slice(20));
    expect((await call(`${plane.url}/v1/executions`, { key: secret })).status).toBe(200);
    // a second look, by the same session: gone
    const again = await look(mine);
    expect(again).not.toMatch(SECRET);
    expect(again).toContain(`The secret of key ${id} is not shown again`);
    const named = (await call(`${plane.url}/v1/admin/keys`, { key: keys.admin })).body.items.filter(
      (k: { name: string }) => k.name === 'one session',
    );
    expect(named).toHaveLength(1);
  });

  it("a new key's secret not looked at in time expires: its page then shows no secret", async () => {
    const short = await startTestPlane('pglite', { newKeyShownForMs: 200 });
    try {
      const admin = await short.key('acme', ['admin']);
      const cookie = await session(short.url, admin);
      const csrf = csrfIn(await (await fetch(`${short.url}/keys`, { headers: { cookie } })).text());
      const made = await fetch(`${short.url}/keys`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie },
        body: new URLSearchParams({ csrf, name: 'too late', scopes: 'read' }),
      });
      expect(made.status).toBe(303);
      const location = made.headers.get('location')!;
      const id = NEW_KEY_PAGE.exec(location)?.[1];
      // well past the 200 ms it waits (longer only makes it later)
      await new Promise((r) => setTimeout(r, 1000));
      const late = await (await fetch(`${short.url}${location}`, { headers: { cookie } })).text();
      expect(late).not.toMatch(SECRET);
      expect(late).toContain(`The secret of key ${id} is not shown again`);
      // the key was made all the same: it is listed, to be revoked
      expect(late).toContain(`href="/keys/${id}/revoke"`);
    } finally {
      await short.close();
    }
  });

  it.skipIf(!postgresUp)(
    "after a plane restart, a new key's page shows no secret and says to revoke the key and create another",
    async () => {
      const pg = await createTestDatabase('waymark_keys_restart');
      let first: TestPlane | undefined;
      let second: TestPlane | undefined;
      try {
        first = await startTestPlane({ url: pg.url });
        const admin = await first.key('acme', ['admin']);
        const cookie = await session(first.url, admin);
        const csrf = csrfIn(await (await fetch(`${first.url}/keys`, { headers: { cookie } })).text());
        const made = await fetch(`${first.url}/keys`, {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie },
          body: new URLSearchParams({ csrf, name: 'made before a restart', scopes: 'read' }),
        });
        expect(made.status).toBe(303);
        const location = made.headers.get('location')!;
        const id = NEW_KEY_PAGE.exec(location)?.[1];
        await first.close();
        first = undefined;
        // the same database, a new plane process: the session lives on (it is stored), the secret did not
        second = await startTestPlane({ url: pg.url });
        const after = await fetch(`${second.url}${location}`, { headers: { cookie } });
        expect(after.status).toBe(200);
        const html = await after.text();
        expect(html).not.toMatch(SECRET);
        expect(html).toContain(`The secret of key ${id} is not shown again`);
        expect(html).toContain(`href="/keys/${id}/revoke"`);
      } finally {
        await first?.close();
        await second?.close();
        await pg.drop();
      }
    },
  );
});
