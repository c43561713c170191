/**
 * Durable agent steps/s: R runs of T turns (a P-byte model step with one tool
 * call + a P-byte tool step, a checkpoint before each), waymark vs LangGraph
 * JS vs the raw single-row commit rate, in one run. Also storage growth.
 *
 * On SQLite each is measured at both durability settings: FULL (fsync per
 * commit, survives power loss; waymark's default) and NORMAL (survives a
 * process crash; LangGraph's saver's default, by better-sqlite3's WAL default).
 *
 *   npx tsx bench/steps.ts [steps|storage] [sqlite|postgres|both] [reps=3]
 */
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { PostgresCheckpointer } from '../client/postgres/index.js';
import { ourAgent, median, spread } from './lib/workload.js';
import { peerGraph, peerInstalled, peerPostgresSaver, peerRun, peerSqliteSaver, peerVersion } from './lib/langgraph.js';

const what = process.argv[2] ?? 'steps';
const backends = (process.argv[3] ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [process.argv[3]];
const REPS = Number(process.argv[4] ?? 3);
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const P = 200;
/** WAYMARK_BENCH_SMOKE=1: tiny sizes, for the smoke test in npm test (correctness, not timing). */
const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-steps-'));
let n = 0;
const emit = (m: Record<string, unknown>) => console.log(JSON.stringify({ ...m, cores: cpus().length, node: process.version, peerPackage: peerInstalled() ? `@langchain/langgraph ${peerVersion()}` : null, date: new Date().toISOString() }));

type Sync = 'FULL' | 'NORMAL';

async function ours(backend: string, R: number, T: number, synchronous: Sync = 'FULL'): Promise<number> {
  const store = backend === 'sqlite' ? new SqliteCheckpointer({ path: join(dir, `o${++n}.db`), synchronous }) : new PostgresCheckpointer({ url: PG, schema: `bench_o${process.pid}_${++n}`, max: 2 });
  await store.setup();
  const t0 = performance.now();
  for (let r = 0; r < R; r++) {
    const res = await ourAgent(store, T, P).run('go', { executionId: `run-${r}` });
    if (res.status !== 'completed') throw new Error(res.status);
  }
  const rate = (R * T * 2) / ((performance.now() - t0) / 1000);
  await store.close();
  if (backend === 'postgres') await dropSchema(`bench_o${process.pid}_${n}`);
  return rate;
}

/** The peer as it ships (`synchronous` unset) or at waymark's FULL. */
async function peer(backend: string, R: number, T: number, synchronous?: 'FULL'): Promise<number> {
  const schema = `bench_p${process.pid}_${++n}`;
  const saver = backend === 'sqlite' ? peerSqliteSaver(join(dir, `p${n}.db`), synchronous) : await peerPostgresSaver(PG, schema);
  const t0 = performance.now();
  for (let r = 0; r < R; r++) await peerRun(peerGraph(saver, T, P), `run-${r}`, T);
  const rate = (R * T * 2) / ((performance.now() - t0) / 1000);
  if (backend === 'postgres') {
    await saver.end?.();
    await dropSchema(schema);
  }
  return rate;
}

/** Single-row insert transactions of a row of the same size, same durability setting (SQLite), or autocommit (Postgres). */
async function raw(backend: string, rows: number, synchronous: Sync = 'FULL'): Promise<number> {
  const body = 'x'.repeat(P + 400);
  if (backend === 'sqlite') {
    const db = new Database(join(dir, `raw${++n}.db`));
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, e TEXT, seq INTEGER, body TEXT)');
    const ins = db.prepare('INSERT INTO t (e, seq, body) VALUES (?, ?, ?)');
    const t0 = performance.now();
    for (let i = 0; i < rows; i++) db.transaction(() => ins.run('e', i, body))();
    const rate = rows / ((performance.now() - t0) / 1000);
    db.close();
    return rate;
  }
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  const table = `bench_raw_${process.pid}`;
  await sql.unsafe(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, e text, seq int, body text)`);
  const t0 = performance.now();
  // one autocommitted INSERT per row: a transaction in one round trip, the least a durable write costs
  for (let i = 0; i < rows; i++) await sql.unsafe(`INSERT INTO ${table} (e, seq, body) VALUES ('e', $1, $2)`, [i, body]);
  const rate = rows / ((performance.now() - t0) / 1000);
  await sql.unsafe(`DROP TABLE ${table}`);
  await sql.end();
  return rate;
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
  console.log(`durable agent steps/s (P=${P} bytes, ${REPS} reps interleaved, median [spread]; ratios are medians of per-rep ratios)`);
  const r0 = (x: number | null) => (x === null ? 'n/a' : String(Math.round(x)));
  for (const backend of backends) {
    const sqlite = backend === 'sqlite';
    for (const [R, T] of SMOKE ? [[2, 3]] : [
      [50, 20],
      [5, 200],
    ]) {
      const m: Record<string, number[]> = { ours: [], oursNormal: [], peer: [], peerFull: [], raw: [], rawNormal: [] };
      // one small untimed run each first, so neither side is measured while its code is still cold
      await ours(backend, 2, 5);
      if (peerInstalled()) await peer(backend, 2, 5);
      for (let i = 0; i < REPS; i++) {
        // interleaved, so a slow patch of the shared disk hits every column alike
        m.ours.push(await ours(backend, R, T));
        if (peerInstalled()) m.peer.push(await peer(backend, R, T));
        m.raw.push(await raw(backend, Math.min(2000, R * T * 2)));
        if (!sqlite) continue;
        m.oursNormal.push(await ours(backend, R, T, 'NORMAL'));
        if (peerInstalled()) m.peerFull.push(await peer(backend, R, T, 'FULL'));
        m.rawNormal.push(await raw(backend, Math.min(4000, R * T * 2), 'NORMAL'));
      }
      const med = (k: string) => (m[k].length ? median(m[k]) : null);
      // a ratio is the median of the per-repetition ratios: each pair was measured minutes apart at most,
      // so a slow patch of the shared disk moves both sides of a pair instead of one side of the medians
      const ratio = (a: string, b: string) => (m[a].length && m[a].length === m[b].length ? median(m[a].map((x, i) => x / m[b][i])) : null);
      const line = {
        bench: 'steps', backend, R, T, P,
        ours: med('ours')!, oursSpread: spread(m.ours), peer: med('peer'), peerSpread: spread(m.peer), raw: med('raw')!,
        rawSpread: spread(m.raw),
        vsPeer: ratio('ours', 'peer'), ofRaw: ratio('ours', 'raw')!,
        ...(sqlite
          ? {
              oursNormal: med('oursNormal'), peerFull: med('peerFull'), rawNormal: med('rawNormal'),
              vsPeerFull: ratio('ours', 'peerFull'), vsPeerNormal: ratio('oursNormal', 'peer'), ofRawNormal: ratio('oursNormal', 'rawNormal'),
            }
          : {}),
      };
      const x = (v: number | null | undefined) => (v === null || v === undefined ? 'n/a' : `${v.toFixed(1)}×`);
      const pct = (v: number | null | undefined) => (v === null || v === undefined ? 'n/a' : `${(v * 100).toFixed(0)}%`);
      if (sqlite) {
        console.log(`sqlite    R=${R} T=${T}: waymark FULL ${r0(line.ours)} [${r0(line.oursSpread)}] · LangGraph as shipped (NORMAL) ${r0(line.peer)} [${r0(line.peerSpread)}] · raw FULL ${r0(line.raw)} [${r0(line.rawSpread)}] → ${x(line.vsPeer)} LangGraph, ${pct(line.ofRaw)} of raw`);
        console.log(`          same durability: FULL waymark ${r0(line.ours)} vs LangGraph ${r0(line.peerFull ?? null)} → ${x(line.vsPeerFull)} · NORMAL waymark ${r0(line.oursNormal ?? null)} vs LangGraph ${r0(line.peer)} → ${x(line.vsPeerNormal)}, ${pct(line.ofRawNormal)} of raw NORMAL ${r0(line.rawNormal ?? null)}`);
      } else {
        console.log(`postgres  R=${R} T=${T}: waymark ${r0(line.ours)} [${r0(line.oursSpread)}] · LangGraph ${r0(line.peer)} [${r0(line.peerSpread)}] · raw ${r0(line.raw)} steps/s → ${x(line.vsPeer)} LangGraph, ${pct(line.ofRaw)} of raw`);
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
async function storedRun(who: 'waymark' | 'langgraph', backend: string, T: number): Promise<{ bytes: number; times: number[] }> {
  const times: number[] = [];
  const tick = () => times.push(performance.now());
  const key = `s-${who}-${T}-${++n}`;
  if (backend === 'sqlite') {
    const path = join(dir, `${key}.db`);
    const emptyPath = join(dir, `${key}-empty.db`);
    if (who === 'waymark') {
      await new SqliteCheckpointer({ path: emptyPath }).close();
      const store = new SqliteCheckpointer({ path });
      await ourAgent(store, T, P, tick).run('go', { executionId: 'one' });
      await store.close();
    } else {
      const empty = peerSqliteSaver(emptyPath);
      await empty.getTuple({ configurable: { thread_id: 'none' } });
      empty.db.close();
      const saver = peerSqliteSaver(path);
      await peerRun(peerGraph(saver, T, P, tick), 'one', T);
      saver.db.close();
    }
    return { bytes: fileBytes(path) - fileBytes(emptyPath), times };
  }
  const schema = `bench_${key.replaceAll('-', '_')}_${process.pid}`;
  const emptySchema = `${schema}_empty`;
  if (who === 'waymark') {
    for (const [sch, run] of [[emptySchema, false], [schema, true]] as const) {
      const store = new PostgresCheckpointer({ url: PG, schema: sch, max: 2 });
      await store.setup();
      if (run) await ourAgent(store, T, P, tick).run('go', { executionId: 'one' });
      await store.close();
    }
  } else {
    (await peerPostgresSaver(PG, emptySchema)).end();
    const saver = await peerPostgresSaver(PG, schema);
    await peerRun(peerGraph(saver, T, P, tick), 'one', T);
    await saver.end();
  }
  const bytes = (await schemaBytes(schema)) - (await schemaBytes(emptySchema));
  await dropSchema(schema);
  await dropSchema(emptySchema);
  return { bytes, times };
}

if (what === 'storage') {
  const TS = SMOKE ? [10, 20, 50, 400] : [10, 20, 50, 100, 200, 400];
  for (const backend of backends) {
    console.log(
      backend === 'sqlite'
        ? `storage per run on SQLite (bytes beyond an empty store: file + WAL after checkpoint), P=${P}`
        : `storage per run on Postgres (bytes beyond an empty schema: pg_total_relation_size of every table, indexes and TOAST included), P=${P}`,
    );
    for (const who of ['waymark', 'langgraph'] as const) {
      if (who === 'langgraph' && (!peerInstalled() || SMOKE)) continue;
      const sizes: Record<number, number> = {};
      let turnTimes: number[] = [];
      for (const T of TS) {
        const r = await storedRun(who, backend, T);
        sizes[T] = r.bytes;
        if (T === 400) turnTimes = r.times;
      }
      const exponent = Math.log(sizes[400] / sizes[50]) / Math.log(8);
      const d = turnTimes.slice(1).map((t, i) => t - turnTimes[i]);
      const tenth = Math.floor(d.length / 10);
      const first = median(d.slice(0, tenth));
      const last = median(d.slice(-tenth));
      console.log(`${who.padEnd(10)} ${TS.map((T) => `T=${T}: ${(sizes[T] / 1024).toFixed(0)} KiB`).join(' · ')} · exponent(50→400) ${exponent.toFixed(2)} · turn time last/first 10% ${(last / first).toFixed(2)}×`);
      emit({ bench: 'storage', backend, who, P, bytes: sizes, exponent, turnMsFirst10: first, turnMsLast10: last });
    }
  }
}
rmSync(dir, { recursive: true, force: true });
