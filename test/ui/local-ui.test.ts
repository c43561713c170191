/// <reference lib="dom" />
/**
 * `waymark ui`: the inspector's own pages over a local store, from the real
 * binary (dist/, built by global-setup) as a child process, read over HTTP
 * and in headless Chromium: the run list, a paused run's pause and context, a
 * diff, idempotency entries, the quarantine and the outbox's sync status; a
 * run written while it serves shows on reload (nothing copied); on a SQLite
 * file and on Postgres. Bad command lines exit 2 naming every problem.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import type { Checkpointer } from '../../client/checkpointer.js';
import { redactUrl } from '../../client/open-store.js';
import { Agent, ScriptedModel } from '../../client/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { SyncPage, type SyncStatus } from '../../inspector/sync-page.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { docSection, readDoc } from '../helpers/docs.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { BIN, endGroup, hasExited, pollUntil, ROOT, serverPid, waymarkAsync } from '../helpers/plane-process.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-local-ui-');
afterAll(() => tmp.cleanup());
const XSS = `<script>window.__xss=1</script> "><img src=x onerror="window.__xss=2">`;

interface Ui {
  /** The spawned process: the UI, or the shell that runs it (`viaNpmShell`). */
  pid: number;
  url: string;
  stdout: () => string;
  stop(): Promise<number | null>;
}

/**
 * `waymark ARGS` (a `ui` command line) started as a child process, once it says where it listens.
 * `viaNpmShell`: as `npx waymark ui` runs it, under npm's `sh -c` with npm's lifecycle variable, in a
 * process group of its own (which the test ends).
 */
async function startUi(args: string[], cwd = ROOT, o: { viaNpmShell?: boolean } = {}): Promise<Ui> {
  const child: ChildProcess = o.viaNpmShell
    ? spawn('sh', ['-c', `true && ${[process.execPath, BIN, ...args].map((a) => JSON.stringify(a)).join(' ')}`], {
        cwd,
        detached: true,
        env: { ...process.env, npm_lifecycle_event: 'npx' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const m = /listening on (http:\/\/\S+?)\/? /.exec(out);
      if (m) resolve(m[1]);
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`waymark ui exited (${code}) before listening: ${out}${err}`)));
  });
  return {
    pid: child.pid!,
    url,
    stdout: () => out,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      return ((await exited) as [number | null])[0];
    },
  };
}

/** A GET with a Host header of our choosing (fetch does not let a page set it), or none; `path` may be an absolute-form target. */
function getWithHost(url: string, host: string | null, path?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ...(path ? { path } : {}), ...(host === null ? { setHost: false } : { headers: { host } }) },
      (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Runs of the refund example: one completed with its charge, one paused at approval (its input carrying markup), one failed; one quarantined outbox entry. */
async function seed(store: Checkpointer): Promise<void> {
  const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file(`ledger-${Math.random()}.jsonl`)) });
  expect((await agent.run(refundRequest('7', 20), { executionId: 'refund-small' })).status).toBe('completed');
  expect((await agent.run(`${refundRequest('1042', 50000)} ${XSS}`, { executionId: 'refund-large' })).status).toBe(
    'paused',
  );
  const broken = new Agent({
    name: 'broken-bot',
    model: new ScriptedModel(() => {
      throw new Error('upstream model returned 500');
    }),
    tools: [],
    checkpointer: store,
  });
  expect((await broken.run('hello', { executionId: 'broken-run' })).status).toBe('failed');
  const refused = await store.put(step('refused-run', 0));
  await store.markQuarantined({ [refused.id]: 'plane: invalid_row: the plane says this row is too large' });
}

const text = async (url: string) => {
  const r = await fetch(url);
  return { status: r.status, body: await r.text(), headers: r.headers };
};

