/**
 * What a resume costs in a fresh process: a run of T turns paused at its last
 * tool; a new process opens the store and resumes it. Prints open time and
 * resume-call time (median of N fresh processes), waymark beside LangGraph JS
 * (the same run paused by `interrupt()` in its tools node, resumed with a
 * `Command`) when the peer is installed. In both children the libraries are
 * loaded before the clock starts: "open" is opening the store and reading the
 * run's latest checkpoint, "resume" is the call that finishes the run.
 *
 *   npx tsx bench/resume-cost.ts [turns=200] [reps=7] [sqlite|postgres] [waymark|langgraph|both]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Agent, interrupt, openStore, ScriptedModel, tool, type Checkpointer } from '../client/index.js';
import { peerGraph, peerInstalled, peerLatest, peerPostgresSaver, peerResume, peerRun, peerSqliteSaver, peerVersion } from './lib/langgraph.js';

const P = 200;
export function benchAgent(store: Checkpointer, turns: number): Agent {
  const step = tool({
    name: 'step',
    description: '',
    parameters: z.object({ i: z.number() }),
    execute: ({ i }) => (i === turns - 1 ? interrupt('last', { i }).approved : 'r'.repeat(P)),
  });
  const model = new ScriptedModel(({ turn }) =>
    turn < turns ? { content: 'a'.repeat(P), toolCalls: [{ name: 'step', arguments: { i: turn } }] } : { content: 'done' },
  );
  return new Agent({ name: 'bench', model, tools: [step], checkpointer: store, maxTurns: turns + 1 });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const PG = process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Open the peer's saver for a spec (same spec strings as ours). */
async function peerSaver(spec: string): Promise<any> {
  if (spec.startsWith('sqlite:')) return peerSqliteSaver(spec.slice('sqlite:'.length));
  const [url, schema] = spec.slice('postgres:'.length).split('#');
  return peerPostgresSaver(url, schema);
}

if (process.argv[1]?.endsWith('resume-cost.ts') && process.argv[2] === '--child') {
  const [who, spec, id, turns] = process.argv.slice(3);
  const T = Number(turns);
  if (who === 'waymark') {
    await import(spec.startsWith('sqlite:') ? '../client/sqlite/index.js' : '../client/postgres/index.js');
    const t0 = performance.now();
    const store = await openStore(spec, { max: 4 });
    await store.latest(id);
    const t1 = performance.now();
    const r = await benchAgent(store, T).resume(id, { approved: true });
    const t2 = performance.now();
    if (r.status !== 'completed') throw new Error(`resume ended ${r.status}`);
    console.log(JSON.stringify({ openMs: t1 - t0, resumeMs: t2 - t1 }));
    await store.close();
  } else {
    peerVersion();
    peerGraph(null, 1, 1);
    const t0 = performance.now();
    const saver = await peerSaver(spec);
    await peerLatest(saver, id);
    const t1 = performance.now();
    const messages = await peerResume(peerGraph(saver, T, P, undefined, true), id, T, { approved: true });
    const t2 = performance.now();
    if (messages !== 2 * T + 2) throw new Error(`peer resume ended with ${messages} messages`);
    console.log(JSON.stringify({ openMs: t1 - t0, resumeMs: t2 - t1 }));
    await saver.end?.();
  }
} else if (process.argv[1]?.endsWith('resume-cost.ts')) {
  const turns = Number(process.argv[2] ?? 200);
  const reps = Number(process.argv[3] ?? 7);
  const backend = process.argv[4] ?? 'sqlite';
  const whoArg = process.argv[5] ?? 'both';
  const who = (whoArg === 'both' ? ['waymark', 'langgraph'] : [whoArg]).filter((w) => w === 'waymark' || peerInstalled());
  const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-resume-'));
  const schema = `bench_resume_${process.pid}`;
  const result: Record<string, unknown> = { bench: 'resume', backend, turns, reps };
  for (const w of who) {
    const spec = backend === 'sqlite' ? `sqlite:${join(dir, `${w}.db`)}` : `postgres:${PG}#${schema}_${w}`;
    const opens: number[] = [];
    const resumes: number[] = [];
    const store = w === 'waymark' ? await openStore(spec, { max: 4 }) : null;
    const saver = w === 'langgraph' ? await peerSaver(spec) : null;
    for (let i = 0; i < reps; i++) {
      const id = `resume-${i}`;
      if (store) {
        const p = await benchAgent(store, turns).run('go', { executionId: id });
        if (p.status !== 'paused') throw new Error('expected a pause');
      } else await peerRun(peerGraph(saver, turns, P, undefined, true), id, turns);
      const c = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', w, spec, id, String(turns)], { encoding: 'utf8' });
      if (c.status !== 0) throw new Error(c.stderr);
      const m = JSON.parse(c.stdout.trim()) as { openMs: number; resumeMs: number };
      opens.push(m.openMs);
      resumes.push(m.resumeMs);
    }
    if (store) {
      result.rows = (await store.list('resume-0')).length;
      await store.close();
    }
    await saver?.end?.();
    result[w === 'waymark' ? 'openMs' : 'peerOpenMs'] = median(opens);
    result[w === 'waymark' ? 'resumeMs' : 'peerResumeMs'] = median(resumes);
    if (backend !== 'sqlite') {
      const postgres = (await import('postgres')).default;
      const sql = postgres(PG, { max: 1, onnotice: () => {} });
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}_${w}" CASCADE`);
      await sql.end();
    }
  }
  rmSync(dir, { recursive: true, force: true });
  const f = (x: unknown) => (typeof x === 'number' ? x.toFixed(1) : 'n/a');
  console.log(
    `resume of a ${turns}-turn run (${result.rows} rows) in a fresh process, ${backend} (median of ${reps}): waymark open ${f(result.openMs)} ms, resume call ${f(result.resumeMs)} ms` +
      (result.peerResumeMs !== undefined ? ` · LangGraph open ${f(result.peerOpenMs)} ms, resume call ${f(result.peerResumeMs)} ms → ${((result.peerResumeMs as number) / (result.resumeMs as number)).toFixed(1)}× faster resume` : ''),
  );
  console.log(JSON.stringify({ ...result, peerPackage: who.includes('langgraph') ? `@langchain/langgraph ${peerVersion()}` : null, date: new Date().toISOString() }));
}
