/**
 * Durable agent steps/s: R runs of T turns (a P-byte model step with one tool
 * call + a P-byte tool step, a checkpoint before each; pseudo-random text),
 * waymark vs LangGraph JS vs the raw single-row commit rate, interleaved
 * repetitions in one run; also steps per CPU-second of this process (valid on
 * a loaded machine) and, on SQLite, the disk's raw fsync rate of each
 * repetition. Also storage growth.
 *
 * On SQLite each is measured at both durability settings: FULL (fsync per
 * commit, survives power loss; waymark's default) and NORMAL (survives a
 * process crash; LangGraph's saver's default, by better-sqlite3's WAL default).
 *
 *   npx tsx bench/steps.ts [steps|storage] [sqlite|postgres|both] [reps=5]
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { PostgresCheckpointer } from '../client/postgres/index.js';
import { ourAgent } from './lib/workload.js';
import { fmt, median, ratios, summary, timed, type Summary } from './lib/stats.js';
import { fsyncRate } from './lib/fsync.js';
import { rateColumns, rateOf, rawPostgresCommits, rawSqliteCommits, type Rate } from './lib/raw-commit.js';
import { peerGraph, peerInstalled, peerPostgresSaver, peerRun, peerSqliteSaver, peerVersion } from './lib/langgraph.js';

const what = process.argv[2] ?? 'steps';
const backends = (process.argv[3] ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [process.argv[3]];
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const P = 200;
/** WAYMARK_BENCH_SMOKE=1: tiny sizes, for the smoke test in npm test (correctness, not timing). */
const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const REPS = Number(process.argv[4] ?? (SMOKE ? 1 : 5));
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-steps-'));
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

type Sync = 'FULL' | 'NORMAL';
async function ours(backend: string, R: number, T: number, synchronous: Sync = 'FULL'): Promise<Rate> {
  const store =
    backend === 'sqlite'
      ? new SqliteCheckpointer({ path: join(dir, `o${++n}.db`), synchronous })
      : new PostgresCheckpointer({ url: PG, schema: `bench_o${process.pid}_${++n}`, max: 2 });
  await store.setup();
  const t = await timed(async () => {
    for (let r = 0; r < R; r++) {
      const res = await ourAgent(store, T, P, undefined, r).run('go', { executionId: `run-${r}` });
      if (res.status !== 'completed') throw new Error(res.status);
    }
  });
  await store.close();
  if (backend === 'postgres') await dropSchema(`bench_o${process.pid}_${n}`);
  return rateOf(R * T * 2, t);
}

/** The peer as it ships (`synchronous` unset) or at waymark's FULL. */
async function peer(backend: string, R: number, T: number, synchronous?: 'FULL'): Promise<Rate> {
  const schema = `bench_p${process.pid}_${++n}`;
  const saver =
    backend === 'sqlite' ? peerSqliteSaver(join(dir, `p${n}.db`), synchronous) : await peerPostgresSaver(PG, schema);
  const t = await timed(async () => {
    for (let r = 0; r < R; r++) await peerRun(peerGraph(saver, T, P, undefined, false, r), `run-${r}`, T);
  });
  if (backend === 'postgres') {
    await saver.end?.();
    await dropSchema(schema);
  } else saver.db.close();
  return rateOf(R * T * 2, t);
}

/** Single-row insert transactions of a row of the same size, same durability setting (SQLite), or autocommit (Postgres). */
async function raw(backend: string, rows: number, synchronous: Sync = 'FULL'): Promise<Rate> {
  return backend === 'sqlite'
    ? rawSqliteCommits(dir, rows, P + 400, synchronous)
    : rawPostgresCommits(PG, rows, P + 400);
}

async function dropSchema(schema: string): Promise<void> {
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await sql.end();
}

function fileBytes(path: string): number {
  const db = new Database(path);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);
}