/** What every store backend must show: the pages over HTTP, and a run written meanwhile. */
async function checkPages(ui: Ui, store: Checkpointer, label: string): Promise<void> {
  const list = await text(`${ui.url}/`);
  expect(list.status).toBe(200);
  expect(list.body).toMatch(/refund-large[\s\S]*paused/);
  expect(list.body).toMatch(/refund-small[\s\S]*completed/);
  expect(list.body).toContain('upstream model returned 500');
  expect(list.body).toContain(label);
  // the plane's CSP and secure headers; the nav of a local store: no writers, keys or log out
  expect(list.headers.get('content-security-policy')).toMatch(/default-src 'none'.*script-src 'self'/);
  expect(list.headers.get('x-frame-options')).toBe('SAMEORIGIN');
  expect(list.body).toContain('href="/sync"');
  expect(list.body).not.toMatch(/href="\/(writers|keys)"|Log out/);
  expect((await text(`${ui.url}/writers`)).status).toBe(404);
  expect((await text(`${ui.url}/keys`)).status).toBe(404);
  expect((await fetch(`${ui.url}/logout`, { method: 'POST' })).status).toBe(405);
  expect((await text(`${ui.url}/?cursor=not-ours`)).status).toBe(400);
  // ids wrap only after their separators; the header says who decisions are recorded as; the tab has an icon, not a 404
  expect(list.body).toMatch(/agent:<wbr\/?>refund-bot/);
  expect(list.body).toMatch(/data-testid="recording-as">recording decisions as <strong>[^<]+<\/strong>/);
  expect(list.body).toContain('<link rel="icon" href="/ui/icon.svg"');
  for (const icon of ['/favicon.ico', '/ui/icon.svg']) {
    const r = await fetch(`${ui.url}${icon}`);
    expect([r.status, r.headers.get('content-type'), (await r.text()).startsWith('<svg')]).toEqual([
      200,
      'image/svg+xml',
      true,
    ]);
  }

  const paused = await text(`${ui.url}/runs/refund-large`);
  expect(paused.status).toBe(200);
  expect(paused.body).toMatch(/Pause: manager_approval/);
  expect(paused.body).toContain('&quot;amount&quot;: 50000');
  expect(paused.body).toContain('&lt;script&gt;window.__xss=1&lt;/script&gt;');
  expect(paused.body).toContain('data-testid="diff"');
  const small = await text(`${ui.url}/runs/refund-small`);
  // the cached result is pretty-printed like the other JSON (not one compact line broken anywhere)
  expect(small.body).toMatch(/Idempotency entries[\s\S]*charge[\s\S]*<pre>\{\n {2}&quot;charged&quot;: 20/);
  // a run whose pause was answered keeps its Pause section: reason, frozen context, and the writer that claimed it
  const { agent: approver } = refundAgent({ store, ledger: new Ledger(tmp.file(`answered-${Math.random()}.jsonl`)) });
  await approver.run(refundRequest('9', 5000), { executionId: 'refund-answered' });
  expect((await approver.resume('refund-answered', { approved: true })).status).toBe('completed');
  const answered = await text(`${ui.url}/runs/refund-answered`);
  expect(answered.body).toMatch(/Pause: manager_approval/);
  expect(answered.body).toContain('&quot;amount&quot;: 5000');
  expect(answered.body).toContain(`claimed by <span class="writer" title="${store.writerId}"`);
  expect(answered.body).toMatch(/claimed by <span class="writer"[^>]*>this store /);
  expect((await text(`${ui.url}/runs/no-such-run`)).status).toBe(404);

  const q = await text(`${ui.url}/quarantine`);
  expect(q.body).toContain('invalid_row');
  expect(q.body).toContain('the plane says this row is too large');
  expect(q.body).toContain('href="/runs/refused-run"');
  const sync = await text(`${ui.url}/sync`);
  expect(sync.body).toContain(store.writerId);
  expect(sync.body).toMatch(/Quarantined<\/th><td><a href="\/quarantine">1<\/a>/);
  expect(sync.body).toMatch(/Last drain<\/th><td>never connected to a plane/);
  expect(sync.body).toContain('kept in the outbox until a plane is connected');
  expect(sync.body).toMatch(/incomplete for 1 run:[\s\S]*refused-run/);
  const backlog = (await store.outboxStats()).pendingCount;
  expect(backlog).toBeGreaterThan(0);
  expect(sync.body).toContain(`${backlog} rows`);

  // a run written while the UI serves shows on the next reload: the pages read the live store
  expect((await text(`${ui.url}/`)).body).not.toContain('written-later');
  const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file(`later-${Math.random()}.jsonl`)) });
  await agent.run(refundRequest('9', 30), { executionId: 'written-later' });
  expect((await text(`${ui.url}/`)).body).toContain('written-later');
  expect((await text(`${ui.url}/runs/written-later`)).body).toMatch(/completed/);
}

