/**
 * recoverRuns in one process on a SQLite file: which runs a pass picks, what
 * it reports, and watch mode until the signal aborts. (Real killed processes
 * and two workers at once: lease-suite.ts and the recovery soak.)
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent, recoverRuns, ScriptedModel, type RecoveryReport } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-recover-');
afterAll(() => tmp.cleanup());
let n = 0;

describe('recoverRuns', () => {
  let store: SqliteCheckpointer;
  beforeEach(() => {
    store = new SqliteCheckpointer({ path: tmp.file(`r${++n}.db`) });
  });
  afterEach(() => store.close());

  const agent = (name: string) =>
    new Agent({
      name,
      model: new ScriptedModel(() => ({ content: `${name} done` })),
      checkpointer: store,
      leaseMs: 60_000,
    });
  /** A run of `name` whose process died before its model answered (its newest row: the turn's llm_call). */
  const crashed = (name: string, executionId: string) =>
    store.put({
      executionId,
      nodeId: 'turn:0',
      turn: 0,
      step: 'llm_call',
      status: 'completed',
      agentPath: `agent:${name}`,
      state: { messages: [{ role: 'user', content: 'go' }], turn: 0 },
    });
  const until = async (cond: () => boolean | Promise<boolean>) => {
    const deadline = Date.now() + 60_000;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error('condition not met in 60 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('one pass: resumes free and expired runs of its agents, reports a live lease as held, leaves other agents, paused and finished runs alone', async () => {
    const bot = agent('bot');
    await crashed('bot', 'a-free');
    await crashed('bot', 'b-expired');
    const gone = await store.acquireLease('b-expired', { holder: 'dead#1', ttlMs: 1 });
    await crashed('bot', 'c-live');
    await store.acquireLease('c-live', { holder: 'alive#1', ttlMs: 600_000 });
    await crashed('other', 'd-other');
    await store.recordInterrupt(
      {
        executionId: 'e-paused',
        nodeId: 'turn:0/tool:x',
        turn: 0,
        step: 'hitl_pause',
        status: 'interrupted',
        agentPath: 'agent:bot/tool:x',
        state: {},
      },
      { reason: 'ask', context: null },
    );
    expect((await bot.run('go', { executionId: 'f-done' })).status).toBe('completed');
    await until(async () => !(await store.getLease('b-expired'))?.live);

    const report = await recoverRuns({ agents: [bot], store });
    const by = Object.fromEntries(report.runs.map((r) => [r.executionId, r]));
    expect(Object.keys(by).sort()).toEqual(['a-free', 'b-expired', 'c-live']);
    expect(by['a-free']).toMatchObject({ outcome: 'recovered', status: 'completed', agent: 'agent:bot' });
    expect(by['b-expired']).toMatchObject({ outcome: 'recovered', status: 'completed' });
    expect(by['c-live']).toMatchObject({
      outcome: 'held',
      reason: 'lease live',
      holder: 'alive#1',
      expiresAt: expect.any(String),
    });
    expect(report).toMatchObject({ recovered: 2, held: 1, failed: 0, passes: 1 });
    expect((await store.getLease('b-expired'))?.epoch).toBe(gone.epoch + 1);
    expect((await store.latest('d-other'))?.step).toBe('llm_call');
    expect(await store.getPendingInterrupt('e-paused')).not.toBeNull();
    expect((await store.list('f-done')).filter((r) => r.step === 'run_end')).toHaveLength(1);
  });

  it('says which stale runs it skipped: a free or expired run of an agent it was not given, named with that agent (not a live one, nor a LangGraph thread)', async () => {
    const bot = agent('bot');
    await crashed('bot', 'a-mine');
    await crashed('billing', 'b-free');
    const gone = await store.acquireLease('c-expired', { holder: 'dead#1', ttlMs: 1 });
    await crashed('billing', 'c-expired');
    await crashed('billing', 'd-live');
    await store.acquireLease('d-live', { holder: 'alive#1', ttlMs: 600_000 });
    // a LangGraph thread: no end marker by design, held only inside saver.exclusive
    await store.put({
      executionId: 'e-thread',
      nodeId: 'langgraph:loop',
      turn: 1,
      step: 'graph_step',
      status: 'completed',
      agentPath: 'langgraph',
      nodeInput: { thread_id: 'e-thread', checkpoint_ns: '', checkpoint_id: 'c1', parent_checkpoint_id: null },
      state: {},
    });
    await until(async () => !(await store.getLease('c-expired'))?.live);

    const passes: RecoveryReport[] = [];
    const report = await recoverRuns({ agents: [bot], store, onPass: (r) => passes.push(r) });
    expect(report.runs.map((r) => [r.executionId, r.outcome])).toEqual([['a-mine', 'recovered']]);
    expect(report.skipped).toEqual([
      { executionId: 'b-free', agent: 'agent:billing', reason: 'agent not given', leaseExpiredAt: null },
      {
        executionId: 'c-expired',
        agent: 'agent:billing',
        reason: 'agent not given',
        leaseExpiredAt: gone.expiresAt,
      },
    ]);
    expect(passes[0].skipped).toEqual(report.skipped);
    // left as they were
    for (const id of ['b-free', 'c-expired']) expect((await store.latest(id))?.step).toBe('llm_call');
  });

  it('a run that cannot be resumed (its tool is gone) is reported failed with the code, and the pass goes on', async () => {
    const bot = agent('bot');
    await store.put({
      executionId: 'a-bad',
      nodeId: 'turn:0/tool:gone',
      turn: 0,
      step: 'tool_call',
      status: 'completed',
      agentPath: 'agent:bot/tool:gone',
      state: { messages: [] },
    });
    await crashed('bot', 'b-good');
    const report = await recoverRuns({ agents: [bot], store, concurrency: 1 });
    expect(report.runs.map((r) => [r.executionId, r.outcome])).toEqual([
      ['a-bad', 'failed'],
      ['b-good', 'recovered'],
    ]);
    expect(report.runs[0]).toMatchObject({
      error: { code: 'TOOL_NOT_FOUND', message: expect.stringContaining("tool 'gone'") },
    });
    expect((await store.getLease('a-bad'))?.live).toBe(false);
  });

  it('a run deleted while its recovery runs, or between the listing and its resume, is reported held (deleted), not failed', async () => {
    let answer!: () => void;
    const answered = new Promise<void>((r) => (answer = r));
    let called!: () => void;
    const modelCalled = new Promise<void>((r) => (called = r));
    const slow = new Agent({
      name: 'bot',
      model: {
        name: 'slow',
        async generate() {
          called();
          await answered;
          return { content: 'done', toolCalls: [] };
        },
      },
      checkpointer: store,
      leaseMs: 60_000,
    });
    await crashed('bot', 'a-deleted-midway');
    const recovering = recoverRuns({ agents: [slow], store, concurrency: 1 });
    await modelCalled;
    await store.deleteExecution('a-deleted-midway');
    answer();
    const report = await recovering;
    expect(report.runs).toEqual([
      expect.objectContaining({ executionId: 'a-deleted-midway', outcome: 'held', reason: 'deleted' }),
    ]);
    expect(report).toMatchObject({ recovered: 0, held: 1, failed: 0 });
    expect(await store.latest('a-deleted-midway')).toBeNull();

    // listed, then deleted before its resume: the resume finds no run
    const bot = agent('bot');
    await crashed('bot', 'b-deleted-early');
    const resume = bot.resume.bind(bot);
    bot.resume = async (...args: Parameters<typeof bot.resume>) => {
      await store.deleteExecution('b-deleted-early');
      return resume(...args);
    };
    const early = await recoverRuns({ agents: [bot], store });
    expect(early.runs).toEqual([
      expect.objectContaining({ executionId: 'b-deleted-early', outcome: 'held', reason: 'deleted' }),
    ]);
  });

  it('watch: passes repeat until the signal aborts, picking up runs that crash meanwhile', async () => {
    const bot = agent('bot');
    await crashed('bot', 'first');
    const stop = new AbortController();
    const passes: RecoveryReport[] = [];
    const watching = recoverRuns({
      agents: [bot],
      store,
      watch: true,
      intervalMs: 20,
      signal: stop.signal,
      onPass: (r) => passes.push(r),
    });
    await until(() => passes.some((p) => p.runs.some((r) => r.executionId === 'first')));
    await crashed('bot', 'second');
    await until(() => passes.some((p) => p.runs.some((r) => r.executionId === 'second')));
    stop.abort();
    const total = await watching;
    expect(total.recovered).toBe(2);
    expect(total.passes).toBe(passes.length);
    expect(total.passes).toBeGreaterThanOrEqual(2);
    for (const id of ['first', 'second'])
      expect(await store.latest(id)).toMatchObject({ step: 'run_end', status: 'completed' });
  });

  it('bad options are refused before anything runs', async () => {
    await crashed('bot', 'x');
    await expect(recoverRuns({ agents: [agent('bot')], store, concurrency: 0 })).rejects.toThrow(
      /concurrency: must be an integer, at least 1 \(got 0\)/,
    );
    await expect(recoverRuns({ agents: [agent('bot'), agent('bot')], store })).rejects.toThrow(
      /two agents with the path agent:bot/,
    );
    expect((await store.latest('x'))?.step).toBe('llm_call');
  });
});
