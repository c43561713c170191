/**
 * The cost of leases on durable steps/s, before and after in one run: R runs
 * of T turns written straight to the store as the agent writes them (an
 * llm_call and a tool_call row per turn, state growing by P-byte messages,
 * then the run-end marker), once unfenced (the write path before leases) and
 * once as a runner writes now (acquireLease, every put fenced by the lease,
 * the marker releasing it). Pseudo-random text. Reps alternate the two so
 * drift hits both; the ratio is taken within each repetition; steps per
 * CPU-second beside steps/s, and on SQLite the raw fsync rate of each rep.
 *
 *   npx tsx bench/lease-cost.ts [sqlite|postgres|both] [reps=5]
 */
import postgres from 'postgres';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Checkpointer, Lease } from '../client/checkpointer.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { PostgresCheckpointer } from '../client/postgres/index.js';
import { fmt, ratios, summary, timed } from './lib/stats.js';
import { fsyncRate } from './lib/fsync.js';
import { randomText } from './lib/text.js';

const backends = (process.argv[2] ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [process.argv[2]];
const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const REPS = SMOKE ? 1 : Number(process.argv[3] ?? 5);
const R = SMOKE ? 2 : 20;
const T = SMOKE ? 3 : 50;
const P = 200;
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-lease-'));
let n = 0;

async function open(backend: string): Promise<{ store: Checkpointer; drop(): Promise<void> }> {
  if (backend === 'sqlite') {
    const store = new SqliteCheckpointer({ path: join(dir, `l${++n}.db`) });
    return { store, drop: async () => store.close() };
  }
  const schema = `bench_lease${process.pid}_${++n}`;
  const store = new PostgresCheckpointer({ url: PG, schema, max: 2 });
  await store.setup();
  return {
    store,
    async drop() {
      await store.close();
      const sql = postgres(PG, { max: 1, onnotice: () => {} });
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end();
    },
  };
}

/** Steps/s (and steps per CPU-second) of R runs written as the runtime writes them, with or without the lease. */
async function rate(backend: string, leased: boolean): Promise<{ rate: number; cpu: number }> {
  const { store, drop } = await open(backend);
  const t = await timed(async () => {
    for (let r = 0; r < R; r++) {
      const executionId = `run-${r}`;
      const lease: Lease | undefined = leased
        ? await store.acquireLease(executionId, { holder: 'bench#1', ttlMs: 30_000 })
        : undefined;
      const messages: { role: string; content: string }[] = [{ role: 'user', content: 'go' }];
      for (let t = 0; t < T; t++) {
        await store.put(
          {
            executionId,
            nodeId: `turn:${t}`,
            turn: t,
            step: 'llm_call',
            status: 'completed',
            agentPath: 'agent:bench',
            state: { messages, turn: t },
          },
          { lease },
        );
        messages.push({ role: 'assistant', content: randomText(P, r, t, 0) });
        await store.put(
          {
            executionId,
            nodeId: `turn:${t}/tool:work`,
            turn: t,
            step: 'tool_call',
            status: 'completed',
            agentPath: 'agent:bench/tool:work',
            state: { messages, turn: t },
            nodeInput: { t },
          },
          { lease },
        );
        messages.push({ role: 'tool', content: randomText(P, r, t, 1) });
      }
      await store.put(
        {
          executionId,
          nodeId: 'run_end',
          turn: T,
          step: 'run_end',
          status: 'completed',
          agentPath: 'agent:bench',
          state: { messages, turn: T },
          nodeOutput: 'done',
        },
        { lease },
      );
    }
  });
  await drop();
  return { rate: (R * T * 2) / t.secs, cpu: (R * T * 2) / t.cpuSecs };
}

try {
  for (const backend of backends) {
    const before: { rate: number; cpu: number }[] = [];
    const after: { rate: number; cpu: number }[] = [];
    const fsyncs: number[] = [];
    for (let i = 0; i < REPS; i++) {
      if (backend === 'sqlite') fsyncs.push(fsyncRate(dir, SMOKE ? 20 : 300));
      before.push(await rate(backend, false));
      after.push(await rate(backend, true));
    }
    const unfenced = summary(before.map((x) => x.rate));
    const leased = summary(after.map((x) => x.rate));
    const ratio = ratios(
      after.map((x) => x.rate),
      before.map((x) => x.rate),
    )!;
    const fsync = backend === 'sqlite' ? summary(fsyncs) : undefined;
    console.log(
      `${backend} R=${R} T=${T}: unfenced ${fmt(unfenced)} steps/s (${fmt(summary(before.map((x) => x.cpu)))} /CPU-s) · leased ${fmt(leased)} steps/s (${fmt(summary(after.map((x) => x.cpu)))} /CPU-s) → ${fmt(ratio, 2, '×')}` +
        (fsync ? ` (raw fsync rate ${fmt(fsync)} /s)` : ''),
    );
    console.log(
      JSON.stringify({
        bench: 'lease-cost',
        backend,
        R,
        T,
        reps: REPS,
        unfenced,
        leased,
        ratio,
        unfencedCpu: summary(before.map((x) => x.cpu)),
        leasedCpu: summary(after.map((x) => x.cpu)),
        ...(fsync ? { fsync } : {}),
        cores: cpus().length,
        node: process.version,
        date: new Date().toISOString(),
      }),
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
