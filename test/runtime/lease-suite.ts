/**
 * Leases with real processes: a crashed run is resumed
 * by exactly one of two processes that try at once, a stalled runner is
 * fenced, and two recovery workers over many crashed runs bring each back
 * once. Model calls and side effects are counted in files all processes share.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import type { Checkpointer } from '../../client/index.js';
import { Ledger, refundAgent, refundRequest, untilLeaseFree } from '../../examples/agents/refund.js';
import { forkTs, nextMessage, runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';
import { leaseAgent } from './lease-agent.js';

const CHILD = fileURLToPath(new URL('./lease-child.ts', import.meta.url));
const LEASE_MS = '1000';

export interface LeaseProcessSuiteOptions {
  name: string;
  make(): Promise<{ spec: string; store: Checkpointer; close(): Promise<void> }>;
}

/** Lines `<executionId> <n> <pid>` of a shared count file, as `executionId n` → how many. */
function tally(file: string): Map<string, number> {
  const m = new Map<string, number>();
  if (!existsSync(file)) return m;
  for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const [id, n] = line.split(' ');
    m.set(`${id} ${n}`, (m.get(`${id} ${n}`) ?? 0) + 1);
  }
  return m;
}

/** Output of a finished child: its one JSON line. */
async function outputOf(child: ChildProcess): Promise<{ code: number | null; json: any; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  const line = stdout.trim().split('\n').pop() ?? '';
  return { code, json: line ? JSON.parse(line) : null, stderr };
}

/** Start children that wait for a go, then let them all go at once. */
async function atOnce(children: ChildProcess[]): Promise<{ code: number | null; json: any; stderr: string }[]> {
  const outs = children.map(outputOf);
  await Promise.all(children.map((c) => nextMessage(c)));
  for (const c of children) c.send({ go: true });
  return Promise.all(outs);
}

