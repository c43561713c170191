/**
 * What one more row of a long run costs the plane: a laptop's drain sends its
 * run's rows a batch or two at a time as the run goes, so the plane ingests
 * one-row batches into runs of every length. Each repetition, on a scratch
 * Postgres database: a run's first `TAIL` rows as one-row batches (timed: the
 * short run), then its rows up to `rows` in 500-row batches (not timed), then
 * `TAIL` more one-row batches (timed: the long run). Reported per repetition
 * and as median [min–max]: ms per one-row batch (wall, and CPU of this process,
 * which holds the plane's code and its Postgres client), and the long run's
 * cost over the short run's within the repetition (1.0 = the cost does not
 * grow with the run). Rows carry 200 bytes of pseudo-random text per message
 * (bench/lib/text.ts).
 *
 *   npx tsx bench/ingest-long-run.ts [rows=5000] [reps=5]
 */
import { createKey } from '../plane/auth.js';
import { openPlaneDatabase } from '../plane/db/open.js';
import { ingestBatch } from '../plane/ingest.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import type { OutboxEvent } from '../shared/rows.js';
import { takeEvents, withScratchDatabase } from './lib/backlog.js';
import { randomText } from './lib/text.js';
import { fmt, median, ratios, summary, timed } from './lib/stats.js';

const ROWS = Number(process.argv[2] ?? 5000);
const REPS = Number(process.argv[3] ?? (process.env.WAYMARK_BENCH_SMOKE === '1' ? 1 : 5));
const TAIL = 200;
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Rep {
  shortMs: number;
  longMs: number;
  shortCpuMs: number;
  longCpuMs: number;
}

/** One run of `n` rows as a laptop's drain sends them: each row's state a message of 200 bytes of pseudo-random text. */
async function runEvents(n: number): Promise<OutboxEvent[]> {
  const store = new SqliteCheckpointer({ path: ':memory:', synchronous: 'NORMAL', writerId: 'laptop' });
  try {
    for (let i = 0; i < n; i++)
      await store.put({
        executionId: 'long-run',
        nodeId: `turn:${i}`,
        turn: i,
        step: 'llm_call',
        status: 'completed',
        agentPath: 'agent:b',
        state: { messages: [{ role: 'assistant', content: randomText(200, 7, i) }] as never },
      });
    return await takeEvents(store);
  } finally {
    await store.close();
  }
}

const checkpoints = await runEvents(ROWS + TAIL);
if (checkpoints.length !== ROWS + TAIL) throw new Error(`expected ${ROWS + TAIL} rows, got ${checkpoints.length}`);

const reps: Rep[] = [];
for (let r = 0; r < REPS; r++) {
  reps.push(
    await withScratchDatabase(PG, 'long_run', async (url) => {
      const database = await openPlaneDatabase({ databaseUrl: url });
      try {
        const { projectId } = await createKey(database.db, {
          createProject: true,
          project: 'bench',
          scopes: ['ingest'],
        });
        const one = async (from: number, to: number) => {
          const t = await timed(async () => {
            for (let i = from; i < to; i++) {
              const out = await ingestBatch(database.db, projectId, 'laptop', undefined, [checkpoints[i]]);
              if (out.accepted !== 1) throw new Error(`row ${i} not accepted: ${JSON.stringify(out.results)}`);
            }
          });
          return { ms: (t.secs * 1000) / (to - from), cpuMs: (t.cpuSecs * 1000) / (to - from) };
        };
        const short = await one(0, TAIL);
        for (let i = TAIL; i < ROWS; i += 500)
          await ingestBatch(database.db, projectId, 'laptop', undefined, checkpoints.slice(i, Math.min(i + 500, ROWS)));
        const long = await one(ROWS, ROWS + TAIL);
        return { shortMs: short.ms, longMs: long.ms, shortCpuMs: short.cpuMs, longCpuMs: long.cpuMs };
      } finally {
        await database.close();
      }
    }),
  );
  const x = reps[r];
  console.log(
    `rep ${r + 1}: ms per one-row batch at ${TAIL} rows ${x.shortMs.toFixed(2)} (CPU ${x.shortCpuMs.toFixed(2)}), at ${ROWS} rows ${x.longMs.toFixed(2)} (CPU ${x.longCpuMs.toFixed(2)}): ×${(x.longMs / x.shortMs).toFixed(2)}`,
  );
}
const col = (k: keyof Rep) => reps.map((x) => x[k]);
console.log(
  `\none-row batches into a run of ${TAIL} vs ${ROWS} rows, ${REPS} reps (median [min–max]):\n` +
    `  ms per batch:     ${fmt(summary(col('shortMs')), 2)} → ${fmt(summary(col('longMs')), 2)}\n` +
    `  CPU ms per batch: ${fmt(summary(col('shortCpuMs')), 2)} → ${fmt(summary(col('longCpuMs')), 2)}\n` +
    `  long / short:     ${fmt(ratios(col('longMs'), col('shortMs')), 2, '×')}`,
);
console.log(
  JSON.stringify({
    bench: 'ingest-long-run',
    rows: ROWS,
    tail: TAIL,
    reps: REPS,
    shortMs: median(col('shortMs')),
    longMs: median(col('longMs')),
    ratio: median(reps.map((x) => x.longMs / x.shortMs)),
  }),
);
