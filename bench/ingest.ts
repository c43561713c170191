/**
 * Plane ingest over loopback HTTP with 500-row batches, next to the raw
 * multi-row insert of the same rows into the same database, in one run; then
 * 1, 8 and 32 concurrent writers (each its own writer id and runs) posting
 * 500-row batches (a smaller `batch`: a laptop's drain sending a row or two
 * at a time, where one project's commits, not its rows, are the limit): rows/s, rows per CPU-second of this process (writers and
 * in-process plane), p50/p99 request latency, errors (must be 0). Rows carry
 * pseudo-random message text; repetitions interleave the raw insert and every
 * level, and the share of raw is taken within a repetition.
 *
 *   npx tsx bench/ingest.ts [rows=20000] [pglite|postgres|both] [writers=1,8,32] [reps=5] [batch=500]
 */
import pino from 'pino';
import { createKey, openPlaneDatabase, startPlane } from '../plane/index.js';
import { loadConfig } from '../plane/config.js';
import { executionOfEvent, type OutboxEvent } from '../shared/rows.js';
import { rawPglite, rawPostgres } from './lib/raw-insert.js';
import { fmt, median, ratios, summary, timed } from './lib/stats.js';
import { backlogEvents, withScratchDatabase } from './lib/backlog.js';

const N = Number(process.argv[2] ?? 20000);
const which = process.argv[3] ?? 'both';
const WRITERS = (process.argv[4] ?? '1,8,32').split(',').map(Number);
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REPS = Number(process.argv[5] ?? (process.env.WAYMARK_BENCH_SMOKE === '1' ? 1 : 5));
const BATCH = Number(process.argv[6] ?? 500);
if (!Number.isInteger(BATCH) || BATCH < 1)
  throw new Error(`batch: a whole number of rows, at least 1 (got ${process.argv[6]})`);

interface Level {
  writers: number;
  rowsPerSec: number;
  rowsPerCpuSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Answers of 429/503 (back-pressure), each retried after its Retry-After. */
  shed: number;
  /** Batches that failed for good. */
  errors: number;
}

/**
 * Post every row through a fresh plane with `writers` concurrent writers.
 * Run r goes to writer r % writers, which posts its runs' rows in order in
 * batches of `BATCH`: each run has exactly one writer, as on real machines.
 */
async function viaPlane(events: OutboxEvent[], writers: number, databaseUrl?: string): Promise<Level> {
  const database = await openPlaneDatabase(databaseUrl ? { databaseUrl } : { dataDir: 'memory://' });
  const plane = await startPlane(loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://' }), {
    database,
    logger: pino({ level: 'silent' }),
  });
  const { key } = await createKey(database.db, { createProject: true, project: 'bench', scopes: ['ingest'] });
  const latencies: number[] = [];
  let errors = 0;
  let shed = 0;
  const seen = new Map<string, number>();
  const failed = (what: string) => {
    errors++;
    seen.set(what, (seen.get(what) ?? 0) + 1);
  };
  const runs = new Map<string, OutboxEvent[]>();
  for (const e of events) {
    const id = executionOfEvent(e);
    const rows = runs.get(id) ?? [];
    if (!rows.length) runs.set(id, rows);
    rows.push(e);
  }
  const mine = Array.from({ length: writers }, () => [] as OutboxEvent[]);
  [...runs.values()].forEach((rows, r) => mine[r % writers].push(...rows));
  const writer = async (w: number) => {
    for (let i = 0; i < mine[w].length; i += BATCH) {
      const rows = mine[w].slice(i, i + BATCH);
      const t = performance.now();
      // as the drain does: a 429/503 is back-pressure, retried after its Retry-After (counted as shed)
      for (let attempt = 1; ; attempt++) {
        try {
          const res = await fetch(`${plane.url}/v1/ingest`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            body: JSON.stringify({ protocol: 1, writerId: `bench-${w}`, rows }),
          });
          const body = (await res.json()) as { accepted: number; error?: { code?: string; message?: string } };
          if ((res.status === 429 || res.status === 503) && attempt < 10) {
            shed++;
            await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
            continue;
          }
          if (res.status !== 200 || body.accepted !== rows.length)
            failed(
              `${res.status} ${body.error?.code ?? ''} ${body.error?.message ?? JSON.stringify(body).slice(0, 120)}`,
            );
        } catch (e) {
          failed(`fetch: ${(e as Error).message}`);
        }
        break;
      }
      latencies.push(performance.now() - t);
    }
  };
  const t = await timed(() => Promise.all(Array.from({ length: writers }, (_, w) => writer(w))));
  const rowsPerSec = events.length / t.secs;
  const rowsPerCpuSec = events.length / t.cpuSecs;
  await plane.close();
  await database.close();
  for (const [what, n] of seen) console.error(`  ${n}× ${what}`);
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    writers,
    rowsPerSec,
    rowsPerCpuSec,
    p50Ms: median(latencies),
    p99Ms: sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)],
    requests: latencies.length,
    shed,
    errors,
  };
}