export function runLeaseProcessSuite(options: LeaseProcessSuiteOptions): void {
  describe(`leases with real processes: ${options.name}`, () => {
    const tmp = scratchDir('waymark-lease-');
    let spec: string;
    let store: Checkpointer;
    let close: () => Promise<void>;
    let calls: string;
    let effects: string;
    let n = 0;
    beforeEach(async () => {
      ({ spec, store, close } = await options.make());
      calls = tmp.file(`calls-${++n}.txt`);
      effects = tmp.file(`effects-${n}.txt`);
    });
    afterEach(async () => close());
    afterAll(() => tmp.cleanup());

    const args = (mode: string, ...rest: string[]) => [mode, spec, calls, effects, LEASE_MS, ...rest];

    /** Every row once, seq 0..n-1 without gaps, one run-end marker. */
    async function expectOneRun(id: string) {
      const rows = await store.list(id);
      expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i));
      expect(rows.filter((r) => r.step === 'run_end').map((r) => r.status)).toEqual(['completed']);
      const nodes = rows.map((r) => r.nodeId);
      expect(new Set(nodes).size, nodes.join(', ')).toBe(nodes.length);
      return rows;
    }

    it('two processes resume a crashed run at once: one runs it, the other is refused before writing; one run_end, the model once per step', async () => {
      const id = `race-${n}`;
      const a = await runTs(CHILD, args('run', id, '3', 'runtime.beforeTool', '2'));
      expect(a.signal, a.stderr).toBe('SIGKILL');
      await untilLeaseFree(store, id);
      const before = (await store.list(id)).length;
      const [b, c] = await atOnce(
        [0, 1].map(() => forkTs(CHILD, args('resume', id), { WAIT_GO: '1', MODEL_DELAY_MS: '300' })),
      );
      const outs = [b, c].map((o) => o.json);
      const won = outs.filter((o) => o.result?.status === 'completed');
      const lost = outs.filter((o) => !o.result);
      expect(won, JSON.stringify(outs)).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(['RUN_IN_PROGRESS', 'LEASE_LOST']).toContain(lost[0].error.code);
      if (lost[0].error.code === 'RUN_IN_PROGRESS')
        expect(lost[0].error.details).toMatchObject({
          executionId: id,
          holder: expect.any(String),
          expiresAt: expect.any(String),
        });
      const rows = await expectOneRun(id);
      expect(rows.length).toBeGreaterThan(before);
      expect(rows.map((r) => r.nodeId)).toEqual([
        'turn:0',
        'turn:0/tool:work',
        'turn:1',
        'turn:1/tool:work',
        'turn:2',
        'turn:2/tool:work',
        'turn:3',
        'run_end',
      ]);
      const perTurn = tally(calls);
      expect([...perTurn.entries()].sort()).toEqual([0, 1, 2, 3].map((t) => [`${id} ${t}`, 1]));
      expect([...tally(effects).entries()].sort()).toEqual([0, 1, 2].map((s) => [`${id} ${s}`, 1]));
      expect(await store.getLease(id)).toMatchObject({ holder: null, live: false });
    });

    it('a runner stalled past its lease is taken over; when it wakes it stops with LeaseLost and writes nothing', async () => {
      const id = `stall-${n}`;
      const wake = tmp.file(`wake-${n}`);
      const stalled = forkTs(CHILD, args('run', id, '2'), { STALL_UNTIL: wake });
      const out = outputOf(stalled);
      // stalled inside its first tool call, timer and all: the lease runs out by the store's clock
      const deadline = Date.now() + 120_000;
      while (
        !((await store.list(id)).some((r) => r.step === 'tool_call') && (await store.getLease(id))?.live === false)
      ) {
        if (Date.now() > deadline) throw new Error('the runner never stalled');
        await new Promise((r) => setTimeout(r, 25));
      }
      const agent = leaseAgent({ store, callsFile: calls, effectsFile: effects, leaseMs: 30_000 });
      expect((await agent.resume(id)).status).toBe('completed');
      const after = (await store.list(id)).map((r) => r.id);
      writeFileSync(wake, '');
      const woke = await out;
      expect(woke.json?.error?.code, woke.stderr).toBe('LEASE_LOST');
      expect((await store.list(id)).map((r) => r.id)).toEqual(after);
      await expectOneRun(id);
      expect([...tally(calls).entries()].sort()).toEqual([0, 1, 2].map((t) => [`${id} ${t}`, 1]));
      expect([...tally(effects).entries()].sort()).toEqual([0, 1].map((s) => [`${id} ${s}`, 1]));
    });

    it('a stalled runner that wakes while the new runner is in the same tool, its effect not yet recorded, does not start the effect: the store confirms the lease first', async () => {
      const id = `stall-mid-${n}`;
      const wake = tmp.file(`wake-mid-${n}`);
      const stalled = forkTs(CHILD, args('run', id, '1'), { STALL_UNTIL: wake });
      const out = outputOf(stalled);
      const deadline = Date.now() + 120_000;
      while (
        !((await store.list(id)).some((r) => r.step === 'tool_call') && (await store.getLease(id))?.live === false)
      ) {
        if (Date.now() > deadline) throw new Error('the runner never stalled');
        await new Promise((r) => setTimeout(r, 25));
      }
      let woke: Awaited<typeof out> | undefined;
      const agent = leaseAgent({
        store,
        callsFile: calls,
        effectsFile: effects,
        leaseMs: 30_000,
        // the new runner is inside the tool, before its effect: the stalled one wakes and runs to its end meanwhile
        onTool: async () => {
          writeFileSync(wake, '');
          woke = await out;
        },
      });
      expect((await agent.resume(id)).status).toBe('completed');
      expect(woke?.json?.error?.code, woke?.stderr).toBe('LEASE_LOST');
      // the one effect is the new runner's (this process); the stalled runner neither ran it nor recorded it
      const lines = readFileSync(effects, 'utf8').split('\n').filter(Boolean);
      expect(lines).toEqual([`${id} 0 ${process.pid}`]);
      expect((await store.listIdempotent(id)).map((e) => e.key)).toEqual([`effect:${id}:0`]);
      await expectOneRun(id);
    });

    it('cancel while a runner in another process is mid-tool: it stops at its next step boundary with RUN_CANCELLED, writes nothing more, and resume refuses the run', async () => {
      const id = `cancel-${n}`;
      const release = tmp.file(`release-${n}`);
      const out = outputOf(forkTs(CHILD, args('run', id, '3'), { HOLD_UNTIL: release }));
      const deadline = Date.now() + 120_000;
      while (!existsSync(`${release}.holding`)) {
        if (Date.now() > deadline) throw new Error('the runner never reached its tool');
        await new Promise((r) => setTimeout(r, 25));
      }
      const cancelled = await store.cancel(id, { reason: 'customer withdrew' });
      expect(cancelled.checkpoint).toMatchObject({ seq: 2, step: 'run_end', status: 'cancelled' });
      writeFileSync(release, '');
      const o = await out;
      expect(o.json?.error?.code, o.stderr + JSON.stringify(o.json)).toBe('RUN_CANCELLED');
      expect(o.json.error.details).toMatchObject({
        executionId: id,
        reason: 'customer withdrew',
        checkpointId: cancelled.checkpoint.id,
      });
      const rows = await store.list(id);
      expect(rows.map((r) => `${r.nodeId}:${r.status}`)).toEqual([
        'turn:0:completed',
        'turn:0/tool:work:completed',
        'run_end:cancelled',
      ]);
      // the model was not called again; the tool in flight ran its effect at most once, no later step's ran
      expect([...tally(calls).entries()]).toEqual([[`${id} 0`, 1]]);
      expect([...tally(effects).keys()].filter((k) => k !== `${id} 0`)).toEqual([]);
      expect(await store.getLease(id)).toMatchObject({ holder: null, live: false });
      const agent = leaseAgent({ store, callsFile: calls, effectsFile: effects, leaseMs: 30_000 });
      let err: unknown;
      await agent.resume(id).catch((e) => (err = e));
      expect((err as { code?: string })?.code).toBe('RUN_CANCELLED');
      const resumer = await runTs(CHILD, args('resume', id));
      expect(JSON.parse(resumer.stdout.trim().split('\n').pop()!).error.code, resumer.stderr).toBe('RUN_CANCELLED');
      expect((await store.list(id)).length).toBe(3);
      expect((await store.listExecutions({ state: 'cancelled' })).map((e) => e.executionId)).toContain(id);
    });

    it('a paused run that is cancelled refuses resume with a value (RUN_CANCELLED); its pause is closed and nothing is charged', async () => {
      const id = `cancel-paused-${n}`;
      const ledger = new Ledger(tmp.file(`ledger-${n}.jsonl`));
      const { agent } = refundAgent({ store, ledger, leaseMs: 30_000 });
      const paused = await agent.run(refundRequest('77', 5000), { executionId: id });
      expect(paused.status).toBe('paused');
      const r = await store.cancel(id, { reason: 'duplicate request' });
      expect(r.closedPause?.checkpointId).toBe(paused.pendingInterrupt!.checkpointId);
      expect(await store.getPendingInterrupt(id)).toBeNull();
      let err: unknown;
      await agent.resume(id, { approved: true }).catch((e) => (err = e));
      expect((err as { code?: string })?.code).toBe('RUN_CANCELLED');
      err = undefined;
      await agent.resume(id).catch((e) => (err = e));
      expect((err as { code?: string })?.code).toBe('RUN_CANCELLED');
      expect(ledger.charges()).toEqual([]);
      expect((await store.list(id)).at(-1)).toMatchObject({ step: 'run_end', status: 'cancelled' });
    });

    it('two recovery workers at once over crashed runs: each run recovered once, one run_end each, every effect once, seq without gaps', async () => {
      const prefix = `rec${n}`;
      const count = 6;
      const a = await runTs(CHILD, args('run-many', prefix, String(count), '3', 'runtime.beforeTool', '7'));
      expect(a.signal, a.stderr).toBe('SIGKILL');
      const crashed = (await store.listExecutions({ state: 'running' })).map((e) => e.executionId);
      expect(crashed.length).toBeGreaterThan(1);
      for (const id of crashed) await untilLeaseFree(store, id);
      // what the killed process did: an effect whose record the kill cut off is done again, once (the idempotent() contract)
      const callsBefore = tally(calls);
      const effectsBefore = tally(effects);
      const recorded = new Set<string>();
      for (const id of crashed) for (const e of await store.listIdempotent(id)) recorded.add(e.key);
      const outs = await atOnce(
        [0, 1].map(() => forkTs(CHILD, args('recover'), { WAIT_GO: '1', MODEL_DELAY_MS: '100' })),
      );
      const reports = outs.map((o) => o.json?.report);
      expect(reports.every(Boolean), JSON.stringify(outs.map((o) => o.json ?? o.stderr))).toBe(true);
      const recovered = reports.flatMap((r) =>
        r.runs
          .filter((x: { outcome: string }) => x.outcome === 'recovered')
          .map((x: { executionId: string }) => x.executionId),
      );
      expect(recovered.sort()).toEqual([...crashed].sort());
      expect(reports.flatMap((r) => r.runs.filter((x: { outcome: string }) => x.outcome === 'failed'))).toEqual([]);
      expect(await store.listExecutions({ state: 'running' })).toEqual([]);
      const callsAfter = tally(calls);
      const effectsAfter = tally(effects);
      for (const id of (await store.listExecutions()).map((e) => e.executionId)) {
        await expectOneRun(id);
        for (const t of [0, 1, 2, 3]) {
          const k = `${id} ${t}`;
          expect(callsAfter.get(k), `${k}: model called`).toBeGreaterThanOrEqual(1);
          expect(
            (callsAfter.get(k) ?? 0) - (callsBefore.get(k) ?? 0),
            `${k}: model calls by the recovery workers`,
          ).toBeLessThanOrEqual(1);
        }
        for (const s of [0, 1, 2]) {
          const k = `${id} ${s}`;
          expect(effectsBefore.get(k) ?? 0, `${k}: effects before the kill`).toBeLessThanOrEqual(1);
          const again = (effectsAfter.get(k) ?? 0) - (effectsBefore.get(k) ?? 0);
          expect(again, `${k}: effects by the recovery workers`).toBe(recorded.has(`effect:${id}:${s}`) ? 0 : 1);
        }
      }
    });
  });
}
