/**
 * LangGraph savers side by side on one graph (the workload of bench/steps.ts:
 * T turns, each a P-byte AI message with one tool call and a P-byte tool
 * result, pseudo-random text; `durability: "sync"`, so each step waits for
 * its checkpoint): steps/s, steps per CPU-second of this process and bytes of
 * the run; repetitions interleave the savers, ratios are taken within a
 * repetition, and on SQLite the disk's raw fsync rate is measured in each.
 *
 * - `waymark`: WaymarkSaver over SqliteCheckpointer (synchronous=FULL, its
 *   default) or PostgresCheckpointer;
 * - `langgraph`: LangGraph's own SqliteSaver (as shipped: synchronous=NORMAL) /
 *   PostgresSaver, from bench/peers/langgraph when it is installed;
 * - `memory`: LangGraph's MemorySaver, for its serialized bytes (what a saver
 *   that keeps every checkpoint whole stores); always available.
 *
 * The graph is built with waymark's own dev copy of @langchain/langgraph for
 * every saver, so the savers differ and nothing else does.
 *
 *   npx tsx bench/langgraph-saver.ts [sqlite|postgres|both] [turns=200] [reps=5]
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { PostgresCheckpointer } from '../client/postgres/index.js';
import { WaymarkSaver } from '../client/langgraph/index.js';
import { peerInstalled, peerPostgresSaver, peerSqliteSaver, peerVersion } from './lib/langgraph.js';
import { fmt, median, ratios, summary, timed } from './lib/stats.js';
import { fsyncRate } from './lib/fsync.js';
import { randomText } from './lib/text.js';

const backends = (process.argv[2] ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [process.argv[2]];
/** WAYMARK_BENCH_SMOKE=1: tiny sizes, for the smoke test in npm test (correctness, not timing). */
const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const T = SMOKE ? 3 : Number(process.argv[3] ?? 200);
const REPS = SMOKE ? 1 : Number(process.argv[4] ?? 5);
const P = 200;
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-lg-'));
let n = 0;
const emit = (m: Record<string, unknown>) =>
  console.log(
    JSON.stringify({
      ...m,
      cores: cpus().length,
      node: process.version,
      peerPackage: peerInstalled() ? `@langchain/langgraph ${peerVersion()}` : null,
      date: new Date().toISOString(),
    }),
  );

function graph(checkpointer: BaseCheckpointSaver, seed: number) {
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', (s) => {
      const turn = s.messages.filter((m) => m.getType() === 'ai').length;
      return {
        messages: [
          turn < T
            ? new AIMessage({
                content: randomText(P, seed, turn, 0),
                tool_calls: [{ id: `call_${turn}`, name: 'work', args: { t: turn } }],
              })
            : new AIMessage({ content: 'done' }),
        ],
      };
    })
    .addNode('tools', (s) => {
      const call = (s.messages.at(-1) as AIMessage).tool_calls![0];
      return {
        messages: [
          new ToolMessage({ content: randomText(P, seed, (call.args as { t: number }).t, 1), tool_call_id: call.id! }),
        ],
      };
    })
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (s) => ((s.messages.at(-1) as AIMessage).tool_calls?.length ? 'tools' : END))
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}

interface Rate {
  rate: number;
  cpu: number;
}
let seed = 0;

/** Steps/s of one run (its 2T + 1 node steps over the wall time of `invoke`), and steps per CPU-second. */
async function timedRun(saver: BaseCheckpointSaver, thread: string): Promise<Rate> {
  const t = await timed(() =>
    graph(saver, seed).invoke(
      { messages: [new HumanMessage('go')] },
      { configurable: { thread_id: thread }, recursionLimit: 2 * T + 10, durability: 'sync' },
    ),
  );
  if (t.value.messages.length !== 2 * T + 2) throw new Error(`run ended with ${t.value.messages.length} messages`);
  return { rate: (2 * T + 1) / t.secs, cpu: (2 * T + 1) / t.cpuSecs };
}

function fileBytes(path: string): number {
  const db = new Database(path);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
}

async function schemaBytes(sql: postgres.Sql, schema: string): Promise<number> {
  const [{ b }] = await sql<{ b: string }[]>`
    SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS b
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p')`;
  return Number(b);
}