const events = await backlogEvents(N);
const targets = which === 'both' ? ['postgres', 'pglite'] : [which];
console.log(
  `plane ingest, ${N} rows (pseudo-random text) in ${BATCH}-row batches over loopback; concurrent writers: ${WRITERS.join(', ')}; ${REPS} reps interleaved: median [min–max], shares of raw within a repetition; "/CPU-s" is rows per CPU-second of this process (writers + in-process plane)`,
);
let failed = 0;
for (const target of targets) {
  const raws: number[] = [];
  const levels: Record<number, Level[]> = {};
  for (let rep = 0; rep < REPS; rep++) {
    raws.push(target === 'postgres' ? await rawPostgres(PG, events, BATCH) : await rawPglite(events, BATCH));
    for (const writers of WRITERS) {
      const l =
        target === 'postgres'
          ? await withScratchDatabase(PG, 'ingest', (url) => viaPlane(events, writers, url))
          : await viaPlane(events, writers);
      failed += l.errors;
      (levels[writers] ??= []).push(l);
    }
  }
  const raw = summary(raws);
  console.log(`${target.padEnd(9)} raw multi-row insert ${fmt(raw)} rows/s`);
  for (const writers of WRITERS) {
    const ls = levels[writers];
    const rate = summary(ls.map((l) => l.rowsPerSec));
    const cpu = summary(ls.map((l) => l.rowsPerCpuSec));
    const ofRaw = ratios(
      ls.map((l) => l.rowsPerSec),
      raws,
    )!;
    const p50Ms = median(ls.map((l) => l.p50Ms));
    const p99Ms = median(ls.map((l) => l.p99Ms));
    const sum = (k: 'requests' | 'shed' | 'errors') => ls.reduce((a, l) => a + l[k], 0);
    console.log(
      `${target.padEnd(9)} ${String(writers).padStart(2)} writer(s)       ${fmt(rate)} rows/s (${fmt(ofRaw, 2)} of raw) · ${fmt(cpu)} /CPU-s · p50 ${p50Ms.toFixed(0)} ms · p99 ${p99Ms.toFixed(0)} ms (medians) · ${sum('requests')} batches · ${sum('shed')} shed (429/503, retried) · ${sum('errors')} errors`,
    );
    console.log(
      JSON.stringify({
        bench: 'ingest',
        target,
        rows: N,
        batch: BATCH,
        reps: REPS,
        writers,
        raw: raw.median,
        rawRange: raw,
        rowsPerSec: rate.median,
        rowsPerSecRange: rate,
        rowsPerCpuSec: cpu,
        ofRaw: ofRaw.median,
        ofRawRange: ofRaw,
        p50Ms,
        p99Ms,
        requests: sum('requests'),
        shed: sum('shed'),
        errors: sum('errors'),
        date: new Date().toISOString(),
      }),
    );
  }
}
if (failed) {
  console.error(`${failed} ingest request(s) failed`);
  process.exitCode = 1;
}
