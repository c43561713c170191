/**
 * What a plane process holds in memory (its RSS, from /proc/<pid>/status) beside its ingest throughput, on
 * each backend: the real `waymark plane` binary (dist/, `npm run build` first), on embedded PGlite in a fresh
 * data dir and on a fresh Postgres database. Each repetition starts the plane (its first start: it makes
 * the PGlite folder or migrates the database) and reads its RSS once start-up has settled; `writers`
 * concurrent writers then post `rows` rows in 500-row batches of pseudo-random text (bench/lib/backlog.ts)
 * while the RSS is sampled every 50 ms, and the plane's own high-water mark (VmHWM, since it started) is read at the end,
 * with the RSS there; then the plane is stopped and started again on the same data (a restart) and its
 * settled RSS read. Reported per backend: rows/s; RSS at first start, peak under ingest, at the end of
 * ingest, after restart; median [min–max] over the repetitions, the backends alternating which goes first.
 *
 *   npx tsx bench/ingest-rss.ts [rows=20000] [writers=8] [reps=3]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OutboxEvent } from '../shared/rows.js';
import { ingestAll } from './lib/ingest.js';
import { backlogEvents, withScratchDatabase } from './lib/backlog.js';
import { fmt, summary } from './lib/stats.js';
import { ROOT } from './lib/paths.js';

const N = Number(process.argv[2] ?? 20000);
const WRITERS = Number(process.argv[3] ?? 8);
const REPS = Number(process.argv[4] ?? (process.env.WAYMARK_BENCH_SMOKE === '1' ? 1 : 3));
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BATCH = 500;
const BIN = join(ROOT, 'bin/waymark.mjs');
/** How long a started plane is left before its RSS is read (its start-up's garbage collected or not, alike). */
const SETTLE_MS = 1000;
const MB = 1024 * 1024;

/** A field of /proc/<pid>/status in bytes (VmRSS: now; VmHWM: the highest so far). */
function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!kb) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(kb[1]) * 1024;
}

interface Plane {
  child: ChildProcess;
  url: string;
  /** The admin key the plane made on its first start (its data dir's admin-key file, or its stdout). */
  key: string | null;
}

/** `waymark plane` on `dataDir` (and `databaseUrl`, when on Postgres), once it listens. */
async function startPlane(dataDir: string, databaseUrl: string | null): Promise<Plane> {
  const env: NodeJS.ProcessEnv = { ...process.env, WAYMARK_LOG_LEVEL: 'info' };
  delete env.WAYMARK_DATABASE_URL;
  if (databaseUrl) env.WAYMARK_DATABASE_URL = databaseUrl;
  const child = spawn(process.execPath, [BIN, 'plane', '--port', '0', '--data-dir', dataDir], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const late = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(late);
        resolve(m[1]);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(late);
      reject(new Error(`plane exited (${code ?? signal}) before listening: ${out}`));
    });
  });
  let key: string | null = null;
  try {
    key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim();
  } catch {
    key = /(wm_[A-Za-z0-9_-]+)/.exec(out)?.[1] ?? null;
  }
  return { child, url, key };
}

async function stopPlane(p: Plane): Promise<void> {
  if (p.child.exitCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  await exited;
}

/** Every row posted by WRITERS writers, batch by batch; the errors counted (must be 0). */
const ingest = (url: string, key: string, events: OutboxEvent[]) =>
  ingestAll([url], key, events, { writers: WRITERS, batch: BATCH });

interface Rep {
  rowsPerSec: number;
  firstStartMb: number;
  peakMb: number;
  endMb: number;
  restartMb: number;
  errors: number;
}

/** One repetition on a fresh data dir (and, on Postgres, a fresh database). */
async function rep(backend: 'pglite' | 'postgres', events: OutboxEvent[]): Promise<Rep> {
  const run = async (databaseUrl: string | null): Promise<Rep> => {
    const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-ingest-rss-'));
    const dataDir = join(dir, 'plane');
    try {
      let plane = await startPlane(dataDir, databaseUrl);
      try {
        if (!plane.key) throw new Error('the plane made no admin key');
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        const pid = plane.child.pid!;
        const firstStart = statusBytes(pid, 'VmRSS');
        let sampled = firstStart;
        const sampler = setInterval(() => {
          sampled = Math.max(sampled, statusBytes(pid, 'VmRSS'));
        }, 50);
        const t0 = performance.now();
        const errors = await ingest(plane.url, plane.key, events);
        const secs = (performance.now() - t0) / 1000;
        clearInterval(sampler);
        const end = statusBytes(pid, 'VmRSS');
        // the kernel's high-water mark sees a peak between two samples too
        const peak = Math.max(sampled, statusBytes(pid, 'VmHWM'));
        await stopPlane(plane);
        plane = await startPlane(dataDir, databaseUrl);
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        const restart = statusBytes(plane.child.pid!, 'VmRSS');
        return {
          rowsPerSec: events.length / secs,
          firstStartMb: firstStart / MB,
          peakMb: peak / MB,
          endMb: end / MB,
          restartMb: restart / MB,
          errors,
        };
      } finally {
        await stopPlane(plane);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  return backend === 'pglite' ? run(null) : withScratchDatabase(PG, 'rss', run);
}

const events = await backlogEvents(N);
const date = new Date().toISOString();
console.log(
  `plane RSS under ingest: \`waymark plane\` in its own process, ${N} rows (pseudo-random text), ${WRITERS} writers, ${BATCH}-row batches, ${REPS} reps (the backends alternating which goes first); ${availableParallelism()} cores; MiB (2^20 bytes)`,
);
const reps: Record<'pglite' | 'postgres', Rep[]> = { pglite: [], postgres: [] };
for (let i = 0; i < REPS; i++) {
  for (const b of i % 2 === 0 ? (['pglite', 'postgres'] as const) : (['postgres', 'pglite'] as const)) {
    const r = await rep(b, events);
    reps[b].push(r);
    console.error(
      `  rep ${i + 1}/${REPS} ${b}: ${r.rowsPerSec.toFixed(0)} rows/s · RSS first start ${r.firstStartMb.toFixed(0)}, peak ${r.peakMb.toFixed(0)}, end ${r.endMb.toFixed(0)}, restart ${r.restartMb.toFixed(0)} MiB · ${r.errors} errors`,
    );
  }
}
let errors = 0;
for (const b of ['pglite', 'postgres'] as const) {
  const pick = (k: keyof Rep) => summary(reps[b].map((r) => r[k]));
  errors += reps[b].reduce((a, r) => a + r.errors, 0);
  console.log(
    `${b.padEnd(8)} ${fmt(pick('rowsPerSec'))} rows/s · plane RSS: first start ${fmt(pick('firstStartMb'))} MiB, peak under ingest ${fmt(pick('peakMb'))} MiB, end of ingest ${fmt(pick('endMb'))} MiB, after restart ${fmt(pick('restartMb'))} MiB`,
  );
  console.log(
    JSON.stringify({
      bench: 'ingest-rss',
      backend: b,
      rows: N,
      writers: WRITERS,
      reps: REPS,
      cores: availableParallelism(),
      rowsPerSec: pick('rowsPerSec'),
      firstStartMb: pick('firstStartMb'),
      peakMb: pick('peakMb'),
      endMb: pick('endMb'),
      restartMb: pick('restartMb'),
      date,
    }),
  );
}
if (errors) {
  console.error(`${errors} ingest request(s) failed`);
  process.exitCode = 1;
}
