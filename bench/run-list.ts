/**
 * What the run list costs a plane with many runs: `runs` runs of three rows each (a model call, a tool call and the
 * run's end, one in ten failed) ingested through `POST /v1/ingest` by four writers, each run whole in one batch of
 * one writer, into a plane on Postgres (a scratch database) and a plane on PGlite, both in this process on
 * 127.0.0.1 port 0. Each repetition GETs `/v1/executions?limit=1000` (the first page) and then walks every page
 * by its cursor, on both planes, the two alternating which goes first; two walks of each are not counted first
 * (warm-up). Reported as median [min–max] over the repetitions: the first page's ms and the whole walk's ms.
 *
 * Then the SQL one GET of the first page sends, with each statement's time: on PGlite traced as it runs
 * (bench/lib/sql-trace.ts, from the call to its answer); on Postgres captured through the plane's statement
 * logger and then run again under `EXPLAIN (ANALYZE)` with the same parameters (the server's planning and execution
 * time, without the round trip). Each statement's text with `WAYMARK_BENCH_SQL=1`.
 *
 *   npx tsx bench/run-list.ts [runs=10000] [reps=7] [pglite|postgres|both]
 */
import { cpus, loadavg } from 'node:os';
import pino from 'pino';
import postgres from 'postgres';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { openPlaneDatabase } from '../plane/db/open.js';
import { createKey, loadConfig, startPlane } from '../plane/index.js';
import type { OutboxEvent } from '../shared/rows.js';
import { takeEvents, withScratchDatabase } from './lib/backlog.js';
import { traceSql } from './lib/sql-trace.js';
import { fmt, summary } from './lib/stats.js';
import { randomText } from './lib/text.js';

const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const RUNS = SMOKE ? 300 : Number(process.argv[2] ?? 10000);
const REPS = SMOKE ? 1 : Number(process.argv[3] ?? 7);
const WHICH = process.argv[4] ?? 'both';
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LIMIT = 1000;
const WRITERS = 4;
const ROWS_PER_RUN = 3;

/** The runs' rows as the drain would send them, made in a store in memory. */
async function runEvents(runs: number): Promise<OutboxEvent[]> {
  const store = new SqliteCheckpointer({ path: ':memory:', synchronous: 'NORMAL' });
  for (let r = 0; r < runs; r++) {
    const executionId = `run-${String(r).padStart(6, '0')}`;
    const state = { messages: [{ role: 'assistant', content: randomText(120, 7, r) }] as never };
    const base = { executionId, turn: 0, agentPath: 'agent:list', state };
    await store.put({ ...base, nodeId: 'turn:0', step: 'llm_call', status: 'completed' });
    await store.put({ ...base, nodeId: 'tool:0', step: 'tool_call', status: 'completed', nodeOutput: 'ok' });
    const failed = r % 10 === 0;
    await store.put({
      ...base,
      nodeId: 'run_end',
      step: 'run_end',
      status: failed ? 'failed' : 'completed',
      nodeOutput: failed ? { error: { code: 'RUN_FAILED', message: 'the tool gave up' } } : null,
    });
  }
  const out = await takeEvents(store);
  await store.close();
  return out;
}

/**
 * Post every event once: `WRITERS` writers at once, each its own writer id, in batches of 100 whole runs (each run
 * has one writer); back-pressure (429, 503) retried after its Retry-After. What each batch that failed for good was
 * answered (none, for a bench that goes on).
 */
async function ingestEach(url: string, key: string, events: OutboxEvent[]): Promise<string[]> {
  const batch = 100 * ROWS_PER_RUN;
  const failed: string[] = [];
  const writer = async (w: number) => {
    for (let i = w * batch; i < events.length; i += WRITERS * batch) {
      const rows = events.slice(i, i + batch);
      for (;;) {
        const res = await fetch(`${url}/v1/ingest`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ protocol: 1, writerId: `bench-${w}`, rows }),
        }).catch((e: Error) => e);
        if (!(res instanceof Error) && (res.status === 429 || res.status === 503)) {
          await res.body?.cancel();
          await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
          continue;
        }
        const body = res instanceof Error ? null : await res.text();
        if (
          res instanceof Error ||
          res.status !== 200 ||
          (JSON.parse(body!) as { accepted?: number }).accepted !== rows.length
        )
          failed.push(res instanceof Error ? res.message : `${res.status} ${body!.slice(0, 200)}`);
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  return failed;
}