if (what === 'steps') {
  console.log(
    `durable agent steps/s (P=${P} bytes, pseudo-random text, ${REPS} reps interleaved): median [min–max]; ratios are taken within a repetition, then summarised; "/CPU-s" is steps per CPU-second of this process`,
  );
  for (const backend of backends) {
    const sqlite = backend === 'sqlite';
    for (const [R, T] of SMOKE
      ? [[2, 3]]
      : [
          [50, 20],
          [5, 200],
        ]) {
      const m: Record<string, Rate[]> = { ours: [], oursNormal: [], peer: [], peerFull: [], raw: [], rawNormal: [] };
      const fsyncs: number[] = [];
      // one untimed repetition of the same size each first, so neither side is measured while its code is still cold
      // (V8 optimises a hot path only after thousands of calls; see bench/concurrent.ts). One is enough here: every
      // timed repetition runs each side twice (FULL and NORMAL), so from the second on both run optimised code,
      // and the median of five does not rest on the first
      await ours(backend, R, T);
      if (peerInstalled()) await peer(backend, R, T);
      for (let i = 0; i < REPS; i++) {
        // interleaved, so a slow patch of the shared disk hits every column alike
        if (sqlite) fsyncs.push(fsyncRate(dir, SMOKE ? 20 : 300));
        m.ours.push(await ours(backend, R, T));
        if (peerInstalled()) m.peer.push(await peer(backend, R, T));
        m.raw.push(await raw(backend, Math.min(2000, R * T * 2)));
        if (!sqlite) continue;
        m.oursNormal.push(await ours(backend, R, T, 'NORMAL'));
        if (peerInstalled()) m.peerFull.push(await peer(backend, R, T, 'FULL'));
        m.rawNormal.push(await raw(backend, Math.min(4000, R * T * 2), 'NORMAL'));
      }
      const rate = (k: string): Summary | null => (m[k].length ? summary(m[k].map((x) => x.rate)) : null);
      const cpu = (k: string): Summary | null => (m[k].length ? summary(m[k].map((x) => x.cpu)) : null);
      const ratio = (a: string, b: string) =>
        ratios(
          m[a].map((x) => x.rate),
          m[b].map((x) => x.rate),
        );
      const line = {
        bench: 'steps',
        backend,
        R,
        T,
        P,
        reps: REPS,
        ...rateColumns(m, ['ours', 'peer', 'raw']),
        vsPeer: ratio('ours', 'peer'),
        ofRaw: ratio('ours', 'raw'),
        ...(sqlite
          ? {
              fsync: summary(fsyncs),
              ...rateColumns(m, ['oursNormal', 'peerFull', 'rawNormal']),
              vsPeerFull: ratio('ours', 'peerFull'),
              vsPeerNormal: ratio('oursNormal', 'peer'),
              ofRawNormal: ratio('oursNormal', 'rawNormal'),
            }
          : {}),
      };
      const col = (label: string, k: string) =>
        m[k].length
          ? `  ${label.padEnd(34)} ${fmt(rate(k))} steps/s · ${fmt(cpu(k))} /CPU-s`
          : `  ${label.padEnd(34)} not measured`;
      if (sqlite) {
        console.log(`sqlite    R=${R} T=${T} (raw fsync rate ${fmt(line.fsync)} /s)`);
        console.log(col('waymark FULL (default)', 'ours'));
        console.log(col('LangGraph as shipped (NORMAL)', 'peer'));
        console.log(col('raw single-row FULL', 'raw'));
        console.log(col('waymark NORMAL', 'oursNormal'));
        console.log(col('LangGraph FULL', 'peerFull'));
        console.log(col('raw single-row NORMAL', 'rawNormal'));
        console.log(
          `  → FULL: ${fmt(line.vsPeer, 1, '×')} LangGraph as shipped, ${fmt(line.vsPeerFull, 1, '×')} LangGraph FULL, ${fmt(line.ofRaw, 0, '%')} of raw FULL · NORMAL: ${fmt(line.vsPeerNormal, 1, '×')} LangGraph as shipped, ${fmt(line.ofRawNormal, 0, '%')} of raw NORMAL (raw fsync rate ${fmt(line.fsync)} /s)`,
        );
      } else {
        console.log(`postgres  R=${R} T=${T}`);
        console.log(col('waymark', 'ours'));
        console.log(col('LangGraph', 'peer'));
        console.log(col('raw autocommit insert', 'raw'));
        console.log(`  → ${fmt(line.vsPeer, 1, '×')} LangGraph, ${fmt(line.ofRaw, 0, '%')} of raw`);
      }
      emit(line);
    }
  }
}

/** Bytes of every table (with its indexes and TOAST) in a Postgres schema. */
async function schemaBytes(schema: string): Promise<number> {
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  const [{ b }] = await sql<{ b: string }[]>`
    SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS b
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p')`;
  await sql.end();
  return Number(b);
}

