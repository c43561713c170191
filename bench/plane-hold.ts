/**
 * What holding runs at a plane costs a runner (issue 35): agent steps/s of R
 * runs × T turns through the real runtime (an `Agent` with a scripted model,
 * a tool per turn; each turn writes an llm_call and a tool_call row) on a
 * SQLite store (synchronous=FULL), unconnected and connected to a plane, the
 * plane its own process (`waymark plane`, dist/: `npm run build` first; the
 * memory:// database) so this process's CPU is the runner's alone. Two tools:
 * a plain one, and one whose body is an `idempotent` effect (which confirms
 * the run's hold with the store, and, connected, with the plane, before the
 * effect). Each pair is run with a short lease too (300 ms: the heartbeat
 * renews every 100 ms, many times per run) to show the timer adds no round
 * trip per step. Pseudo-random tool results; repetitions interleaved, the
 * ratio connected/unconnected taken within each; steps per CPU-second beside
 * steps/s; the disk's raw fsync rate beside.
 *
 *   npx tsx bench/plane-hold.ts [reps=5]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { Agent, connectPlane, idempotent, ScriptedModel, tool } from '../client/index.js';
import { SqliteCheckpointer } from '../client/sqlite/index.js';
import { fsyncRate } from './lib/fsync.js';
import { ROOT } from './lib/paths.js';
import { fmt, ratios, summary, timed } from './lib/stats.js';
import { randomText } from './lib/text.js';

const SMOKE = process.env.WAYMARK_BENCH_SMOKE === '1';
const REPS = SMOKE ? 1 : Number(process.argv[2] ?? 5);
const R = SMOKE ? 2 : 20;
const T = SMOKE ? 3 : 25;
const P = 200;
const BIN = join(ROOT, 'bin/waymark.mjs');
const dir = mkdtempSync(join(tmpdir(), 'waymark-bench-hold-'));

/** `waymark plane` on memory:// in its own process; its admin key makes a project key. */
async function startPlane(): Promise<{ child: ChildProcess; url: string; key: string }> {
  const child = spawn(process.execPath, [BIN, 'plane', '--port', '0', '--data-dir', 'memory://'], {
    env: { ...process.env, WAYMARK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const { url, admin } = await new Promise<{ url: string; admin: string }>((resolve, reject) => {
    const late = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      const k = /(wm_[0-9a-f]{16}_[A-Za-z0-9_-]{43})/.exec(out);
      if (m && k) {
        clearTimeout(late);
        resolve({ url: m[1], admin: k[1] });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(late);
      reject(new Error(`plane exited (${code ?? signal}) before listening: ${out}`));
    });
  });
  const res = await fetch(`${url}/v1/admin/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
    body: JSON.stringify({ project: 'local', scopes: ['ingest', 'read'] }),
  });
  const body = (await res.json()) as { key?: string };
  if (!body.key) throw new Error(`no key from the plane: ${res.status} ${JSON.stringify(body)}`);
  return { child, url, key: body.key };
}

type Variant = { connected: boolean; effect: boolean; leaseMs: number };

let n = 0;
/** Steps/s (and per CPU-second of this process) of R runs of T turns, one after another. */
async function rate(v: Variant, plane: { url: string; key: string }): Promise<{ rate: number; cpu: number }> {
  const store = new SqliteCheckpointer({ path: join(dir, `h${++n}.db`) });
  const replica = v.connected ? connectPlane(store, { url: plane.url, apiKey: plane.key, followChanges: false }) : null;
  const charge = idempotent(async function charge(run: number, turn: number) {
    return { id: randomText(P, run, turn, 2) };
  });
  const work = tool({
    name: 'work',
    description: 'work',
    parameters: z.object({ run: z.number(), turn: z.number() }),
    execute: async ({ run, turn }) => (v.effect ? charge(run, turn) : randomText(P, run, turn, 1)),
  });
  let current = 0;
  const model = new ScriptedModel(({ turn }) =>
    turn < T
      ? { toolCalls: [{ name: 'work', arguments: { run: current, turn } }], content: randomText(P, current, turn, 0) }
      : { content: 'done' },
  );
  const agent = new Agent({ name: 'bench', model, tools: [work], checkpointer: store, leaseMs: v.leaseMs });
  const t = await timed(async () => {
    for (let r = 0; r < R; r++) {
      current = r;
      const out = await agent.run('go', { executionId: `run-${n}-${r}` });
      if (out.status !== 'completed') throw new Error(`run ${r}: ${out.status} ${JSON.stringify(out.error)}`);
    }
  });
  if (replica) {
    // every row reached the plane: the connected runs were real ones
    const left = await replica.flush({ timeoutMs: 120_000 });
    if (left.pendingRows) throw new Error(`${left.pendingRows} rows never reached the plane`);
    await replica.stop();
  }
  await store.close();
  const steps = R * T * 2;
  return { rate: steps / t.secs, cpu: steps / t.cpuSecs };
}

const variants: { name: string; effect: boolean; leaseMs: number }[] = [
  { name: 'plain tool, lease 30 s', effect: false, leaseMs: 30_000 },
  { name: 'plain tool, lease 300 ms', effect: false, leaseMs: 300 },
  { name: 'idempotent effect per turn, lease 30 s', effect: true, leaseMs: 30_000 },
  { name: 'idempotent effect per turn, lease 300 ms', effect: true, leaseMs: 300 },
];

const plane = await startPlane();
try {
  const results = variants.map(() => ({
    off: [] as { rate: number; cpu: number }[],
    on: [] as { rate: number; cpu: number }[],
  }));
  const fsyncs: number[] = [];
  for (let i = 0; i < REPS; i++) {
    fsyncs.push(fsyncRate(dir, SMOKE ? 20 : 300));
    for (const [j, v] of variants.entries()) {
      // which side goes first alternates with the repetition
      const order = i % 2 === 0 ? [false, true] : [true, false];
      for (const connected of order)
        (connected ? results[j].on : results[j].off).push(
          await rate({ connected, effect: v.effect, leaseMs: v.leaseMs }, plane),
        );
    }
  }
  const fsync = summary(fsyncs);
  for (const [j, v] of variants.entries()) {
    const { off, on } = results[j];
    const ratio = ratios(
      on.map((x) => x.rate),
      off.map((x) => x.rate),
    )!;
    const cpuRatio = ratios(
      on.map((x) => x.cpu),
      off.map((x) => x.cpu),
    )!;
    console.log(
      `${v.name}, R=${R} T=${T}: unconnected ${fmt(summary(off.map((x) => x.rate)))} steps/s (${fmt(summary(off.map((x) => x.cpu)))} /CPU-s) · connected ${fmt(summary(on.map((x) => x.rate)))} steps/s (${fmt(summary(on.map((x) => x.cpu)))} /CPU-s) → ${fmt(ratio, 2, '×')} steps/s, ${fmt(cpuRatio, 2, '×')} /CPU-s (raw fsync rate ${fmt(fsync)} /s)`,
    );
    console.log(
      JSON.stringify({
        bench: 'plane-hold',
        variant: v.name,
        R,
        T,
        reps: REPS,
        unconnected: summary(off.map((x) => x.rate)),
        connected: summary(on.map((x) => x.rate)),
        ratio,
        unconnectedCpu: summary(off.map((x) => x.cpu)),
        connectedCpu: summary(on.map((x) => x.cpu)),
        cpuRatio,
        fsync,
        cores: cpus().length,
        node: process.version,
        date: new Date().toISOString(),
      }),
    );
  }
} finally {
  plane.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
