/**
 * Exactly-once at the edges a careless redeploy, a cancel or a fork meets:
 * what a resume checks before it claims a pause or re-enters a nested
 * worker, what a runner cancelled under a failing step reports, and what a
 * fork shares with its source (SQLite files; real processes where a crash is
 * needed). The agent is edges-agent.ts.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { Agent, ScriptedModel, tool } from '../../client/index.js';
import { z } from 'zod';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { untilLeaseFree } from '../../examples/agents/refund.js';
import { runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';
import { edgesAgent, effectsOf, modelCallsOf, type EdgesAgentOptions } from './edges-agent.js';

const CHILD = fileURLToPath(new URL('./edges-child.ts', import.meta.url));
const LEASE_MS = 1_000;
const PAUSED_PATH = 'supervisor:desk/agent:payer/tool:pay';

const tmp = scratchDir('waymark-edges-reentry-');
afterAll(() => tmp.cleanup());
let n = 0;

describe('edges: re-entry checks, cancel under a failing step, fork (sqlite)', () => {
  let dir: string;
  let path: string;
  let store: SqliteCheckpointer;
  beforeEach(async () => {
    dir = tmp.dir;
    path = tmp.file(`r${++n}.db`);
    store = new SqliteCheckpointer({ path });
    await store.setup();
  });
  afterEach(() => store.close());

  const desk = (o: Partial<EdgesAgentOptions> = {}) => edgesAgent({ store, dir, leaseMs: LEASE_MS, ...o }).desk;
  const rowsOf = async (id: string) => (await store.list(id)).map((r) => `${r.seq} ${r.nodeId} ${r.step} ${r.status}`);
  /** Every distinct answer the run's rows hold to calls of the tool `name`. */
  const answersTo = async (id: string, name: string) => {
    const seen = new Set<string>();
    for (const row of await store.list(id)) {
      const { messages } = (await store.readState(row)) as {
        messages?: { role: string; name?: string; content: string }[];
      };
      for (const m of messages ?? []) if (m.role === 'tool' && m.name === name) seen.add(m.content);
    }
    return [...seen];
  };

  it('defect guard: a supervisor redeployed with its delegation tool renamed refuses the nested pause (TOOL_NOT_FOUND) before claiming it; the old one still answers it', async () => {
    const id = `renamed-${n}`;
    const p = await desk().run('go', { executionId: id });
    expect(p).toMatchObject({ status: 'paused', pendingInterrupt: { agentPath: PAUSED_PATH } });
    const before = await rowsOf(id);
    const renamed = desk({ delegateAs: 'billing' });
    await expect(renamed.resume(id, { approved: true })).rejects.toMatchObject({
      code: 'TOOL_NOT_FOUND',
      details: { tool: 'payments' },
    });
    // nothing claimed, nothing written
    expect(await store.getPendingInterrupt(id)).toMatchObject({ checkpointId: p.pendingInterrupt!.checkpointId });
    expect(await rowsOf(id)).toEqual(before);
    expect(await store.getLease(id).then((l) => l?.live ?? false)).toBe(false);
    const r = await desk().resume(id, { approved: true, metadata: { who: 'alice' } });
    expect(r).toMatchObject({ status: 'paused', pendingInterrupt: { reason: 'shipping' } });
  });

  it('defect guard: a run killed inside the nested worker’s tool, resumed by a worker redeployed without that tool, is refused (TOOL_NOT_FOUND) instead of telling the model the tool does not exist', async () => {
    const id = `dropped-${n}`;
    const spec = `sqlite:${path}`;
    const a = await runTs(CHILD, ['run', spec, dir, String(LEASE_MS), id]);
    expect(a.code, a.stderr).toBe(0);
    // answer the first pause; killed as the worker's tool starts again with the answer (hit 1: the supervisor's delegation)
    const b = await runTs(CHILD, ['answer', spec, dir, String(LEASE_MS), id, 'runtime.beforeTool', '2']);
    expect(b.signal, b.stderr).toBe('SIGKILL');
    expect(await store.latest(id)).toMatchObject({ step: 'tool_call', agentPath: PAUSED_PATH });
    await untilLeaseFree(store, id);
    const before = await rowsOf(id);
    await expect(desk({ payerWithoutPay: true }).resume(id)).rejects.toMatchObject({
      code: 'TOOL_NOT_FOUND',
      details: { tool: 'pay' },
    });
    expect(await rowsOf(id)).toEqual(before);
    // the agent that has the tool carries on: the answer was kept, the run pauses at the second approval, one charge
    const r = await desk().resume(id);
    expect(r).toMatchObject({ status: 'paused', pendingInterrupt: { reason: 'shipping' } });
    expect(effectsOf(dir, id).map((e) => e.kind)).toEqual(['charge']);
  });

  it("defect guard: killed right after the supervisor answered a tool its model made up (runtime.afterTool), the run resumes in a new process with the same 'does not exist' answer and completes (it was refused TOOL_NOT_FOUND on every resume)", async () => {
    const id = `stray-${n}`;
    const spec = `sqlite:${path}`;
    const env = { STRAY_CALL: 'desk:lookup' };
    const a = await runTs(CHILD, ['run', spec, dir, String(LEASE_MS), id, 'runtime.afterTool', '1'], env);
    expect(a.signal, a.stderr).toBe('SIGKILL');
    expect(await store.latest(id)).toMatchObject({
      step: 'tool_call',
      nodeId: 'turn:0/tool:lookup',
      agentPath: 'supervisor:desk/tool:lookup',
    });
    await untilLeaseFree(store, id);
    const b = await runTs(CHILD, ['resume', spec, dir, String(LEASE_MS), id], env);
    expect(b.code, b.stderr).toBe(0);
    const answer = "Tool 'lookup' does not exist. Available: payments.";
    expect(JSON.parse(b.stdout)).toMatchObject({ result: { status: 'completed', output: `desk: ${answer}` } });
    // the answer a pass that was not cut off gives (that run goes on to delegate, and pauses in the worker)
    const control = `stray-control-${n}`;
    expect(await desk({ strayCall: { by: 'desk', name: 'lookup' } }).run('go', { executionId: control })).toMatchObject(
      { status: 'paused' },
    );
    expect(await answersTo(control, 'lookup')).toEqual([answer]);
    expect(await answersTo(id, 'lookup')).toEqual([answer]);
    // the delegation after it was cut off: answered "not run" on re-entry, never started; one model call per turn
    expect(modelCallsOf(dir, id).map((l) => `${l.kind} ${l.what}`)).toEqual(['desk 0', 'desk 1']);
    expect(effectsOf(dir, id)).toEqual([]);
  });

  it("defect guard: killed right after a nested worker answered a made-up tool named with '/' (runtime.afterTool), recoverRuns in a new process brings the run back with the same answer (it reported failed TOOL_NOT_FOUND on every pass)", async () => {
    const id = `stray-nested-${n}`;
    const spec = `sqlite:${path}`;
    const env = { STRAY_CALL: 'payer:functions/lookup' };
    const a = await runTs(CHILD, ['run', spec, dir, String(LEASE_MS), id, 'runtime.afterTool', '1'], env);
    expect(a.signal, a.stderr).toBe('SIGKILL');
    const cutOff = (await store.latest(id))!;
    await untilLeaseFree(store, id);
    const b = await runTs(CHILD, ['recover', spec, dir, String(LEASE_MS), id], env);
    expect(b.code, b.stderr).toBe(0);
    expect(JSON.parse(b.stdout).report).toMatchObject({
      recovered: 1,
      failed: 0,
      runs: [{ executionId: id, outcome: 'recovered', status: 'completed' }],
    });
    // the name is encoded in the path: a '/' would split it (and make the row another level's)
    expect(cutOff).toMatchObject({
      step: 'tool_call',
      agentPath: 'supervisor:desk/agent:payer/tool:functions%2Flookup',
    });
    const answer = "Tool 'functions/lookup' does not exist. Available: pay.";
    expect(await store.latest(id)).toMatchObject({
      step: 'run_end',
      status: 'completed',
      nodeOutput: `desk: payer: ${answer}`,
    });
    const control = `stray-nested-control-${n}`;
    await desk({ strayCall: { by: 'payer', name: 'functions/lookup' } }).run('go', { executionId: control });
    expect(await answersTo(control, 'functions/lookup')).toEqual([answer]);
    expect(await answersTo(id, 'functions/lookup')).toEqual([answer]);
    expect(effectsOf(dir, id)).toEqual([]);
  });

  it('defect guard: a run killed right after its worker’s tool ran (runtime.afterTool), resumed by a worker redeployed without that tool, is still refused (TOOL_NOT_FOUND): its row was written for a tool the worker had', async () => {
    const id = `dropped-after-${n}`;
    const spec = `sqlite:${path}`;
    expect((await runTs(CHILD, ['run', spec, dir, String(LEASE_MS), id])).code).toBe(0);
    expect((await runTs(CHILD, ['answer', spec, dir, String(LEASE_MS), id])).code).toBe(0);
    // the second answer: the tool charges (already), ships, returns, and the process is killed before its result is written
    const c = await runTs(CHILD, ['answer', spec, dir, String(LEASE_MS), id, 'runtime.afterTool', '1']);
    expect(c.signal, c.stderr).toBe('SIGKILL');
    expect(await store.latest(id)).toMatchObject({ step: 'tool_call', agentPath: PAUSED_PATH });
    expect(effectsOf(dir, id).map((e) => e.kind)).toEqual(['charge', 'ship']);
    await untilLeaseFree(store, id);
    const before = await rowsOf(id);
    await expect(desk({ payerWithoutPay: true }).resume(id)).rejects.toMatchObject({
      code: 'TOOL_NOT_FOUND',
      details: { tool: 'pay' },
    });
    expect(await rowsOf(id)).toEqual(before);
    const r = await desk().resume(id);
    expect(r.status).toBe('completed');
    expect(effectsOf(dir, id).map((e) => e.kind)).toEqual(['charge', 'ship']);
  });

  it('defect guard: a model call that fails after the run was cancelled ends the runner with RUN_CANCELLED, not the model error, and writes nothing after the marker', async () => {
    let called!: () => void;
    const inModel = new Promise<void>((r) => (called = r));
    let fail!: () => void;
    const failing = new Promise<void>((r) => (fail = r));
    const model = new ScriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ name: 'noop', arguments: {} }] } : { content: 'never' },
    );
    const generate = model.generate.bind(model);
    model.generate = async (request) => {
      if (request.messages.some((m) => m.role === 'tool')) {
        called();
        await failing;
        throw new Error('provider returned 503');
      }
      return generate(request);
    };
    const noop = tool({ name: 'noop', description: '', parameters: z.object({}), execute: () => 'ok' });
    const agent = new Agent({ name: 'slow', model, tools: [noop], checkpointer: store, leaseMs: 60_000 });
    const id = `cancel-fail-${n}`;
    const run = agent.run('go', { executionId: id });
    await inModel;
    const c = await store.cancel(id, { reason: 'stop it' });
    fail();
    await expect(run).rejects.toMatchObject({ code: 'RUN_CANCELLED' });
    expect((await store.latest(id))?.id).toBe(c.checkpoint.id);
  });

  it('a fork from the supervisor while its worker is paused at the second approval re-runs the worker from its start: its pause is its own, its charge its own; the source keeps its one charge', async () => {
    const id = `src-${n}`;
    const p1 = await desk().run('go', { executionId: id });
    const p2 = await desk().resume(
      id,
      { approved: true, metadata: { who: 'alice' } },
      { checkpointId: p1.pendingInterrupt!.checkpointId },
    );
    expect(p2).toMatchObject({ status: 'paused', pendingInterrupt: { reason: 'shipping' } });
    const before = await store.list(id);
    // the newest row of the supervisor's own: its delegation (the worker's rows are not a supervisor's step)
    await expect(desk().fork(id, { checkpointId: p2.pendingInterrupt!.checkpointId })).rejects.toMatchObject({
      code: 'CHECKPOINT_ERROR',
    });
    const f = await desk().fork(id, { executionId: `fork-${n}` });
    expect(f).toMatchObject({
      status: 'paused',
      executionId: `fork-${n}`,
      pendingInterrupt: { reason: 'manager', agentPath: PAUSED_PATH },
    });
    expect(effectsOf(dir, f.executionId)).toEqual([]);
    const fd = await desk().resume(f.executionId, { approved: true, metadata: { who: 'bob' } });
    expect(fd).toMatchObject({
      status: 'paused',
      pendingInterrupt: { reason: 'shipping', context: { approver: 'bob' } },
    });
    expect(await store.list(id)).toEqual(before);
    expect(await store.getPendingInterrupt(id)).toMatchObject({ checkpointId: p2.pendingInterrupt!.checkpointId });
    const done = await desk().resume(id, { approved: true, metadata: { who: 'carol' } });
    expect(done.status).toBe('completed');
    expect(effectsOf(dir, id).map((e) => e.kind)).toEqual(['charge', 'ship']);
    expect(effectsOf(dir, f.executionId).map((e) => e.kind)).toEqual(['charge']);
  });

  it('two forks into one new id at once: one writes the fork, the other is refused having written nothing', async () => {
    const id = `src2-${n}`;
    await desk().run('go', { executionId: id });
    const target = `same-${n}`;
    const results = await Promise.allSettled([
      desk().fork(id, { executionId: target }),
      desk().fork(id, { executionId: target }),
    ]);
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(1);
    expect(refused.map((r) => r.reason.code)).toEqual([expect.stringMatching(/^(EXECUTION_EXISTS|RUN_IN_PROGRESS)$/)]);
    const rows = await store.list(target);
    expect(rows.filter((r) => r.step === 'fork_origin')).toHaveLength(1);
    expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i));
    // a fork into the source's own id, or any id with rows, is refused
    await expect(desk().fork(id, { executionId: id })).rejects.toMatchObject({ code: 'EXECUTION_EXISTS' });
    await expect(desk().fork(id, { executionId: target })).rejects.toMatchObject({ code: 'EXECUTION_EXISTS' });
  });
});
