/**
 * `npm run screenshots`: every page of both inspectors, as docs/img/<ui>-<page>-<width>-<scheme>.webp, at 1280
 * and 390 px, in the light and the dark scheme, and docs/GUIDE.md's table of them (between its
 * `<!-- screens -->` markers). One run of it:
 * - writes realistic runs through the real runtime into a SQLite store: a completed refund, a paused one
 *   awaiting approval, one decided on the plane and not applied yet, a failed run, a run cancelled with a
 *   reason, a stale run (its lease and its hold at the plane expired mid-run), a LangGraph thread waiting at
 *   `interrupt()`, and a 500-row run (bench/lib/long-run.ts);
 * - starts a real plane on embedded PGlite in a temp dir, syncs the store to it (and another machine sends an
 *   altered row, which the plane quarantines), makes the keys a team has (named, one revoked) and signs in with
 *   the plane's admin key, so the pages show every form; and serves `waymark ui` over the store;
 * - reads both UIs' route tables (the plane's inspector routes, `localUiApp`'s) and fails, naming them, when a
 *   page route has no shot here: a page added later must be added here too;
 * - loads each page in one headless Chromium (UTC, en-US), captures it (CDP Page.captureScreenshot as WebP,
 *   quality 75, the page's full height up to 2,400 px) and removes any docs/img/*.webp it did not write.
 *
 * Run ids are fixed; the times on the pages are those of the run (the clock is not faked: the plane judges
 * holds by its database's clock), so a second run differs in its times only.
 *
 *   npm run screenshots                  (WAYMARK_CHROMIUM: another Chromium than /usr/bin/chromium)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { BrowserContext } from 'playwright-core';
import { END, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { Agent, connectPlane, ScriptedModel } from '../client/index.js';
import { WaymarkSaver } from '../client/langgraph/index.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { localUiApp, serveLocalUi } from '../client/ui/serve.js';
import { Ledger, refundAgent, refundRequest } from '../examples/agents/refund.js';
import { openPlaneDatabase } from '../plane/db/open.js';
import { loadConfig } from '../plane/config.js';
import { startPlane } from '../plane/server.js';
import { inspectorRoutes } from '../plane/ui/routes.js';
import { launchChromium } from '../bench/lib/chromium.js';
import { writeLongRun } from '../bench/lib/long-run.js';
import { file, type Shot, SCHEMES, SHOTS, type Ui, UI_NAME, uncoveredRoutes, WIDTHS } from './screenshot-pages.js';

// the server renders times in the process's zone, the pages' script in the browser's: both UTC
process.env.TZ = 'UTC';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const IMG = join(ROOT, 'docs', 'img');
const GUIDE = join(ROOT, 'docs', 'GUIDE.md');
const MAX_HEIGHT = 2400;
/** Where docs/GUIDE.md's table of the pictures goes. */
const MARKED = /(<!-- screens -->\n)[\s\S]*?(<!-- \/screens -->)/;
/** The plane's shortest hold: the stale run's writer goes quiet and its hold runs out within seconds. */
const HOLD_MS = 1000;

/** The plane's JSON API, with a key. */
async function api<T = Record<string, unknown>>(url: string, key: string, method = 'GET', json?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json ? { 'content-type': 'application/json' } : {}) },
    body: json ? JSON.stringify(json) : undefined,
  });
  const body = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

