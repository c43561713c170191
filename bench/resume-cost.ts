/**
 * What a resume costs in a fresh process: a run of T turns paused at its last
 * tool; a new process opens the store and resumes it. Prints open time and
 * resume-call time (median of N fresh processes).
 *
 *   npx tsx bench/resume-cost.ts [turns=200] [reps=7] [sqlite|postgres]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Agent, interrupt, ScriptedModel, tool, type Checkpointer } from '../client/index.js';
import { openStore } from '../examples/agents/store-from-spec.js';

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

if (process.argv[2] === '--child') {
  const [spec, id, turns] = process.argv.slice(3);
  const t0 = performance.now();
  const store = await openStore(spec);
  await store.latest(id);
  const t1 = performance.now();
  const r = await benchAgent(store, Number(turns)).resume(id, { approved: true });
  const t2 = performance.now();
  if (r.status !== 'completed') throw new Error(`resume ended ${r.status}`);
  console.log(JSON.stringify({ openMs: t1 - t0, resumeMs: t2 - t1 }));
  await store.close();
} else {
  const turns = Number(process.argv[2] ?? 200);
  const reps = Number(process.argv[3] ?? 7);
  const backend = process.argv[4] ?? 'sqlite';
  const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-resume-'));
  const spec = backend === 'sqlite' ? `sqlite:${join(dir, 'b.db')}` : `postgres:${process.env.WAYMARK_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'}#bench_resume_${process.pid}`;
  const store = await openStore(spec);
  const opens: number[] = [];
  const resumes: number[] = [];
  for (let i = 0; i < reps; i++) {
    const id = `resume-${i}`;
    const p = await benchAgent(store, turns).run('go', { executionId: id });
    if (p.status !== 'paused') throw new Error('expected a pause');
    const c = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', spec, id, String(turns)], { encoding: 'utf8' });
    if (c.status !== 0) throw new Error(c.stderr);
    const m = JSON.parse(c.stdout.trim()) as { openMs: number; resumeMs: number };
    opens.push(m.openMs);
    resumes.push(m.resumeMs);
  }
  const rows = (await store.list('resume-0')).length;
  await store.close();
  if (backend !== 'sqlite') {
    const postgres = (await import('postgres')).default;
    const sql = postgres(spec.slice('postgres:'.length).split('#')[0], { max: 1, onnotice: () => {} });
    await sql.unsafe(`DROP SCHEMA IF EXISTS "bench_resume_${process.pid}" CASCADE`);
    await sql.end();
  }
  rmSync(dir, { recursive: true, force: true });
  const result = { bench: 'resume', backend, turns, rows, reps, openMs: median(opens), resumeMs: median(resumes), date: new Date().toISOString() };
  console.log(`resume of a ${turns}-turn run (${rows} rows) in a fresh process, ${backend}: open ${result.openMs.toFixed(1)} ms, resume call ${result.resumeMs.toFixed(1)} ms (median of ${reps})`);
  console.log(JSON.stringify(result));
}