describe('waymark ui over a SQLite store', () => {
  const db = tmp.file('laptop.db');
  let store: SqliteCheckpointer;
  let ui: Ui;
  let browser: Browser;
  // Chromium starts while the store is seeded and the UI starts
  let launching: Promise<Browser> | undefined;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    launching = launchChromium();
    launching.catch(() => {});
    store = new SqliteCheckpointer({ path: db });
    await seed(store);
    ui = await startUi(['ui', '--db', db, '--port', '0']);
    browser = await launching;
  });
  afterAll(async () => {
    await (await launching?.catch(() => null))?.close();
    expect(await ui?.stop()).toBe(0);
    await store?.close();
  });

  it('serves the run list, run pages, quarantine and sync status on 127.0.0.1; a run written meanwhile shows on reload', async () => {
    expect(ui.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(ui.stdout()).toContain(`waymark ui: ${db}`);
    await checkPages(ui, store, db);
  });

  it('answers only to a loopback Host name (a rebound DNS name reads nothing)', async () => {
    const port = new URL(ui.url).port;
    expect((await getWithHost(`${ui.url}/`, `localhost:${port}`)).status).toBe(200);
    const evil = await getWithHost(`${ui.url}/runs/refund-large`, `evil.example:${port}`);
    expect(evil.status).toBe(403);
    expect(evil.body).not.toContain('manager_approval');
    // the Host header decides, not a loopback absolute-form target beside it; no Host header at all is refused too
    const absolute = await getWithHost(`${ui.url}/`, `evil.example:${port}`, `${ui.url}/runs/refund-large`);
    expect([absolute.status, absolute.body.includes('manager_approval')]).toEqual([403, false]);
    const hostless = await getWithHost(`${ui.url}/runs/refund-large`, null);
    // (Node's server refuses an HTTP/1.1 request without Host itself: 400)
    expect([hostless.status, hostless.body.includes('manager_approval')]).toEqual([400, false]);
    expect((await getWithHost(`${ui.url}/`, `[::1]:${port}`)).status).toBe(200);
  });

  it('a port in use is said as such, exit 1', async () => {
    const taken = await waymarkAsync(['ui', '--db', db, '--port', new URL(ui.url).port]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain(
      `waymark ui: PORT_IN_USE: port ${new URL(ui.url).port} is in use (another waymark ui?); pass --port with another port, or --port 0 for a free one`,
    );
  });

  it('in headless Chromium: the list, a paused run with its context and a diff, quarantine, sync status; local times; 390 px wide', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, timezoneId: 'Asia/Kolkata' });
    const page = await ctx.newPage();
    const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    await page.goto(`${ui.url}/`);
    expect(await page.textContent('body')).toMatch(/refund-large\s*paused/);
    expect(await page.textContent('header')).toMatch(/Runs\s*Pending approvals\s*\d*\s*Quarantine\s*Sync status/);
    // times in the reader's zone, UTC on hover (the plane's script)
    const t = page.locator('tbody tr:has-text("refund-small") time').first();
    await expect.poll(() => t.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+05:30$/);
    expect(await t.getAttribute('title')).toMatch(/ UTC$/);
    await shot('local-01-runs');
    await page.fill('input[name=q]', 'refund-l');
    await page.click('form.filters button');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);

    await page.click('a[href="/runs/refund-large"]');
    await page.waitForURL(`${ui.url}/runs/refund-large`);
    const body = (await page.textContent('body'))!;
    expect(body).toMatch(/Pause: manager_approval/);
    expect(body).toContain('"amount": 50000');
    expect(await page.locator('ol.timeline li').count()).toBe(3);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.$$eval('script', (s) => s.map((e) => e.getAttribute('src')))).toEqual([
      '/ui/local-time.js',
      '/ui/shortcuts.js',
    ]);
    await shot('local-02-run-paused');
    await page.fill('input[name=a]', '0');
    await page.fill('input[name=b]', '1');
    await page.click('#diff-h + form button');
    await page.waitForURL(/a=0&b=1/);
    expect(await page.textContent('[data-testid=diff]')).toMatch(/1 message in common; 1 added; 2 fields changed/);

    await page.setViewportSize({ width: 390, height: 800 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(1);
    await shot('local-03-run-narrow');
    await page.goto(`${ui.url}/`);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(1);
    // the run list stacks at phone width: nothing scrolls inside its box, each cell says its column, ids wrap only at ':' or '/'
    expect(await page.$$eval('.table-wrap', (ws) => ws.map((w) => w.scrollWidth - w.clientWidth))).toEqual([0]);
    expect(
      await page.locator('tbody tr:has-text("refund-small") td[data-testid=agent]').getAttribute('data-label'),
    ).toBe('Agent');
    const agentLines = await page.$eval('tbody tr td[data-testid=agent]', (td) => {
      const r = document.createRange();
      r.selectNodeContents(td);
      return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size;
    });
    expect(agentLines).toBe(1);

    await page.click('nav a[href="/sync"]');
    await page.waitForURL(`${ui.url}/sync`);
    expect(await page.textContent('[data-testid=quarantined]')).toMatch(/Quarantined\s*1 \(last: plane: invalid_row/);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(1);
    await shot('local-04-sync-narrow');
    await page.click('[data-testid=quarantined] a');
    await page.waitForURL(`${ui.url}/quarantine`);
    expect(await page.textContent('main')).toMatch(/invalid_row[\s\S]*refused-run/);
    await ctx.close();
  });
});