/** One run of T turns in a fresh store; its bytes beyond an empty store of the same kind, and turn times. */
async function storedRun(
  who: 'waymark' | 'langgraph',
  backend: string,
  T: number,
  seed: number,
): Promise<{ bytes: number; times: number[] }> {
  const times: number[] = [];
  const tick = () => times.push(performance.now());
  const key = `s-${who}-${T}-${++n}`;
  if (backend === 'sqlite') {
    const path = join(dir, `${key}.db`);
    const emptyPath = join(dir, `${key}-empty.db`);
    if (who === 'waymark') {
      await new SqliteCheckpointer({ path: emptyPath }).close();
      const store = new SqliteCheckpointer({ path });
      await ourAgent(store, T, P, tick, seed).run('go', { executionId: 'one' });
      await store.close();
    } else {
      const empty = peerSqliteSaver(emptyPath);
      await empty.getTuple({ configurable: { thread_id: 'none' } });
      empty.db.close();
      const saver = peerSqliteSaver(path);
      await peerRun(peerGraph(saver, T, P, tick, false, seed), 'one', T);
      saver.db.close();
    }
    return { bytes: fileBytes(path) - fileBytes(emptyPath), times };
  }
  const schema = `bench_${key.replaceAll('-', '_')}_${process.pid}`;
  const emptySchema = `${schema}_empty`;
  if (who === 'waymark') {
    for (const [sch, run] of [
      [emptySchema, false],
      [schema, true],
    ] as const) {
      const store = new PostgresCheckpointer({ url: PG, schema: sch, max: 2 });
      await store.setup();
      if (run) await ourAgent(store, T, P, tick, seed).run('go', { executionId: 'one' });
      await store.close();
    }
  } else {
    (await peerPostgresSaver(PG, emptySchema)).end();
    const saver = await peerPostgresSaver(PG, schema);
    await peerRun(peerGraph(saver, T, P, tick, false, seed), 'one', T);
    await saver.end();
  }
  const bytes = (await schemaBytes(schema)) - (await schemaBytes(emptySchema));
  await dropSchema(schema);
  await dropSchema(emptySchema);
  return { bytes, times };
}

if (what === 'storage') {
  const TS = SMOKE ? [10, 20, 50, 400] : [10, 20, 50, 100, 200, 400];
  const whos = (['waymark', 'langgraph'] as const).filter((w) => w === 'waymark' || (peerInstalled() && !SMOKE));
  for (const backend of backends) {
    console.log(
      (backend === 'sqlite'
        ? `storage per run on SQLite (bytes beyond an empty store: file + WAL after checkpoint), P=${P}`
        : `storage per run on Postgres (bytes beyond an empty schema: pg_total_relation_size of every table, indexes and TOAST included), P=${P}`) +
        `, pseudo-random text, ${REPS} reps interleaved: median [min–max]`,
    );
    // per repetition and side: bytes by T, the growth exponent, and turn time last/first tenth of the 400-turn run
    const sizes: Record<string, Record<number, number>[]> = {};
    const exps: Record<string, number[]> = {};
    const turns: Record<string, number[]> = {};
    for (let rep = 0; rep < REPS; rep++) {
      for (const who of whos) {
        const by: Record<number, number> = {};
        let turnTimes: number[] = [];
        for (const T of TS) {
          const r = await storedRun(who, backend, T, rep);
          by[T] = r.bytes;
          if (T === 400) turnTimes = r.times;
        }
        const d = turnTimes.slice(1).map((t, i) => t - turnTimes[i]);
        const tenth = Math.floor(d.length / 10);
        (sizes[who] ??= []).push(by);
        (exps[who] ??= []).push(Math.log(by[400] / by[50]) / Math.log(8));
        (turns[who] ??= []).push(median(d.slice(-tenth)) / median(d.slice(0, tenth)));
      }
    }
    for (const who of whos) {
      const bytes = Object.fromEntries(TS.map((T) => [T, median(sizes[who].map((b) => b[T]))]));
      const bytesRange = Object.fromEntries(TS.map((T) => [T, summary(sizes[who].map((b) => b[T]))]));
      const exponent = summary(exps[who]);
      const turnRatio = summary(turns[who]);
      // the peer's bytes over waymark's, within each repetition
      const vsWaymark =
        who === 'langgraph'
          ? Object.fromEntries(
              [200, 400].map((T) => [
                T,
                ratios(
                  sizes.langgraph.map((b) => b[T]),
                  sizes.waymark.map((b) => b[T]),
                ),
              ]),
            )
          : undefined;
      const kib = (x: number) => (x / 1024).toFixed(0);
      console.log(
        `${who.padEnd(10)} ${TS.map((T) => `T=${T}: ${kib(bytesRange[T].median)} KiB [${kib(bytesRange[T].min)}–${kib(bytesRange[T].max)}]`).join(' · ')} · exponent(50→400) ${fmt(exponent, 2)} · turn time last/first 10% ${fmt(turnRatio, 2, '×')}` +
          (vsWaymark ? ` · ${fmt(vsWaymark[200], 1, '×')} waymark's bytes at T=200` : ''),
      );
      emit({
        bench: 'storage',
        backend,
        who,
        P,
        reps: REPS,
        bytes,
        bytesRange,
        exponent,
        turnRatio,
        ...(vsWaymark ? { vsWaymark } : {}),
      });
    }
  }
}
rmSync(dir, { recursive: true, force: true });