/** One run in a fresh store: steps/s and bytes beyond an empty store of the same kind. */
async function one(who: 'waymark' | 'langgraph' | 'memory', backend: string): Promise<{ rate: Rate; bytes: number }> {
  const key = `${who}_${++n}_${process.pid}`;
  if (who === 'memory') {
    const saver = new MemorySaver();
    const rate = await timedRun(saver, 'one');
    let bytes = 0;
    const walk = (v: unknown) => {
      if (v instanceof Uint8Array) bytes += v.byteLength;
      else if (typeof v === 'string') bytes += Buffer.byteLength(v);
      else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
    };
    walk(saver.storage);
    walk(saver.writes);
    return { rate, bytes };
  }
  if (backend === 'sqlite') {
    const path = join(dir, `${key}.db`);
    const emptyPath = join(dir, `${key}-empty.db`);
    let rate: Rate;
    if (who === 'waymark') {
      const empty = new WaymarkSaver(new SqliteCheckpointer({ path: emptyPath }));
      await empty.setup();
      await empty.store.close();
      const saver = new WaymarkSaver(new SqliteCheckpointer({ path }));
      await saver.setup();
      rate = await timedRun(saver, 'one');
      await saver.store.close();
    } else {
      const empty = peerSqliteSaver(emptyPath);
      await empty.getTuple({ configurable: { thread_id: 'none' } });
      empty.db.close();
      const saver = peerSqliteSaver(path);
      rate = await timedRun(saver, 'one');
      saver.db.close();
    }
    return { rate, bytes: fileBytes(path) - fileBytes(emptyPath) };
  }
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  const schema = `bench_lg_${key}`;
  const emptySchema = `${schema}_empty`;
  try {
    let rate: Rate;
    if (who === 'waymark') {
      const empty = new WaymarkSaver(new PostgresCheckpointer({ url: PG, schema: emptySchema, max: 2 }));
      await empty.setup();
      await empty.store.close();
      const saver = new WaymarkSaver(new PostgresCheckpointer({ url: PG, schema, max: 2 }));
      await saver.setup();
      rate = await timedRun(saver, 'one');
      await saver.store.close();
    } else {
      (await peerPostgresSaver(PG, emptySchema)).end();
      const saver = await peerPostgresSaver(PG, schema);
      rate = await timedRun(saver, 'one');
      await saver.end();
    }
    return { rate, bytes: (await schemaBytes(sql, schema)) - (await schemaBytes(sql, emptySchema)) };
  } finally {
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${emptySchema}" CASCADE`);
    await sql.end();
  }
}

console.log(
  `LangGraph savers, one graph: T=${T} turns (${2 * T + 1} steps), P=${P} bytes, pseudo-random text, durability "sync", ${REPS} reps interleaved: median [min–max], ratios within a repetition; "/CPU-s" is steps per CPU-second of this process`,
);
if (!peerInstalled())
  console.log(
    "LangGraph's own SqliteSaver/PostgresSaver: not measured (bench/peers/langgraph is not installed; `npm ci` there)",
  );
for (const backend of backends) {
  const whos = [
    'waymark',
    ...(peerInstalled() ? ['langgraph'] : []),
    ...(backend === 'sqlite' ? ['memory'] : []),
  ] as const as readonly ('waymark' | 'langgraph' | 'memory')[];
  const rates: Record<string, Rate[]> = {};
  const bytes: Record<string, number[]> = {};
  const fsyncs: number[] = [];
  for (let r = 0; r < REPS; r++) {
    seed = r;
    if (backend === 'sqlite') fsyncs.push(fsyncRate(dir, SMOKE ? 20 : 300));
    for (const who of whos) {
      const x = await one(who, backend);
      (rates[who] ??= []).push(x.rate);
      (bytes[who] ??= []).push(x.bytes);
    }
  }
  const fsync = backend === 'sqlite' ? summary(fsyncs) : undefined;
  if (fsync)
    console.log(
      `sqlite: raw fsync rate ${fmt(fsync)} /s (waymark's SQLite saver commits at FULL, LangGraph's as shipped at NORMAL)`,
    );
  for (const who of whos) {
    const stepsPerSec = summary(rates[who].map((x) => x.rate));
    const cpu = summary(rates[who].map((x) => x.cpu));
    // waymark's steps/s over this saver's, and this saver's bytes over waymark's, within each repetition
    const vs =
      who === 'waymark'
        ? null
        : ratios(
            rates.waymark.map((x) => x.rate),
            rates[who].map((x) => x.rate),
          );
    const bytesVs = who === 'waymark' ? null : ratios(bytes[who], bytes.waymark);
    const line = {
      bench: 'langgraph-saver',
      backend: who === 'memory' ? 'memory' : backend,
      who,
      T,
      P,
      reps: REPS,
      stepsPerSec,
      cpu,
      bytes: median(bytes[who]),
      waymarkVs: vs,
      bytesVsWaymark: bytesVs,
      ...(fsync ? { fsync } : {}),
    };
    console.log(
      `${(who === 'memory' ? 'memory' : backend).padEnd(9)} ${who.padEnd(10)} ${fmt(stepsPerSec)} steps/s · ${fmt(cpu)} /CPU-s · ${(median(bytes[who]) / 1024).toFixed(0)} KiB` +
        (vs ? ` · waymark ${fmt(vs, 1, '×')} its steps/s, it ${fmt(bytesVs, 1, '×')} waymark's bytes` : ''),
    );
    emit(line);
  }
}
rmSync(dir, { recursive: true, force: true });