interface Captured {
  query: string;
  params: unknown[];
}

interface Target {
  name: 'postgres' | 'pglite';
  url: string;
  readKey: string;
  firstMs: number[];
  walkMs: number[];
  pages: number;
  /** Each statement of one GET of the first page: its text, ms and result rows. */
  statements: { sql: string; ms: number; rows: number }[];
  close(): Promise<void>;
}

async function get(t: Target, cursor: string | null): Promise<string | null> {
  const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
  const once = () =>
    fetch(`${t.url}/v1/executions?limit=${LIMIT}${q}`, { headers: { authorization: `Bearer ${t.readKey}` } });
  // a kept-alive socket the plane closed as idle just as this GET went out on it: sent again once, on a new socket
  const res = await once().catch((e: Error & { cause?: { code?: string } }) => {
    if (e.cause?.code !== 'UND_ERR_SOCKET') throw e;
    return once();
  });
  if (res.status !== 200) throw new Error(`${t.name}: GET /v1/executions answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { items: unknown[]; nextCursor: string | null };
  if (!cursor && body.items.length !== Math.min(LIMIT, RUNS))
    throw new Error(`${t.name}: the first page holds ${body.items.length} runs`);
  return body.nextCursor;
}

/** The first page's ms, and every page walked by its cursor: the walk's ms and its count of pages. */
async function walk(t: Target): Promise<{ firstMs: number; walkMs: number; pages: number }> {
  const t0 = performance.now();
  let cursor = await get(t, null);
  const firstMs = performance.now() - t0;
  let pages = 1;
  while (cursor) {
    cursor = await get(t, cursor);
    pages++;
  }
  return { firstMs, walkMs: performance.now() - t0, pages };
}

async function plane(name: Target['name'], events: OutboxEvent[], databaseUrl?: string): Promise<Target> {
  let capture: Captured[] | null = null;
  const database = await openPlaneDatabase(databaseUrl ? { databaseUrl } : { dataDir: 'memory://' }, {
    logQuery: (query, params) => capture?.push({ query, params }),
  });
  // a queue wait long enough for a loaded machine: the runs must all arrive before the list is timed
  const config = loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://', ingestQueueWaitMs: 300_000 });
  const p = await startPlane(config, {
    // opened with a statement logger (plane/db/open.ts), which the public `openPlaneDatabase` does not take
    database: database as unknown as NonNullable<Parameters<typeof startPlane>[1]>['database'],
    logger: pino({ level: 'silent' }),
  });
  const db = database.db as unknown as Parameters<typeof createKey>[0];
  const ingest = await createKey(db, { createProject: true, project: 'bench', scopes: ['ingest'] });
  const read = await createKey(db, { project: 'bench', scopes: ['read'] });
  const failed = await ingestEach(p.url, ingest.key, events);
  if (failed.length)
    throw new Error(`${name}: ${failed.length} ingest batches failed: ${[...new Set(failed)].join('; ')}`);
  const t: Target = {
    name,
    url: p.url,
    readKey: read.key,
    firstMs: [],
    walkMs: [],
    pages: 0,
    statements: [],
    close: async () => {
      await p.close();
      await database.close();
    },
  };
  // the SQL of one GET of the first page, with each statement's time
  if (databaseUrl) {
    capture = [];
    await get(t, null);
    const sent = capture;
    capture = null;
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    // the parameters as drizzle's postgres-js driver sends them: a JSON parameter arrives as its text already
    for (const oid of [114, 3802]) sql.options.serializers[oid] = (x: unknown) => x;
    try {
      for (const s of sent) {
        const [plan] = (await sql.unsafe(`EXPLAIN (ANALYZE, FORMAT JSON) ${s.query}`, s.params as never[])) as {
          'QUERY PLAN': [{ 'Planning Time': number; 'Execution Time': number; Plan: { 'Actual Rows': number } }];
        }[];
        const x = plan['QUERY PLAN'][0];
        t.statements.push({ sql: s.query, ms: x['Planning Time'] + x['Execution Time'], rows: x.Plan['Actual Rows'] });
      }
    } finally {
      await sql.end();
    }
  } else {
    const trace = traceSql(database.db);
    await get(t, null);
    t.statements = trace.statements.map((x) => ({ sql: x.sql, ms: x.ms, rows: x.rows }));
    trace.stop();
  }
  return t;
}

async function measure(targets: Target[]) {
  for (const t of targets) for (let i = 0; i < 2; i++) await walk(t);
  for (let rep = 0; rep < REPS; rep++) {
    const order = rep % 2 ? [...targets].reverse() : targets;
    for (const t of order) {
      const w = await walk(t);
      t.firstMs.push(w.firstMs);
      t.walkMs.push(w.walkMs);
      t.pages = w.pages;
    }
  }
}

function report(targets: Target[], started: string, loadBefore: number[]) {
  const date = new Date().toISOString();
  const command = ['npx tsx bench/run-list.ts', ...process.argv.slice(2)].join(' ');
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `\`${command}\` from ${started} to ${date} (Node ${process.version}, ${cpus().length} cores; load average ${load(loadBefore)} before, ${load(loadavg())} after; ${RUNS} runs of ${ROWS_PER_RUN} rows from ${WRITERS} writers, ${REPS} reps interleaved): median [min–max]`,
  );
  for (const t of targets) {
    const sqlMs = t.statements.reduce((n, x) => n + x.ms, 0);
    console.log(
      `  ${t.name.padEnd(8)} first page (limit=${LIMIT}) ${fmt(summary(t.firstMs), 1)} ms · all ${t.pages} pages ${fmt(summary(t.walkMs), 1)} ms · ${t.statements.length} SQL statements for the first page, ${sqlMs.toFixed(1)} ms in all${t.name === 'postgres' ? ' (EXPLAIN ANALYZE: planning + execution)' : ' (call to answer)'}`,
    );
    for (const x of t.statements)
      console.log(
        `    ${x.ms.toFixed(2).padStart(8)} ms ${String(x.rows).padStart(5)} rows  ${process.env.WAYMARK_BENCH_SQL === '1' ? x.sql.replace(/\s+/g, ' ') : x.sql.replace(/\s+/g, ' ').slice(0, 110)}`,
      );
  }
  for (const t of targets)
    console.log(
      JSON.stringify({
        bench: 'run-list',
        target: t.name,
        runs: RUNS,
        limit: LIMIT,
        reps: REPS,
        pages: t.pages,
        firstPageMs: summary(t.firstMs),
        walkMs: summary(t.walkMs),
        statements: t.statements.length,
        sqlMs: t.statements.reduce((n, x) => n + x.ms, 0),
        loadavg: loadavg(),
        cores: cpus().length,
        node: process.version,
        date,
      }),
    );
}

const started = new Date().toISOString();
const loadBefore = loadavg();
const events = await runEvents(RUNS);
const targets: Target[] = [];
try {
  const run = async () => {
    if (WHICH !== 'postgres') targets.push(await plane('pglite', events));
    await measure(targets);
    report(targets, started, loadBefore);
  };
  if (WHICH === 'pglite') await run();
  else
    await withScratchDatabase(PG, 'run_list', async (url) => {
      targets.push(await plane('postgres', events, url));
      try {
        await run();
      } finally {
        // the plane's connections end before its scratch database is dropped
        for (const t of targets.splice(0)) await t.close();
      }
    });
} finally {
  for (const t of targets) await t.close();
}