describe('waymark ui over a Postgres store', () => {
  let pg: TestDatabase | null = null;
  let store: PostgresCheckpointer;
  let ui: Ui;
  beforeAll(async () => {
    if (!(await pgReady('local ui'))) return;
    pg = await createTestDatabase('waymark_local_ui');
    store = new PostgresCheckpointer({ url: pg.url, max: 2 });
    await store.setup();
    await seed(store);
    ui = await startUi(['ui', '--url', pg.url, '--port', '0']);
  });
  afterAll(async () => {
    expect(await ui?.stop()).toBe(0);
    await store?.close();
    await pg?.drop();
  });

  it('serves the same pages from --url postgres://…, live', async (ctx) => {
    if (!pg) return ctx.skip();
    await checkPages(ui, store, redactUrl(pg!.url));
  });
});

describe('waymark ui command line', () => {
  it('refuses bad input with exit code 2, naming every problem, and opens nothing', async () => {
    const none = await waymarkAsync(['ui']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('a store is required: --db FILE (a SQLite file) or --url postgres://…');
    const bad = await waymarkAsync([
      'ui',
      '--db',
      tmp.file('never.db'),
      '--url',
      'mysql://x',
      '--host',
      '0.0.0.0',
      '--port',
      'eighty',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('4 problems');
    expect(bad.stderr).toContain('give --db or --url, not both');
    expect(bad.stderr).toContain("option '--url' must be a postgres:// URL (got 'mysql://x')");
    expect(bad.stderr).toContain(`option '--port': must be an integer, from 0 to 65535 (got "eighty")`);
    expect(bad.stderr).toMatch(/host '0\.0\.0\.0' is not a loopback address.*--allow-remote/);
    expect(() => readFileSync(tmp.file('never.db'))).toThrow();
    // a store that does not exist is not created
    const missing = await waymarkAsync(['ui', '--db', tmp.file('nope.db'), '--port', '0']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no store at');
    const help = await waymarkAsync(['--help']);
    expect(help.stdout).toMatch(/\n {2}ui +The inspector over a local store/);
  });
});

const IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;

/** Every source file and package `entry` loads at run time (static imports; type-only ones skipped), transitively. */
function runtimeGraph(entry: string): { files: string[]; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const [, , typeOnly, spec] = m;
      if (typeOnly || /^\s*export\s+type\s*\{/.test(m[0])) continue;
      if (!spec.startsWith('.')) {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
        continue;
      }
      const base = resolve(dirname(file), spec.replace(/\.js$/, ''));
      visit(existsSync(`${base}.ts`) ? `${base}.ts` : `${base}.tsx`);
    }
  };
  visit(join(ROOT, entry));
  return { files: [...files].map((f) => relative(ROOT, f)), packages };
}

describe('layering', () => {
  it("the local UI loads the inspector's page components (the plane's too) and nothing of the plane; other commands load no hono", () => {
    const ui = runtimeGraph('client/ui/serve.tsx');
    expect(ui.files).toContain('inspector/pages.tsx');
    expect(ui.files).toContain('inspector/run-page.tsx');
    expect(ui.files.filter((f) => f.startsWith('plane/'))).toEqual([]);
    expect([...ui.packages].filter((p) => /drizzle|pglite|^postgres$|pino/.test(p))).toEqual([]);
    // the CLI loads the UI (and hono) only when `waymark ui` runs
    const cli = runtimeGraph('client/cli/main.ts');
    expect(cli.files.filter((f) => f.startsWith('plane/') || f.startsWith('client/ui/serve'))).toEqual([]);
    expect([...cli.packages].filter((p) => p.includes('hono'))).toEqual([]);
  });
});

describe('the sync status page of a store never connected to a plane', () => {
  it('says nothing was sent yet (not that the plane copy is complete) and that the backlog is kept until a plane is connected', async () => {
    const s: SyncStatus = {
      writerId: 'w',
      pendingCount: 3,
      pendingBytes: 900,
      oldestPendingAt: null,
      oldestPendingAgeMs: null,
      quarantinedCount: 0,
      lastQuarantineReason: null,
      drain: null,
      incomplete: [],
      diverged: [],
      lost: [],
    };
    const html = String(await (SyncPage({ s }) as { toString(): string | Promise<string> }).toString());
    expect(html).toMatch(/Plane copy<\/th><td>nothing sent yet: there is no plane copy/);
    expect(html).toContain('3 rows, 900 bytes (kept in the outbox until a plane is connected with connectPlane)');
    expect(html).not.toContain('complete (no row refused)');
    // connected: a copy with no hole, though the plane refused rows by seq (another branch), says both, not "no row refused"
    const drain = {
      state: 'idle',
      at: '2026-12-06T00:00:00.000Z',
      lastSuccessAt: null,
      lastAckAt: null,
      lastError: null,
      lastErrorAt: null,
    };
    const refused = String(
      await (
        SyncPage({ s: { ...s, drain, quarantinedCount: 1, diverged: [['r-1', 1]] } }) as {
          toString(): string | Promise<string>;
        }
      ).toString(),
    );
    expect(refused).toContain(
      'complete (no hole: the rows the plane refused are not missing from its copy, see below)',
    );
    const clean = String(
      await (SyncPage({ s: { ...s, drain } }) as { toString(): string | Promise<string> }).toString(),
    );
    expect(clean).toContain('complete (no row refused)');
  });
});

describe("the GUIDE's Local UI section", () => {
  it('runs as pasted, from the directory of the store', async () => {
    const guide = readDoc('docs/GUIDE.md');
    const section = docSection(guide, '## Local UI');
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    const line = block
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.startsWith('npx waymark ui'));
    expect(line).toBe('npx waymark ui --db runs.db');
    const cwd = tmp.file('readme');
    mkdirSync(cwd, { recursive: true });
    const store = new SqliteCheckpointer({ path: join(cwd, 'runs.db') });
    await seed(store);
    // port 0 instead of the default 4610, so test files may run side by side
    const ui = await startUi([...line!.replace(/^npx waymark /, '').split(/\s+/), '--port', '0'], cwd);
    try {
      expect((await text(`${ui.url}/runs/refund-large`)).body).toMatch(/Pause: manager_approval/);
      // Pending approvals lists the open pauses by run id, as the GUIDE says, not by when they paused: a run paused later with a smaller id comes first
      const prose = guide.replace(/\s+/g, ' ');
      expect(prose).toContain("its Pending approvals lists the store's open pauses by run id");
      expect(prose).toContain('Pending approvals (the open pauses by run id');
      const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file('ledger-readme.jsonl')) });
      expect((await agent.run(refundRequest('1043', 50000), { executionId: 'aaa-late' })).status).toBe('paused');
      const inbox = (await text(`${ui.url}/approvals`)).body;
      const at = (id: string) => inbox.indexOf(`href="/runs/${id}#pause-h"`);
      expect(at('refund-large')).toBeGreaterThan(at('aaa-late'));
      expect(at('aaa-late')).toBeGreaterThan(-1);
      // and the page says so (the plane's own inbox, which keeps the order pauses opened in, says oldest first)
      expect(inbox).toContain('Pauses waiting for an answer, by run id.');
      expect(inbox).not.toContain('oldest first');
    } finally {
      expect(await ui.stop()).toBe(0);
      await store.close();
    }
  });
});

describe('waymark ui started through npm', () => {
  it('stops when npm goes: SIGTERM to the shell npm ran it in (which dash does not pass on) ends the UI it left', async () => {
    const db = tmp.file('npx-ui.db');
    const store = new SqliteCheckpointer({ path: db });
    await store.setup();
    await store.close();
    const ui = await startUi(['ui', '--db', db, '--port', '0'], ROOT, { viaNpmShell: true });
    try {
      expect((await fetch(`${ui.url}/`)).status).toBe(200);
      const server = serverPid(ui.pid);
      process.kill(ui.pid, 'SIGTERM');
      await pollUntil(async () => hasExited(server) && !(await fetch(`${ui.url}/`).catch(() => null)), 60_000, 100);
    } finally {
      endGroup(ui.pid);
    }
  });
});
