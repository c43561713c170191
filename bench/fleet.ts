/**
 * A fleet on one plane: N simulated laptops against ONE plane process on
 * Postgres (a fresh database per level), each laptop as a real one is — its
 * own SQLite store file, `connectPlane` under its own writer id (the outbox
 * drain and the change feed, on by default) and `serveDecisions` (the
 * decision feed and the run requests), agents through the real runtime at
 * about one step (one durable row) a second: a model call of about `stepMs`
 * with one tool call, the tool about `stepMs` too, its effect `idempotent`.
 * The laptops are spread over `workers` processes (bench/fleet-worker.ts);
 * the plane is `waymark plane` (dist/: `npm run build` first).
 *
 * After `warmup` seconds, over a window of `window` seconds, reported per N:
 * - rows/s and requests/s at the plane (its `/metrics`: ingested rows accepted,
 *   HTTP requests by route), and steps/s;
 * - ingest p50/p99 as the clients see it (request to the answer's end);
 * - change- and decision-feed entries the plane served per second
 *   (`waymark_feed_entries_total`, the change feed's `changes` and
 *   `changes_writer` together; the decision feed's `decisions` and
 *   `decisions_writer` together), and per row;
 * - restores per step: `GET /v1/executions/:id/restore` answered by the plane
 *   over the rows it accepted (each laptop is alone on its runs: any restore
 *   is a writer fetching its own run back), and as the clients counted them;
 * - plane CPU per request and per row (user + system of the plane process);
 * - Postgres commits/s (pg_stat_database.xact_commit of the level's database),
 *   ingest batches per ingest transaction (the plane's group commit), and
 *   WAL bytes per row (pg_stat_wal: the whole server's, so other work on
 *   the server is counted in it);
 * - errors (5xx, network errors, failed runs, rows refused or left unsent)
 *   and sheds (429/503); 4xx answers by route beside.
 * - decisions: one run in `decide-every` pauses for approval in its first
 *   tool; a person (this process, through the approvals inbox GET /v1/pauses
 *   and POST /v1/executions/:id/decision, about once a second) approves each
 *   open pause, and the laptop's decision worker applies it. Reported: the
 *   decisions recorded in the window and the decision-feed entries served
 *   per decision (1 when each decision reaches only its writer).
 * Then the person stops, every decision it recorded is waited for until the
 * plane shows it applied, the laptops stop (each finishes its run in hand),
 * flush, and the check: every run's rows at the plane are the rows its store
 * holds (count and the md5 of their ids: each row once), no effect ran twice,
 * and every decision recorded was applied by its laptop exactly once. A failed check
 * fails the bench. The exponent of feed entries/s over N (least squares on
 * log–log) is printed after the levels. Each level is one window, not
 * repeated: on a shared machine, run it again before reading much into a
 * difference of a few percent.
 *
 *   npx tsx bench/fleet.ts [--n 20,50,100] [--window 30] [--warmup 10] [--workers 4]
 *                          [--layout one|tens|both] [--turns 6] [--step-ms 1000] [--decide-every 5]
 *   npm run bench -- fleet --n 100,300
 *
 * `--layout one`: every laptop in one project (the default); `tens`: N/10
 * projects of 10 laptops each. Bounded: a level ends after its window and the
 * runs in hand (at most `turns` turns); 127.0.0.1 only.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { createKey, openPlaneDatabase } from '../plane/index.js';
import type { LaptopSpec, WorkerCounters, WorkerDone, WorkerStart } from './fleet-worker.js';
import { approving } from './lib/approver.js';
import { withScratchDatabase } from './lib/backlog.js';
import { childCommand } from './lib/paths.js';
import { cpuSecs, startPlaneProcess } from './lib/plane-process.js';

const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
/** The change feed's entries: the whole project's (GET /v1/changes) and the writers' own (GET /v1/writer-changes). */
const changeFeeds = (l: Record<string, string>) => l.feed === 'changes' || l.feed === 'changes_writer';
/** The decision feed's entries: the whole project's (GET /v1/decisions) and the writers' own (GET /v1/writer-decisions). */
const decisionFeeds = (l: Record<string, string>) => l.feed === 'decisions' || l.feed === 'decisions_writer';
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** `--name value` options; anything else is refused. */
function options(argv: string[]): Record<string, string> {
  const known = ['n', 'window', 'warmup', 'workers', 'layout', 'turns', 'step-ms', 'decide-every'];
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]?.replace(/^--/, '');
    if (!argv[i]?.startsWith('--') || !known.includes(name) || argv[i + 1] === undefined) {
      console.error(
        `fleet: unknown or incomplete option '${argv[i]}'; options: ${known.map((k) => `--${k}`).join(' ')}`,
      );
      process.exit(2);
    }
    out[name] = argv[i + 1];
  }
  return out;
}
const opt = options(process.argv.slice(2));
const NS = (opt.n ?? (SMOKE ? '3' : '20,50,100')).split(',').map(Number);
const WINDOW_S = Number(opt.window ?? (SMOKE ? 3 : 30));
const WARMUP_S = Number(opt.warmup ?? (SMOKE ? 2 : 10));
const WORKERS = Number(opt.workers ?? 4);
const LAYOUTS = (opt.layout ?? 'one') === 'both' ? ['one', 'tens'] : [opt.layout ?? 'one'];
const TURNS = Number(opt.turns ?? (SMOKE ? 2 : 6));
const STEP_MS = Number(opt['step-ms'] ?? (SMOKE ? 200 : 1000));
const DECIDE_EVERY = Number(opt['decide-every'] ?? (SMOKE ? 2 : 5));
const TEXT_BYTES = 200;
/** Seconds of the server's WAL rate measured before each level. */
const BACKGROUND_S = SMOKE ? 1 : 5;
for (const [what, xs] of [
  ['--n', NS],
  ['--window', [WINDOW_S]],
  ['--warmup', [WARMUP_S]],
  ['--workers', [WORKERS]],
  ['--turns', [TURNS]],
  ['--step-ms', [STEP_MS]],
  ['--decide-every', [DECIDE_EVERY]],
] as const)
  if (xs.some((x) => !Number.isInteger(x) || x < (what === '--warmup' || what === '--decide-every' ? 0 : 1))) {
    console.error(
      `fleet: ${what} takes ${what === '--warmup' || what === '--decide-every' ? 'non-negative' : 'positive'} integers (got ${xs.join(',')})`,
    );
    process.exit(2);
  }
