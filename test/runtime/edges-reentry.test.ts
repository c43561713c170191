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
import { edgesAgent, effectsOf, type EdgesAgentOptions } from './edges-agent.js';

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

  it('defect guard: a supervisor redeployed with its delegation tool renamed refuses the nested pause (TOOL_NOT_FOUND) before claiming it; the old one still answers it', async () => {
    const id = `renamed-${n}`;
    const p = await desk().run('go', { executionId: id });
    expect(p).toMatchObject({ status: 'paused', pendingInterrupt: { agentPath: PAUSED_PATH } });
    const before = await rowsOf(id);
    const renamed = desk({ delegateAs: 'billing' });
    await expect(renamed.resume(id, { approved: true })).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND', details: { tool: 'payments' } });
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
    await expect(desk({ payerWithoutPay: true }).resume(id)).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND', details: { tool: 'pay' } });
    expect(await rowsOf(id)).toEqual(before);
    // the agent that has the tool carries on: the answer was kept, the run pauses at the second approval, one charge
    const r = await desk().resume(id);
    expect(r).toMatchObject({ status: 'paused', pendingInterrupt: { reason: 'shipping' } });
    expect(effectsOf(dir, id).map((e) => e.kind)).toEqual(['charge']);
  });

  it('defect guard: a model call that fails after the run was cancelled ends the runner with RUN_CANCELLED, not the model error, and writes nothing after the marker', async () => {
    let called!: () => void;
    const inModel = new Promise<void>((r) => (called = r));
    let fail!: () => void;
    const failing = new Promise<void>((r) => (fail = r));
    const model = new ScriptedModel(({ turn }) => (turn === 0 ? { toolCalls: [{ name: 'noop', arguments: {} }] } : { content: 'never' }));
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
    const p2 = await desk().resume(id, { approved: true, metadata: { who: 'alice' } }, { checkpointId: p1.pendingInterrupt!.checkpointId });
    expect(p2).toMatchObject({ status: 'paused', pendingInterrupt: { reason: 'shipping' } });
    const before = await store.list(id);
    // the newest row of the supervisor's own: its delegation (the worker's rows are not a supervisor's step)
    await expect(desk().fork(id, { checkpointId: p2.pendingInterrupt!.checkpointId })).rejects.toMatchObject({ code: 'CHECKPOINT_ERROR' });
    const f = await desk().fork(id, { executionId: `fork-${n}` });
    expect(f).toMatchObject({ status: 'paused', executionId: `fork-${n}`, pendingInterrupt: { reason: 'manager', agentPath: PAUSED_PATH } });
    expect(effectsOf(dir, f.executionId)).toEqual([]);
    const fd = await desk().resume(f.executionId, { approved: true, metadata: { who: 'bob' } });
    expect(fd).toMatchObject({ status: 'paused', pendingInterrupt: { reason: 'shipping', context: { approver: 'bob' } } });
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
    const results = await Promise.allSettled([desk().fork(id, { executionId: target }), desk().fork(id, { executionId: target })]);
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
