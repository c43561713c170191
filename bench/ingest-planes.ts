/**
 * Plane ingest with one and with two plane processes on one Postgres database
 * (issue 19, item 3): the real `waymark plane` binary (dist/, `npm run build`
 * first) started once or twice against a fresh database, and `writers`
 * concurrent writers posting 500-row batches of pseudo-random rows, writer w
 * to plane w mod processes. Reported per level: rows/s, rows per CPU-second of
 * the plane processes (user + system read from /proc/<pid>/stat, so the
 * writers' own CPU is not counted), and errors (must be 0); the 2/1 ratio is
 * taken within a repetition, and the levels alternate which goes first. The
 * machine's core count is printed: with the database, the writers and the
 * planes sharing few cores, the second process has little idle CPU to use.
 *
 *   npx tsx bench/ingest-planes.ts [rows=20000] [writers=8] [reps=5]
 *   WAYMARK_BENCH_PLANE_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" …   (a CPU profile of each plane process)
 */
import { availableParallelism } from 'node:os';
import { createKey, openPlaneDatabase } from '../plane/index.js';
import type { OutboxEvent } from '../shared/rows.js';
import { ingestAll } from './lib/ingest.js';
import { backlogEvents, withScratchDatabase } from './lib/backlog.js';
import { cpuSecs, startPlaneProcess, type PlaneProcess } from './lib/plane-process.js';
import { fmt, ratios, summary } from './lib/stats.js';

const N = Number(process.argv[2] ?? 20000);
const WRITERS = Number(process.argv[3] ?? 8);
const REPS = Number(process.argv[4] ?? (process.env.WAYMARK_BENCH_SMOKE === '1' ? 1 : 5));
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BATCH = 500;
interface Level {
  processes: number;
  rowsPerSec: number;
  rowsPerPlaneCpuSec: number;
  errors: number;
}

/** One level on a fresh database: `processes` planes, WRITERS writers, every row once. */
async function level(events: OutboxEvent[], processes: number): Promise<Level> {
  return withScratchDatabase(PG, 'planes', async (databaseUrl) => {
    // migrate and make the key here, so the planes start on a ready database
    const database = await openPlaneDatabase({ databaseUrl });
    const { key } = await createKey(database.db, { createProject: true, project: 'bench', scopes: ['ingest'] });
    await database.close();
    const planes: PlaneProcess[] = [];
    try {
      // one at a time, inside the try: a plane that fails to start leaves none running
      for (let i = 0; i < processes; i++) planes.push(await startPlaneProcess(databaseUrl));
      // one warm-up batch per plane (its first request compiles the ingest path), not counted: the planes start alike
      for (const [i, p] of planes.entries()) {
        const warm = await fetch(`${p.url}/v1/ingest`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ protocol: 1, writerId: `warm-${i}`, rows: warmup.slice(i * BATCH, (i + 1) * BATCH) }),
        });
        const answer = await warm.text();
        if (warm.status !== 200) throw new Error(`warm-up batch answered ${warm.status}: ${answer}`);
      }
      const cpu0 = planes.map((p) => cpuSecs(p.child.pid!));
      const t0 = performance.now();
      const errors = await ingestAll(
        planes.map((p) => p.url),
        key,
        events,
        { writers: WRITERS, batch: BATCH },
      );
      const secs = (performance.now() - t0) / 1000;
      const cpu = planes.reduce((a, p, i) => a + cpuSecs(p.child.pid!) - cpu0[i], 0);
      return { processes, rowsPerSec: events.length / secs, rowsPerPlaneCpuSec: events.length / cpu, errors };
    } finally {
      await Promise.all(planes.map((p) => p.stop()));
    }
  });
}

const events = await backlogEvents(N);
// rows of other runs for the warm-up batches (never the measured ones: those would be answered as duplicates)
const warmup = (await backlogEvents(2 * BATCH, 4, 'warm')).slice(0, 2 * BATCH);
console.log(
  `plane ingest with 1 and 2 plane processes on one Postgres: ${N} rows (pseudo-random text), ${WRITERS} writers, ${BATCH}-row batches, ${REPS} reps interleaved (the first level alternates); ${availableParallelism()} cores shared by Postgres, the planes and the writers`,
);
const one: Level[] = [];
const two: Level[] = [];
for (let rep = 0; rep < REPS; rep++) {
  for (const p of rep % 2 === 0 ? [1, 2] : [2, 1]) {
    const l = await level(events, p);
    (p === 1 ? one : two).push(l);
    console.error(
      `  rep ${rep + 1}/${REPS}: ${p} process(es) ${l.rowsPerSec.toFixed(0)} rows/s, ${l.rowsPerPlaneCpuSec.toFixed(0)} rows per plane CPU-s, ${l.errors} errors`,
    );
  }
}
const rate1 = summary(one.map((l) => l.rowsPerSec));
const rate2 = summary(two.map((l) => l.rowsPerSec));
const cpu1 = summary(one.map((l) => l.rowsPerPlaneCpuSec));
const cpu2 = summary(two.map((l) => l.rowsPerPlaneCpuSec));
const scale = ratios(
  two.map((l) => l.rowsPerSec),
  one.map((l) => l.rowsPerSec),
)!;
const errors = [...one, ...two].reduce((a, l) => a + l.errors, 0);
console.log(`1 plane process   ${fmt(rate1)} rows/s · ${fmt(cpu1)} rows per plane CPU-s`);
console.log(
  `2 plane processes ${fmt(rate2)} rows/s · ${fmt(cpu2)} rows per plane CPU-s · 2/1 ${fmt(scale, 2)}× · ${errors} errors`,
);
console.log(
  JSON.stringify({
    bench: 'ingest-planes',
    rows: N,
    writers: WRITERS,
    reps: REPS,
    cores: availableParallelism(),
    one: rate1,
    two: rate2,
    oneCpu: cpu1,
    twoCpu: cpu2,
    scale,
    errors,
    date: new Date().toISOString(),
  }),
);
if (errors) {
  console.error(`${errors} ingest request(s) failed`);
  process.exitCode = 1;
}