if (LAYOUTS.some((l) => l !== 'one' && l !== 'tens')) {
  console.error(`fleet: --layout is one, tens or both (got ${opt.layout})`);
  process.exit(2);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One sample of a Prometheus text exposition: name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}
const total = (s: Sample[], name: string, where: (l: Record<string, string>) => boolean = () => true) =>
  s.filter((x) => x.name === name && where(x.labels)).reduce((a, x) => a + x.value, 0);

/** Everything read at one instant of a level: the plane's metrics and CPU, Postgres's counters, the workers' counters. */
interface Snapshot {
  at: number;
  metrics: Sample[];
  planeCpu: number;
  /** CPU seconds of the worker processes (the laptops). */
  workersCpu: number;
  /** CPU seconds of the Postgres backends connected to the level's database, by pid. */
  backendsCpu: Map<number, number>;
  commits: number;
  walBytes: number;
  workers: WorkerCounters[];
}

interface Worker {
  child: ChildProcess;
  /** The next message of a type. */
  next<T>(type: string): Promise<T>;
}
function startWorker(): Worker {
  // the node options a loader needs (tsx's, under npx tsx), then the worker's file
  const cmd = childCommand(import.meta.url, 'fleet-worker');
  const child = fork(cmd[cmd.length - 1], [], {
    execArgv: cmd.slice(0, -1),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map<string, (m: unknown) => void>();
  child.on('message', (m: { type: string }) => {
    const w = waiting.get(m.type);
    waiting.delete(m.type);
    w?.(m);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) => reject(new Error(`fleet worker exited (${code ?? signal})`))),
  );
  exited.catch(() => {});
  return {
    child,
    next: <T>(type: string) =>
      Promise.race([new Promise<T>((resolve) => waiting.set(type, resolve as (m: unknown) => void)), exited]),
  };
}

interface Level {
  n: number;
  layout: string;
  projects: number;
  workers: number;
  windowS: number;
  rowsPerSec: number;
  requestsPerSec: number;
  requestsPerRow: number;
  /** Requests/s by route (the top ones). */
  routes: Record<string, number>;
  ingestP50Ms: number | null;
  ingestP99Ms: number | null;
  ingestRequests: number;
  /** The plane's own mean time per ingest request (its histogram's sum over count). */
  planeIngestMeanMs: number | null;
  changeEntriesPerSec: number;
  decisionEntriesPerSec: number;
  changeEntriesPerRow: number;
  restores: number;
  restoresPerStep: number;
  clientRestores: number;
  planeCpuPerRequestMs: number;
  planeCpuPerRowMs: number;
  planeCpuShare: number;
  /** The laptops' CPU (their worker processes), in cores. */
  laptopsCpuShare: number;
  /** The CPU of the Postgres backends serving the level's database (those there at both ends of the window), in cores. */
  postgresCpuShare: number;
  /** The machine's 1-minute load average at the window's end (other work on it included). */
  loadAverage: number;
  /**
   * Rows/s over what the laptops would write at their pace (N × (2·turns + 2) rows per 2·turns steps of stepMs),
   * one run at a time each: a run that pauses for a decision goes on beside the laptop's next once applied, so
   * with decisions this passes 100%.
   */
  paceHeld: number;
  commitsPerSec: number;
  /** Ingest batches per ingest transaction at the plane (its group commit; null when the plane does not count them). */
  batchesPerIngestTx: number | null;
  walBytesPerRow: number;
  /** The server's WAL bytes/s over a few seconds before the level started (other databases' work). */
  backgroundWalPerSec: number;
  errors: number;
  shed: number;
  refused4xx: Record<string, number>;
  runsCompleted: number;
  /** Decisions the person recorded in the window, and the decision-feed entries served per one of them. */
  decisionsInWindow: number;
  decisionEntriesPerDecision: number | null;
  /** Replica events a laptop alone on its runs should not see (run_lost, quarantined, listener_error), over the level. */
  replicaEvents: number;
  check: {
    runs: number;
    rows: number;
    mismatched: string[];
    effectsRun: number;
    effectsTwice: string[];
    /** Runs that paused for a decision, decisions recorded over the level, and those not applied exactly once by a laptop (each said). */
    runsPaused: number;
    decisions: number;
    decisionsWrong: string[];
  };
  failures: string[];
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function level(n: number, layout: string): Promise<Level> {
  return withScratchDatabase(PG, 'fleet', async (databaseUrl) => {
    const projects = layout === 'one' ? 1 : Math.ceil(n / 10);
    // migrate and make the keys here, so the plane starts on a ready database
    const database = await openPlaneDatabase({ databaseUrl });
    const keys: string[] = [];
    const approvers: string[] = [];
    for (let p = 0; p < projects; p++) {
      const k = await createKey(database.db, {
        createProject: true,
        project: `fleet-${p}`,
        scopes: ['ingest', 'read'],
      });
      keys.push(k.key);
      approvers.push((await createKey(database.db, { project: `fleet-${p}`, scopes: ['read', 'approve'] })).key);
    }
    await database.close();
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    // the server's WAL is shared with whatever else runs on it: its rate just before the level, said beside
    const wal = async () => Number((await sql`SELECT wal_bytes FROM pg_stat_wal`)[0].wal_bytes);
    const bg0 = { at: performance.now(), bytes: await wal() };
    await sleep(BACKGROUND_S * 1000);
    const backgroundWalPerSec = ((await wal()) - bg0.bytes) / ((performance.now() - bg0.at) / 1000);
    const plane = await startPlaneProcess(databaseUrl, { metrics: true });
    const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-fleet-'));
    const k = Math.min(WORKERS, n);
    const workers: Worker[] = [];
    try {
      const specs: LaptopSpec[][] = Array.from({ length: k }, () => []);
      for (let i = 0; i < n; i++)
        specs[i % k].push({
          name: `laptop-${i}`,
          key: keys[Math.floor(i / 10) % projects],
          path: join(dir, `${i}.db`),
        });
      for (let w = 0; w < k; w++) workers.push(startWorker());
      await Promise.all(
        workers.map((w, i) => {
          const start: WorkerStart = {
            type: 'start',
            url: plane.url,
            laptops: specs[i],
            stepMs: STEP_MS,
            turns: TURNS,
            textBytes: TEXT_BYTES,
            decideEvery: DECIDE_EVERY,
          };
          w.child.send(start);
          return w.next('ready');
        }),
      );
      const snapshot = async (): Promise<Snapshot> => {
        const marks = workers.map((w) => {
          w.child.send({ type: 'mark' });
          return w.next<{ counters: WorkerCounters }>('marked');
        });
        const [metrics, [db], walBytes, backends] = await Promise.all([
          fetch(`${plane.metricsUrl}/metrics`).then(async (r) => parseMetrics(await r.text())),
          sql`SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`,
          wal(),
          sql<
            { pid: number }[]
          >`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
        ]);
        // a backend's CPU where this machine runs the server (127.0.0.1): gone or not readable, left out
        const backendsCpu = new Map<number, number>();
        for (const { pid } of backends) {
          try {
            backendsCpu.set(pid, cpuSecs(pid));
          } catch {}
        }
        return {
          at: performance.now(),
          metrics,
          planeCpu: cpuSecs(plane.child.pid!),
          workersCpu: workers.reduce((x, w) => x + cpuSecs(w.child.pid!), 0),
          backendsCpu,
          commits: Number(db.xact_commit),
          walBytes,
          workers: (await Promise.all(marks)).map((m) => m.counters),
        };
      };
      const person = approving(plane.url, approvers);
      await sleep(WARMUP_S * 1000);
      const a = await snapshot();
      const decidedBefore = person.recorded.size;
      await sleep(WINDOW_S * 1000);
      const b = await snapshot();
      const decisionsInWindow = person.recorded.size - decidedBefore;
      // the person stops; what it decided is applied before the laptops stop
      const unapplied = await person.stop();
      // the laptops stop: runs in hand finish, outboxes flush, each store says what it holds
      const dones = await Promise.all(
        workers.map((w) => {
          w.child.send({ type: 'stop' });
          return w.next<WorkerDone>('done');
        }),
      );
      const secs = (b.at - a.at) / 1000;
      const d = (name: string, where?: (l: Record<string, string>) => boolean) =>
        total(b.metrics, name, where) - total(a.metrics, name, where);
      const rows = d('waymark_ingest_rows_total', (l) => l.result === 'accepted');
      const requests = d('waymark_http_requests_total');
      const routes: Record<string, number> = {};
      for (const s of b.metrics.filter((x) => x.name === 'waymark_http_requests_total')) {
        const key = `${s.labels.method} ${s.labels.route}`;
        routes[key] = (routes[key] ?? 0) + s.value;
      }
      for (const s of a.metrics.filter((x) => x.name === 'waymark_http_requests_total'))
        routes[`${s.labels.method} ${s.labels.route}`] -= s.value;
      for (const r of Object.keys(routes)) routes[r] = Math.round((routes[r] / secs) * 10) / 10;
      const refused4xx: Record<string, number> = {};
      for (const s of b.metrics.filter((x) => x.name === 'waymark_http_requests_total' && x.labels.status[0] === '4')) {
        const before = a.metrics.find(
          (x) =>
            x.name === s.name &&
            x.labels.route === s.labels.route &&
            x.labels.method === s.labels.method &&
            x.labels.status === s.labels.status,
        );
        const k4 = `${s.labels.method} ${s.labels.route} ${s.labels.status}`;
        if (s.value - (before?.value ?? 0) > 0) refused4xx[k4] = s.value - (before?.value ?? 0);
      }
      const restores = d('waymark_http_requests_total', (l) => l.route === '/v1/executions/:id/restore');
      const shed = d('waymark_http_requests_total', (l) => l.status === '429' || l.status === '503');
      const fivexx = d('waymark_http_requests_total', (l) => l.status[0] === '5' && l.status !== '503');
      const sum = (s: Snapshot, f: (c: WorkerCounters) => number) => s.workers.reduce((x, c) => x + f(c), 0);
      const latencies = b.workers.flatMap((c) => c.ingestMs);
      const cpu = b.planeCpu - a.planeCpu;
      // the check: each run's rows at the plane are its store's, each once
      const atPlane = new Map(
        (
          await sql<{ execution_id: string; n: number; h: string }[]>`
            SELECT execution_id, count(*)::int AS n, md5(string_agg(id, ',' ORDER BY id COLLATE "C")) AS h
            FROM checkpoints GROUP BY execution_id`
        ).map((r) => [r.execution_id, r]),
      );
      const mismatched: string[] = [];
      let checkedRows = 0;
      const runs = dones.flatMap((x) => x.runs);
      for (const r of runs) {
        checkedRows += r.rows;
        const p = atPlane.get(r.executionId);
        if (r.rows === 0 && !p) continue;
        if (!p || p.n !== r.rows || p.h !== r.idsMd5)
          mismatched.push(
            `${r.executionId}: store ${r.rows} rows, plane ${p?.n ?? 0}${p && p.n === r.rows ? ' (other ids)' : ''}`,
          );
        atPlane.delete(r.executionId);
      }
      for (const id of atPlane.keys()) mismatched.push(`${id}: at the plane, in no store`);
      const effectsTwice = dones.flatMap((x) => x.effectsTwice);
      // each decision recorded applied by a laptop exactly once, and none applied that was not recorded
      const appliedTimes = new Map<string, number>();
      for (const id of dones.flatMap((x) => x.decisionsApplied)) appliedTimes.set(id, (appliedTimes.get(id) ?? 0) + 1);
      const decisionsWrong = [
        ...unapplied,
        ...dones.flatMap((x) => x.decisionsWrong),
        ...[...person.recorded].flatMap(([id, run]) =>
          appliedTimes.get(id) === 1 ? [] : [`decision ${id} (${run}) applied ${appliedTimes.get(id) ?? 0} times`],
        ),
        ...[...appliedTimes.keys()]
          .filter((id) => !person.recorded.has(id))
          .map((id) => `decision ${id}: applied, never recorded`),
      ];
      const pending = dones.reduce((x, y) => x + y.pendingRows, 0);
      const quarantined = dones.reduce((x, y) => x + y.quarantined, 0);
      const runsFailed = dones.reduce((x, y) => x + y.counters.runsFailed, 0);
      const networkErrors = dones.reduce((x, y) => x + y.counters.networkErrors, 0);
      const failures = [
        ...dones.flatMap((x) => x.counters.failures),
        ...dones.flatMap((x) => x.replicaEvents),
        ...(pending ? [`${pending} rows left in the outboxes`] : []),
        ...(quarantined ? [`${quarantined} rows quarantined`] : []),
      ].slice(0, 20);
      return {
        n,
        layout,
        projects,
        workers: k,
        windowS: secs,
        rowsPerSec: rows / secs,
        requestsPerSec: requests / secs,
        requestsPerRow: requests / rows,
        routes: Object.fromEntries(
          Object.entries(routes)
            .sort((x, y) => y[1] - x[1])
            .slice(0, 8),
        ),
        ingestP50Ms: pct(latencies, 50),
        ingestP99Ms: pct(latencies, 99),
        ingestRequests: sum(b, (c) => c.ingestRequests) - sum(a, (c) => c.ingestRequests),
        planeIngestMeanMs: d('waymark_ingest_duration_seconds_count')
          ? (d('waymark_ingest_duration_seconds_sum') * 1000) / d('waymark_ingest_duration_seconds_count')
          : null,
        changeEntriesPerSec: d('waymark_feed_entries_total', changeFeeds) / secs,
        decisionEntriesPerSec: d('waymark_feed_entries_total', decisionFeeds) / secs,
        changeEntriesPerRow: d('waymark_feed_entries_total', changeFeeds) / rows,
        restores,
        restoresPerStep: restores / rows,
        clientRestores: sum(b, (c) => c.restores) - sum(a, (c) => c.restores),
        planeCpuPerRequestMs: (cpu * 1000) / requests,
        planeCpuPerRowMs: (cpu * 1000) / rows,
        planeCpuShare: cpu / secs,
        laptopsCpuShare: (b.workersCpu - a.workersCpu) / secs,
        postgresCpuShare:
          [...b.backendsCpu].reduce(
            (x, [pid, c]) => x + (a.backendsCpu.has(pid) ? c - a.backendsCpu.get(pid)! : 0),
            0,
          ) / secs,
        loadAverage: loadavg()[0],
        paceHeld: rows / secs / ((n * (2 * TURNS + 2)) / ((2 * TURNS * STEP_MS) / 1000)),
        commitsPerSec: (b.commits - a.commits) / secs,
        batchesPerIngestTx: d('waymark_ingest_transactions_total')
          ? d('waymark_ingest_batches_total') / d('waymark_ingest_transactions_total')
          : null,
        walBytesPerRow: (b.walBytes - a.walBytes) / rows,
        backgroundWalPerSec,
        errors:
          fivexx +
          networkErrors +
          runsFailed +
          pending +
          quarantined +
          effectsTwice.length +
          mismatched.length +
          decisionsWrong.length +
          person.errors.length,
        shed,
        refused4xx,
        runsCompleted: sum(b, (c) => c.runsCompleted) - sum(a, (c) => c.runsCompleted),
        decisionsInWindow,
        decisionEntriesPerDecision: decisionsInWindow
          ? d('waymark_feed_entries_total', decisionFeeds) / decisionsInWindow
          : null,
        replicaEvents: dones.reduce((x, y) => x + y.replicaEvents.length, 0),
        check: {
          runs: runs.length,
          rows: checkedRows,
          mismatched: mismatched.slice(0, 20),
          effectsRun: dones.reduce((x, y) => x + y.effectsRun, 0),
          effectsTwice: effectsTwice.slice(0, 20),
          runsPaused: dones.reduce((x, y) => x + y.counters.runsPaused, 0),
          decisions: person.recorded.size,
          decisionsWrong: decisionsWrong.slice(0, 20),
        },
        failures: [...failures, ...person.errors.slice(0, 5)],
      };
    } finally {
      for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
      await plane.stop();
      await sql.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/** The slope of log(y) over log(x), least squares: y grows as x^slope. */
function exponent(xs: number[], ys: number[]): number | null {
  const pts = xs.map((x, i) => [Math.log(x), Math.log(ys[i])]).filter(([, y]) => Number.isFinite(y));
  if (pts.length < 2) return null;
  const mx = pts.reduce((a, [x]) => a + x, 0) / pts.length;
  const my = pts.reduce((a, [, y]) => a + y, 0) / pts.length;
  const num = pts.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const den = pts.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return den ? num / den : null;
}

const f = (x: number | null, d = 0) => (x === null || !Number.isFinite(x) ? 'n/a' : x.toFixed(d));
console.log(
  `fleet on one plane (Postgres): N = ${NS.join(', ')} laptops (${LAYOUTS.join(', ')}), each its own SQLite store, connectPlane + serveDecisions, runs of ${TURNS} turns at about ${STEP_MS} ms a step; ${WARMUP_S} s warm-up, ${WINDOW_S} s window; up to ${WORKERS} worker processes; ${availableParallelism()} cores shared by Postgres, the plane and the laptops`,
);
let failed = false;
for (const layout of LAYOUTS) {
  const levels: Level[] = [];
  for (const n of NS) {
    const l = await level(n, layout);
    levels.push(l);
    console.log(
      `N=${n} (${l.projects} project${l.projects > 1 ? 's' : ''}, ${l.workers} workers): ${f(l.rowsPerSec, 1)} rows/s (${f(l.paceHeld * 100)}% of the laptops' pace), ${f(l.requestsPerSec, 1)} req/s (${f(l.requestsPerRow, 2)}/row); ingest p50 ${f(l.ingestP50Ms)} ms p99 ${f(l.ingestP99Ms)} ms (plane mean ${f(l.planeIngestMeanMs)} ms); change-feed entries ${f(l.changeEntriesPerSec, 1)}/s (${f(l.changeEntriesPerRow, 2)}/row), decision-feed ${f(l.decisionEntriesPerSec, 1)}/s (${l.decisionsInWindow} decisions in the window, ${f(l.decisionEntriesPerDecision, 2)} entries per decision); restores ${l.restores} (${f(l.restoresPerStep, 3)}/step; clients counted ${l.clientRestores}); plane CPU ${f(l.planeCpuPerRequestMs, 2)} ms/req, ${f(l.planeCpuPerRowMs, 2)} ms/row (${f(l.planeCpuShare * 100)}% of a core; the laptops ${f(l.laptopsCpuShare * 100)}%, Postgres ${f(l.postgresCpuShare * 100)}%; load average ${f(l.loadAverage, 1)}); Postgres ${f(l.commitsPerSec, 1)} commits/s (${f(l.batchesPerIngestTx, 2)} ingest batches per ingest transaction), ${f(l.walBytesPerRow)} WAL bytes/row (the server's WAL before the level: ${f(l.backgroundWalPerSec / 1024)} KiB/s); ${l.errors} errors, ${l.shed} shed, ${l.replicaEvents} replica events`,
    );
    console.log(
      `  req/s by route: ${Object.entries(l.routes)
        .map(([r, x]) => `${r} ${x}`)
        .join(', ')}`,
    );
    if (Object.keys(l.refused4xx).length)
      console.log(
        `  4xx in the window: ${Object.entries(l.refused4xx)
          .map(([r, x]) => `${r} ×${x}`)
          .join(', ')}`,
      );
    console.log(
      `  check: ${l.check.runs} runs, ${l.check.rows} rows compared with the plane, ${l.check.mismatched.length} mismatched; ${l.check.effectsRun} effects, ${l.check.effectsTwice.length} ran twice; ${l.check.runsPaused} runs paused for ${l.check.decisions} decisions recorded, ${l.check.decisionsWrong.length} not applied exactly once by their laptop`,
    );
    for (const x of [...l.check.mismatched, ...l.check.effectsTwice, ...l.check.decisionsWrong, ...l.failures])
      console.log(`  ! ${x}`);
    console.log(JSON.stringify({ bench: 'fleet', ...l, date: new Date().toISOString() }));
    if (l.errors) failed = true;
  }
  if (levels.length > 1) {
    const e = exponent(
      levels.map((l) => l.n),
      levels.map((l) => l.changeEntriesPerSec),
    );
    const r = exponent(
      levels.map((l) => l.n),
      levels.map((l) => l.rowsPerSec),
    );
    const perRow = exponent(
      levels.map((l) => l.n),
      levels.map((l) => l.changeEntriesPerRow),
    );
    const perDecision = exponent(
      levels.map((l) => l.n),
      levels.map((l) => l.decisionEntriesPerDecision ?? Number.NaN),
    );
    console.log(
      `${layout}: change-feed entries/s grow as N^${f(e, 2)} over N = ${NS.join(', ')}, rows/s as N^${f(r, 2)}, change-feed entries per row as N^${f(perRow, 2)}, decision-feed entries per decision as N^${f(perDecision, 2)}`,
    );
    console.log(
      JSON.stringify({
        bench: 'fleet-exponent',
        layout,
        ns: NS,
        changeEntriesExponent: e,
        rowsExponent: r,
        changeEntriesPerRowExponent: perRow,
        decisionEntriesPerDecisionExponent: perDecision,
        date: new Date().toISOString(),
      }),
    );
  }
}
if (failed) {
  console.error('fleet: errors in the simulation (see the lines marked !)');
  process.exitCode = 1;
}