const dir = mkdtempSync(join(tmpdir(), 'waymark-screenshots-'));
const store = new SqliteCheckpointer({ path: join(dir, 'laptop.db'), writerId: 'laptop' });
const dataDir = join(dir, 'plane');
const database = await openPlaneDatabase({ dataDir, command: 'npm run screenshots' });
const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir, takeoverAfterMs: HOLD_MS }), {
  database,
  logger: pino({ level: 'silent' }),
});
const launching = launchChromium();
launching.catch(() => {});
const ui = await serveLocalUi(store, { port: 0, user: 'alice', label: 'laptop' });
try {
  // the route tables: a page route with no shot fails the run before anything is written
  const missing = uncoveredRoutes(inspectorRoutes(database.db).routes, localUiApp(store).routes);
  if (missing.length)
    throw new Error(`tools/screenshots.ts has no shot of these page routes (add them to SHOTS): ${missing.join(', ')}`);
  if (!MARKED.test(readFileSync(GUIDE, 'utf8')))
    throw new Error('docs/GUIDE.md has no <!-- screens --> … <!-- /screens --> section to write the table in');

  // the team's keys: the bootstrap admin key signs in; the laptop syncs; alice approves; a reader, and one revoked
  const admin = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim();
  const key = async (name: string, scopes: string[]) =>
    api<{ key: string; id: string }>(`${plane.url}/v1/admin/keys`, admin, 'POST', { project: 'local', name, scopes });
  const ingest = await key('laptop', ['ingest']);
  const buildServer = await key('build-server', ['ingest']);
  const alice = await key('alice', ['read', 'approve']);
  const reader = await key('ci-reader', ['read']);
  const old = await key('old-laptop', ['ingest']);
  await api(`${plane.url}/v1/admin/keys/${old.id}/revoke`, admin, 'POST');

  // the runs, written by the real runtime
  const { agent } = refundAgent({ store, ledger: new Ledger(join(dir, 'ledger.jsonl')) });
  await agent.run(refundRequest('1042', 20), { executionId: 'refund-1042' });
  await agent.run(refundRequest('7731', 50_000), { executionId: 'refund-7731' });
  await agent.run(refundRequest('7740', 12_500), { executionId: 'refund-7740' });
  await agent.run(refundRequest('2210', 30_000), { executionId: 'refund-2210' });
  await store.cancel('refund-2210', { reason: 'customer withdrew the request (ticket 4411)' });
  const broken = new Agent({
    name: 'summariser',
    model: new ScriptedModel(() => {
      throw new Error('upstream model returned 500 (overloaded)');
    }),
    tools: [],
    checkpointer: store,
  });
  await broken.run('Summarise the support tickets of the week', { executionId: 'summarise-88' });
  await writeLongRun(store, 'long-run', 500);
  // a LangGraph thread waiting at interrupt()
  const saver = new WaymarkSaver(store);
  await saver.setup();
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async () => ({ messages: [new AIMessage('Order 42 is $30 and was delivered; refunding it.')] }))
    .addNode('approve', async () => {
      const answer = interrupt({ question: 'Refund order 42 for $30?', amount: 30 }) as { approved: boolean };
      return { messages: [new AIMessage(answer.approved ? 'Refunded order 42.' : 'Refund declined.')] };
    })
    .addEdge(START, 'agent')
    .addEdge('agent', 'approve')
    .addEdge('approve', END)
    .compile({ checkpointer: saver });
  await saver.exclusive({ configurable: { thread_id: 'refund-thread-42' } }, (config) =>
    graph.invoke({ messages: [new HumanMessage('Please refund my order 42')] }, config),
  );
  // a run whose runner went quiet mid-run: two rows under a lease nobody renews
  const lease = await store.acquireLease('nightly-report', { holder: 'laptop#4711/1', ttlMs: HOLD_MS });
  for (let turn = 0; turn < 2; turn++)
    await store.put(
      {
        executionId: 'nightly-report',
        nodeId: `turn:${turn}`,
        turn,
        step: 'llm_call',
        status: 'completed',
        agentPath: 'agent:reporter',
        state: {
          messages: [
            { role: 'user', content: 'Write the nightly report' },
            { role: 'assistant', content: `Collected section ${turn + 1} of 5.` },
          ],
        },
      },
      { lease },
    );

  const replica = connectPlane(store, { url: plane.url, apiKey: ingest.key, pollMs: 0, followChanges: false });
  const left = await replica.flush({ timeoutMs: 120_000 });
  if (left.pendingRows) throw new Error(`${left.pendingRows} rows never reached the plane`);
  await replica.stop();
  // alice approves one pause on the plane (the laptop's worker has not applied it yet)
  const pause = (await store.getPendingInterrupt('refund-7740'))!;
  await api(`${plane.url}/v1/executions/refund-7740/decision`, alice.key, 'POST', {
    checkpointId: pause.checkpointId,
    approved: true,
    comment: 'within the quarterly budget',
  });
  // another machine (its own key) sends an altered copy of a synced row, with a backlog behind it: the plane
  // refuses and quarantines the row, and the writers page shows that machine behind
  const [latest] = await store.list('refund-1042', { order: 'desc', limit: 1 });
  await api(`${plane.url}/v1/ingest`, buildServer.key, 'POST', {
    protocol: 1,
    writerId: 'build-server',
    backlog: { rows: 42, bytes: 96_000, oldestPendingAt: new Date(Date.now() - 600_000).toISOString() },
    rows: [{ kind: 'checkpoint', id: latest.id, row: { ...latest, nodeId: 'turn:1/tool:refund (edited)' } }],
  });
  // the stale run's lease and its hold at the plane run out; the API says so before any picture is taken
  await new Promise((r) => setTimeout(r, HOLD_MS + 500));
  const states = Object.fromEntries(
    (
      await api<{ items: { executionId: string; state: string }[] }>(`${plane.url}/v1/executions?limit=50`, admin)
    ).items.map((i) => [i.executionId, i.state]),
  );
  const want = {
    'refund-1042': 'completed',
    'refund-7731': 'paused',
    'refund-2210': 'cancelled',
    'summarise-88': 'failed',
    'nightly-report': 'stale',
    'refund-thread-42': 'paused',
    'long-run': 'completed',
  };
  for (const [id, state] of Object.entries(want))
    if (states[id] !== state) throw new Error(`${id} is ${states[id]} on the plane, not ${state}`);

  // the admin session, as the login form makes one (a script posts the key alone)
  const login = await fetch(`${plane.url}/login`, {
    method: 'POST',
    body: new URLSearchParams({ key: admin, next: '/' }),
    redirect: 'manual',
  });
  const session = /wm_session=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1];
  if (!session) throw new Error(`no session from the plane's login: ${login.status}`);

  const browser = await launching;
  mkdirSync(IMG, { recursive: true });
  const written = new Set<string>();
  const base: Record<Ui, string> = { plane: plane.url, local: ui.url };
  for (const width of WIDTHS) {
    for (const scheme of SCHEMES) {
      const contexts = new Map<string, BrowserContext>();
      const context = async (s: Shot) => {
        const k = `${s.ui}-${s.session !== false}`;
        let c = contexts.get(k);
        if (!c) {
          c = await browser.newContext({
            viewport: { width, height: 860 },
            colorScheme: scheme,
            locale: 'en-US',
            timezoneId: 'UTC',
          });
          if (s.ui === 'plane' && s.session !== false)
            await c.addCookies([{ name: 'wm_session', value: session, url: plane.url }]);
          contexts.set(k, c);
        }
        return c;
      };
      for (const s of SHOTS) {
        const page = await (await context(s)).newPage();
        const path = s.path.replace('{reader}', reader.id);
        await page.goto(`${base[s.ui]}${path}`, { waitUntil: 'load' });
        const cdp = await page.context().newCDPSession(page);
        // the scheme as CDP emulates it (the context's colorScheme sets the same media feature)
        await cdp.send('Emulation.setEmulatedMedia', { features: [{ name: 'prefers-color-scheme', value: scheme }] });
        const anchor = path.includes('#') ? path.slice(path.indexOf('#') + 1) : null;
        const { top, height } = await page.evaluate((id) => {
          const el = id ? document.getElementById(id) : null;
          return {
            top: el ? Math.max(0, el.getBoundingClientRect().top + window.scrollY - 8) : 0,
            height: document.documentElement.scrollHeight,
          };
        }, anchor);
        const shot = await cdp.send('Page.captureScreenshot', {
          format: 'webp',
          quality: 75,
          captureBeyondViewport: true,
          clip: { x: 0, y: top, width, height: Math.min(height - top, s.height ?? MAX_HEIGHT), scale: 1 },
        });
        const name = file(s, width, scheme);
        writeFileSync(join(IMG, name), Buffer.from(shot.data, 'base64'));
        written.add(name);
        await cdp.detach();
        await page.close();
      }
      for (const c of contexts.values()) await c.close();
    }
  }
  await browser.close();
  for (const f of readdirSync(IMG)) if (f.endsWith('.webp') && !written.has(f)) rmSync(join(IMG, f));

  // the guide's table of every page
  const rows = SHOTS.map((s) => {
    const cell = (width: number, scheme: string) => `[${scheme}](img/${file(s, width, scheme)})`;
    return `| ${UI_NAME[s.ui]} | ${s.title} | \`${s.path.replace('{reader}', ':id')}\` | ${WIDTHS.map((w) => SCHEMES.map((c) => cell(w, c)).join(' · ')).join(' | ')} |`;
  });
  const table = ['| UI | page | path | 1280 px | 390 px |', '| --- | --- | --- | --- | --- |', ...rows].join('\n');
  const guide = readFileSync(GUIDE, 'utf8');
  writeFileSync(
    GUIDE,
    guide.replace(MARKED, (_m, a: string, b: string) => `${a}${table}\n${b}`),
  );
  // the table's columns aligned as the house formatter (biome) lays Markdown tables out, so `npm run lint` stays green
  execFileSync(join(ROOT, 'node_modules', '.bin', 'biome'), ['format', '--write', GUIDE], { stdio: 'ignore' });
  console.log(
    `${written.size} pictures in docs/img (${SHOTS.length} pages × 2 widths × 2 schemes); docs/GUIDE.md's table updated`,
  );
} finally {
  await (await launching.catch(() => null))?.close();
  await ui.close();
  await plane.close();
  await database.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
