/// <reference lib="dom" />
/**
 * What a long run's page costs in a browser, on both UIs that serve it: a run of `rows` rows written through the
 * real runtime into a SQLite store (bench/lib/long-run.ts: a supervisor, model calls and tool calls of a few hundred
 * characters, a delegated worker with idempotent charges, a pause), the same rows synced into a plane on PGlite;
 * `waymark ui` over the store and the plane's inspector (signed in with a read key), both in this process on
 * 127.0.0.1 port 0. Each repetition loads the run page cold (a new browser context: no cache, no cookies but the
 * session) in Debian's Chromium at 1280 × 860, the two UIs alternating which goes first, and reads the page's HTML
 * bytes (the response body), the time to its first byte (the server's part) and to its last (a run page sends its
 * summary before the rest is read: inspector/stream-page.tsx), its first contentful paint (the
 * browser's own `first-contentful-paint` entry), the time to the load event, the height of its document in px and
 * its count of elements, and the renderer's main-thread time up to then by kind (layout, style, script: CDP
 * Performance.getMetrics). Reported as median [min–max] over the repetitions; one load of each first is not counted
 * (the servers' and the browser's first use). Beside them, in the same interleaving, the raw limit: a one-line page
 * served by node:http, whose first paint is what a cold load costs this browser on this machine before any page of
 * ours is parsed.
 *
 * Then the servers' part without a browser, which the machine's load disturbs less than wall times: each UI's page
 * fetched `reps` × 4 times in a row (after 3 unmeasured) with the process's CPU time around each fetch (its server
 * and this fetch: the CPU ms a page costs), and the SQL statements one GET of the plane's page sends, traced on its
 * PGlite (bench/lib/sql-trace.ts): their count, their summed time, and each one's with `WAYMARK_BENCH_SQL=1`.
 *
 *   npx tsx bench/run-page.ts [rows=500] [reps=7] [path=/runs/long-run]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Browser } from 'playwright-core';
import { launchChromium } from './lib/chromium.js';
import { connectPlane } from '../client/index.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { serveLocalUi } from '../client/ui/serve.js';
import { createKey, loadConfig, openPlaneDatabase, startPlane } from '../plane/index.js';
import { writeLongRun } from './lib/long-run.js';
import { traceSql } from './lib/sql-trace.js';
import { fmt, summary } from './lib/stats.js';

const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const ROWS = SMOKE ? 30 : Number(process.argv[2] ?? 500);
const REPS = SMOKE ? 1 : Number(process.argv[3] ?? 7);
const PATH = process.argv[4] ?? '/runs/long-run';
const RUN = 'long-run';

interface Load {
  bytes: number;
  /** from the request sent to the first byte of the answer: the server's part */
  ttfbMs: number;
  /** from the request sent to the answer's last byte: a page sent in parts (its summary first) ends after its first paint may have happened */
  lastByteMs: number;
  fcpMs: number;
  /** 1 when the first paint came before the answer's last byte arrived (both from the navigation's start), else 0 */
  fcpBeforeEnd: number;
  loadMs: number;
  heightPx: number;
  nodes: number;
  /** the renderer's main-thread time by kind up to the load event (CDP Performance.getMetrics): what the browser's part is */
  taskMs: number;
  layoutMs: number;
  styleMs: number;
  scriptMs: number;
}

