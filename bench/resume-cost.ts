/**
 * What a resume costs in a fresh process: a run of T turns paused at its last
 * tool; a new process (bench/resume-child.ts) opens the store and resumes it.
 * waymark beside LangGraph JS (the same run, same text, paused by `interrupt()`
 * in its tools node, resumed with a `Command`) when the peer is installed,
 * interleaved repetition by repetition. Reported for each, median [min–max]:
 *
 * - the resume call alone;
 * - open + build + call: opening the store and reading the run's newest row
 *   (after the store module is loaded, for both), building the agent or
 *   compiling the graph, the call;
 * - import + open + build + call: the same with the store module's import in
 *   front (`waymark/sqlite` or `waymark/postgres`; the peer's saver package),
 *   each side's agent library loaded before the clock starts;
 * - the whole process, spawn to exit, imports included (both as plain node
 *   under `npm run bench`, which compiles waymark as it ships; both under
 *   tsx when this file is run with tsx);
 *
 * and the peer's time over waymark's, taken within each repetition (for
 * import + open + build + call also waymark's over the peer's). On SQLite
 * the disk's raw fsync rate of each repetition is printed beside them.
 *
 *   npx tsx bench/resume-cost.ts [turns=200] [reps=7] [sqlite|postgres] [waymark|langgraph|both]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../client/index.js';
import { benchAgent, P } from './lib/resume-workload.js';
import { fmt, ratios, summary, type Summary } from './lib/stats.js';
import { fsyncRate } from './lib/fsync.js';
import { childCommand } from './lib/paths.js';
import { peerGraph, peerInstalled, peerPostgresSaver, peerRun, peerSqliteSaver, peerVersion } from './lib/langgraph.js';

const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const CHILD = childCommand(import.meta.url, 'resume-child');
const turns = Number(process.argv[2] ?? 200);
const reps = Number(process.argv[3] ?? 7);
const backend = process.argv[4] ?? 'sqlite';
const whoArg = process.argv[5] ?? 'both';
const who = (whoArg === 'both' ? ['waymark', 'langgraph'] : [whoArg]).filter(
  (w) => w === 'waymark' || peerInstalled(),
) as ('waymark' | 'langgraph')[];
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-resume-'));
const schema = `bench_resume_${process.pid}`;
const KEYS = ['loadMs', 'importMs', 'openMs', 'buildMs', 'callMs', 'totalMs', 'windowMs', 'processMs'] as const;
type Times = Record<(typeof KEYS)[number], number> & { windowCpuMs: number };

const spec = (w: string) => (backend === 'sqlite' ? `sqlite:${join(dir, `${w}.db`)}` : `postgres:${PG}#${schema}_${w}`);
const store = who.includes('waymark') ? await openStore(spec('waymark'), { max: 4 }) : null;
let saver: any = null;
if (who.includes('langgraph')) {
  if (backend === 'sqlite') saver = peerSqliteSaver(spec('langgraph').slice('sqlite:'.length));
  else saver = await peerPostgresSaver(PG, `${schema}_langgraph`);
}

const times: Record<string, Times[]> = {};
const fsyncs: number[] = [];
for (let i = 0; i < reps; i++) {
  if (backend === 'sqlite') fsyncs.push(fsyncRate(dir, 300));
  const id = `resume-${i}`;
  for (const w of who) {
    if (w === 'waymark') {
      const p = await benchAgent(store!, turns, i).run('go', { executionId: id });
      if (p.status !== 'paused') throw new Error('expected a pause');
    } else await peerRun(peerGraph(saver, turns, P, undefined, true, i), id, turns);
    const t0 = performance.now();
    const c = spawnSync(process.execPath, [...CHILD, w, spec(w), id, String(turns), String(i)], { encoding: 'utf8' });
    const processMs = performance.now() - t0;
    if (c.status !== 0) throw new Error(c.stderr);
    (times[w] ??= []).push({ ...(JSON.parse(c.stdout.trim()) as Omit<Times, 'processMs'>), processMs });
  }
}
const rows = store ? (await store.list('resume-0')).length : undefined;
await store?.close();
await saver?.end?.();
if (backend !== 'sqlite') {
  const postgres = (await import('postgres')).default;
  const sql = postgres(PG, { max: 1, onnotice: () => {} });
  for (const w of who) await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}_${w}" CASCADE`);
  await sql.end();
}
rmSync(dir, { recursive: true, force: true });

const sides = Object.fromEntries(
  who.map((w) => [
    w,
    Object.fromEntries(KEYS.map((k) => [k, summary(times[w].map((t) => t[k]))])) as Record<
      (typeof KEYS)[number],
      Summary
    >,
  ]),
);
// the peer's time over waymark's, within each repetition: above 1 means waymark is faster
const peerOver =
  times.waymark && times.langgraph
    ? Object.fromEntries(
        KEYS.map((k) => [
          k,
          ratios(
            times.langgraph.map((t) => t[k]),
            times.waymark.map((t) => t[k]),
          ),
        ]),
      )
    : null;
// waymark's import + open + build + call over the peer's, within each repetition: below 1 means waymark is faster
const windowOver = ratios(
  times.waymark?.map((t) => t.windowMs),
  times.langgraph?.map((t) => t.windowMs),
);
// the same window's CPU (the child's, every thread), which the other processes of a shared machine disturb less
const cpuOf = (w: string) => times[w]?.map((t) => t.windowCpuMs);
const windowCpu = Object.fromEntries(who.map((w) => [w, summary(cpuOf(w)!)]));
const windowCpuOver = ratios(cpuOf('waymark'), cpuOf('langgraph'));
const fsync = backend === 'sqlite' ? summary(fsyncs) : undefined;
console.log(
  `resume of a ${turns}-turn run${rows ? ` (${rows} rows)` : ''} in a fresh process, ${backend}, ${reps} reps interleaved: median [min–max] ms` +
    (fsync ? ` (raw fsync rate ${fmt(fsync)} /s)` : ''),
);
for (const w of who) {
  const s = sides[w];
  console.log(
    `  ${w.padEnd(10)} call ${fmt(s.callMs, 1)} · open ${fmt(s.openMs, 1)} · build ${fmt(s.buildMs, 1)} · open+build+call ${fmt(s.totalMs, 1)} · import ${fmt(s.importMs, 1)} · import+open+build+call ${fmt(s.windowMs, 1)} · whole process ${fmt(s.processMs, 0)} (of it before the store module: ${fmt(s.loadMs, 0)})`,
  );
}
if (peerOver) {
  console.log(
    `  → LangGraph's time over waymark's: call ${fmt(peerOver.callMs, 1, '×')} · open ${fmt(peerOver.openMs, 1, '×')} · open+build+call ${fmt(peerOver.totalMs, 1, '×')} · import ${fmt(peerOver.importMs, 1, '×')} · import+open+build+call ${fmt(peerOver.windowMs, 1, '×')} · whole process ${fmt(peerOver.processMs, 2, '×')}`,
  );
  console.log(`  → waymark's import+open+build+call over LangGraph's: ${fmt(windowOver, 2, '×')}`);
}
console.log(
  `  import+open+build+call, CPU ms of the process: ${who.map((w) => `${w} ${fmt(windowCpu[w], 1)}`).join(' · ')}${windowCpuOver ? ` → waymark/LangGraph ${fmt(windowCpuOver, 2, '×')}` : ''}`,
);
console.log(
  JSON.stringify({
    bench: 'resume',
    backend,
    turns,
    reps,
    rows,
    waymark: sides.waymark ?? null,
    langgraph: sides.langgraph ?? null,
    peerOver,
    windowOver,
    windowCpu,
    windowCpuOver,
    ...(fsync ? { fsync } : {}),
    peerPackage: who.includes('langgraph') ? `@langchain/langgraph ${peerVersion()}` : null,
    date: new Date().toISOString(),
  }),
);