const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-run-page-'));
const store = new SqliteCheckpointer({ path: join(dir, 'laptop.db'), writerId: 'laptop' });
const database = await openPlaneDatabase({ dataDir: 'memory://' });
const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://' }), {
  database,
  logger: pino({ level: 'silent' }),
});
const browser: Browser = await launchChromium();
const ui = await serveLocalUi(store, { port: 0 });
const FLOOR_PAGE = '<!doctype html><html lang="en"><meta charset="utf-8"><title>floor</title><p>One line.</p></html>';
const floor = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(FLOOR_PAGE));
await new Promise<void>((resolve) => floor.listen(0, '127.0.0.1', resolve));
const floorUrl = `http://127.0.0.1:${(floor.address() as AddressInfo).port}`;
try {
  await writeLongRun(store, RUN, ROWS);
  const rows = (await store.latest(RUN))!.seq + 1;
  const db = database.db as Parameters<typeof createKey>[0];
  const ingest = await createKey(db, { createProject: true, project: 'bench', scopes: ['ingest'] });
  const read = await createKey(db, { project: 'bench', scopes: ['read'] });
  const replica = connectPlane(store, { url: plane.url, apiKey: ingest.key, followChanges: false });
  const left = await replica.flush({ timeoutMs: 120_000 });
  if (left.pendingRows) throw new Error(`${left.pendingRows} rows never reached the plane`);
  await replica.stop();
  // a session as the login form makes one (a script posts the key alone: no browser, no CSRF token to show)
  const login = await fetch(`${plane.url}/login`, {
    method: 'POST',
    body: new URLSearchParams({ key: read.key, next: '/' }),
    redirect: 'manual',
  });
  const session = /wm_session=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1];
  if (!session) throw new Error(`no session from the plane's login: ${login.status}`);

  const uis = [
    { name: 'waymark ui (SQLite)', url: ui.url, path: PATH, cookie: null },
    { name: 'plane inspector (PGlite)', url: plane.url, path: PATH, cookie: session },
  ];
  /** the raw limit: loaded like the pages, measured only in the browser */
  const raw = { name: 'one-line page (node:http)', url: floorUrl, path: '/', cookie: null };
  const targets = [...uis, raw];

  /** One cold load of the run page: a new context, the page fetched, painted and measured. */
  async function load(target: (typeof uis)[number]): Promise<Load> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    try {
      if (target.cookie) await context.addCookies([{ name: 'wm_session', value: target.cookie, url: target.url }]);
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      await cdp.send('Performance.enable');
      const res = await page.goto(`${target.url}${target.path}`, { waitUntil: 'load' });
      if (res === null || res.status() !== 200) throw new Error(`${target.name}: ${res?.status()} for ${target.path}`);
      const bytes = (await res.body()).length;
      const m = await page.evaluate(async () => {
        // the paint entry is queued after the frame that painted: wait for it rather than read too early
        const fcp = await new Promise<number>((resolve) => {
          const [e] = performance.getEntriesByName('first-contentful-paint');
          if (e) return resolve(e.startTime);
          new PerformanceObserver((l) => resolve(l.getEntries()[0].startTime)).observe({
            type: 'paint',
            buffered: true,
          });
        });
        const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
        return {
          ttfbMs: nav.responseStart - nav.requestStart,
          lastByteMs: nav.responseEnd - nav.requestStart,
          fcpMs: fcp,
          fcpBeforeEnd: fcp < nav.responseEnd ? 1 : 0,
          loadMs: nav.loadEventStart,
          heightPx: document.documentElement.scrollHeight,
          nodes: document.getElementsByTagName('*').length,
        };
      });
      const { metrics } = await cdp.send('Performance.getMetrics');
      const ms = (name: string) => 1000 * (metrics.find((x) => x.name === name)?.value ?? 0);
      return {
        bytes,
        ...m,
        taskMs: ms('TaskDuration'),
        layoutMs: ms('LayoutDuration'),
        styleMs: ms('RecalcStyleDuration'),
        scriptMs: ms('ScriptDuration'),
      };
    } finally {
      await context.close();
    }
  }

  const loads = targets.map(() => [] as Load[]);
  // one load each first: the servers' and the browser's own first use are not counted
  for (const t of targets) await load(t);
  for (let i = 0; i < REPS; i++) {
    const order = i % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
    for (const j of order) loads[j].push(await load(targets[j]));
  }

  /** One fetch of the page from a UI, without a browser (the session's cookie on the plane's). */
  async function fetchPage(target: (typeof uis)[number]): Promise<void> {
    const res = await fetch(`${target.url}${PATH}`, {
      headers: target.cookie ? { cookie: `wm_session=${target.cookie}` } : {},
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${target.name}: ${res.status} for ${PATH}`);
  }
  /** The CPU ms of each of `n` fetches of the page in a row (the process's: its server and the fetch), after 3 unmeasured. */
  async function serverCpu(target: (typeof uis)[number], n: number): Promise<number[]> {
    for (let i = 0; i < 3; i++) await fetchPage(target);
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const c0 = process.cpuUsage();
      await fetchPage(target);
      const c = process.cpuUsage(c0);
      out.push((c.user + c.system) / 1000);
    }
    return out;
  }
  const cpu = uis.map(() => [] as number[]);
  for (let i = 0; i < 4; i++)
    for (const j of i % 2 === 0 ? [0, 1] : [1, 0]) cpu[j].push(...(await serverCpu(uis[j], REPS)));
  // the statements of one GET of the plane's page
  const trace = traceSql(database.db);
  await fetchPage(uis[1]);
  const statements = [...trace.statements];
  trace.stop();
  const sqlMs = statements.reduce((n, x) => n + x.ms, 0);

  const date = new Date().toISOString();
  const command = ['npx tsx bench/run-page.ts', ...process.argv.slice(2)].join(' ');
  console.log(
    `\`${command}\` on ${date} (Node ${process.version}, ${cpus().length} cores; ${rows}-row run, ${PATH}, cold loads at 1280 × 860, ${REPS} reps interleaved): median [min–max]`,
  );
  /** the loads of UI `j` whose first paint came before the page's last byte arrived: the summary painted before the rest */
  const early = (j: number) => loads[j].filter((l) => l.fcpBeforeEnd === 1).length;
  for (const [j, t] of uis.entries()) {
    const pick = (k: keyof Load) => summary(loads[j].map((l) => l[k]));
    console.log(
      `  ${t.name.padEnd(27)} HTML ${fmt(pick('bytes'))} bytes · first byte ${fmt(pick('ttfbMs'))} ms · last byte ${fmt(pick('lastByteMs'))} ms · first contentful paint ${fmt(pick('fcpMs'))} ms (before the last byte in ${early(j)} of ${loads[j].length} loads) · load ${fmt(pick('loadMs'))} ms · height ${fmt(pick('heightPx'))} px · ${fmt(pick('nodes'))} elements · main thread ${fmt(pick('taskMs'))} ms (layout ${fmt(pick('layoutMs'))}, style ${fmt(pick('styleMs'))}, script ${fmt(pick('scriptMs'))}) · server CPU ${fmt(summary(cpu[j]), 1)} ms a page (${cpu[j].length} fetches)`,
    );
  }
  const rawPick = (k: keyof Load) => summary(loads[2].map((l) => l[k]));
  console.log(
    `  ${raw.name.padEnd(27)} HTML ${fmt(rawPick('bytes'))} bytes · first byte ${fmt(rawPick('ttfbMs'))} ms · first contentful paint ${fmt(rawPick('fcpMs'))} ms · load ${fmt(rawPick('loadMs'))} ms · main thread ${fmt(rawPick('taskMs'))} ms: the raw limit of a cold load here`,
  );
  console.log(
    `  plane: ${statements.length} SQL statements for one GET of ${PATH}, ${sqlMs.toFixed(1)} ms from call to answer in all`,
  );
  if (process.env.WAYMARK_BENCH_SQL === '1')
    for (const x of statements)
      console.log(
        `    ${x.ms.toFixed(2).padStart(6)} ms ${String(x.rows).padStart(4)} rows  ${x.sql.replace(/\s+/g, ' ')}`,
      );
  for (const [j, t] of uis.entries()) {
    const pick = (k: keyof Load) => summary(loads[j].map((l) => l[k]));
    console.log(
      JSON.stringify({
        bench: 'run-page',
        ui: t.name,
        rows,
        path: PATH,
        reps: REPS,
        bytes: pick('bytes'),
        ttfbMs: pick('ttfbMs'),
        lastByteMs: pick('lastByteMs'),
        fcpMs: pick('fcpMs'),
        fcpBeforeLastByte: early(j),
        loadMs: pick('loadMs'),
        heightPx: pick('heightPx'),
        elements: pick('nodes'),
        taskMs: pick('taskMs'),
        layoutMs: pick('layoutMs'),
        styleMs: pick('styleMs'),
        scriptMs: pick('scriptMs'),
        serverCpuMs: summary(cpu[j]),
        ...(j === 1 ? { statements: statements.length, sqlMs } : {}),
        cores: cpus().length,
        node: process.version,
        date,
      }),
    );
  }
  console.log(
    JSON.stringify({
      bench: 'run-page',
      ui: raw.name,
      path: '/',
      reps: REPS,
      bytes: rawPick('bytes'),
      ttfbMs: rawPick('ttfbMs'),
      fcpMs: rawPick('fcpMs'),
      loadMs: rawPick('loadMs'),
      taskMs: rawPick('taskMs'),
      cores: cpus().length,
      node: process.version,
      date,
    }),
  );
} finally {
  await new Promise((resolve) => floor.close(resolve));
  await browser.close();
  await ui.close();
  await plane.close();
  await database.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
