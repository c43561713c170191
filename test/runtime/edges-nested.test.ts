/**
 * Exactly-once at the edges of nested pauses, with real processes SIGKILLed
 * at named fault points (SQLite files shared by the processes). The agent
 * (edges-agent.ts): a supervisor delegating to a worker whose tool pauses
 * twice, charging between the pauses and shipping after them; every effect
 * and model call is a line in a file no crash rolls back.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { decide, recoverRuns, serveDecisions } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import type { FaultPoint } from '../../client/faults.js';
import { untilLeaseFree } from '../../examples/agents/refund.js';
import { forkTs, nextMessage, runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';
import { edgesAgent, effectsOf, modelCallsOf } from './edges-agent.js';

const CHILD = fileURLToPath(new URL('./edges-child.ts', import.meta.url));
const LEASE_MS = 1_000;
const PAUSED_PATH = 'supervisor:desk/agent:payer/tool:pay';

const tmp = scratchDir('waymark-edges-');
afterAll(() => tmp.cleanup());
let n = 0;

/** The JSON line a child printed last. */
function outOf(r: { stdout: string; stderr: string }): Record<string, any> {
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`child printed no JSON line; stderr: ${r.stderr}`);
  }
}

describe('edges: a pause inside a nested worker (sqlite, real processes)', () => {
  let dir: string;
  let path: string;
  let spec: string;
  let store: SqliteCheckpointer;
  beforeEach(async () => {
    dir = tmp.dir;
    path = tmp.file(`e${++n}.db`);
    spec = `sqlite:${path}`;
    store = new SqliteCheckpointer({ path });
    await store.setup();
  });
  afterEach(() => store.close());

  const agentHere = () => edgesAgent({ store, dir, leaseMs: LEASE_MS }).desk;
  const child = (mode: string, id: string, point?: FaultPoint, hits = 1, env: Record<string, string> = {}) =>
    runTs(CHILD, [mode, spec, dir, String(LEASE_MS), id, ...(point ? [point, String(hits)] : [])], env);
  const answerEnv = (who: string, checkpointId?: string) => ({
    ANSWER: JSON.stringify({ approved: true, metadata: { who } }),
    ...(checkpointId ? { CHECKPOINT_ID: checkpointId } : {}),
  });

  /** Every run's invariants: one completed marker at the end, seq without gaps, each effect once, each model turn once. */
  async function expectFinishedOnce(id: string, reissued: string[] = []) {
    const rows = await store.list(id);
    expect(rows.map((r) => r.seq)).toEqual(rows.map((_, i) => i));
    expect(rows.filter((r) => r.step === 'run_end')).toHaveLength(1);
    expect(rows.at(-1)).toMatchObject({ step: 'run_end', status: 'completed' });
    expect(await store.getPendingInterrupt(id)).toBeNull();
    expect(effectsOf(dir, id).map((e) => e.kind)).toEqual(['charge', 'ship']);
    const turns = modelCallsOf(dir, id).map((c) => `${c.kind}:${c.what}`);
    expect([...turns].sort()).toEqual(['desk:0', 'desk:1', 'payer:0', 'payer:1', ...reissued].sort());
    expect((await store.getLease(id))?.live ?? false).toBe(false);
  }

  /** A decision worker over the store for a few scans (it ends early on an outcome): what it reported. */
  async function serveBriefly(): Promise<string[]> {
    const stop = new AbortController();
    const outcomes: string[] = [];
    const t = setTimeout(() => stop.abort(), 500);
    await serveDecisions({
      agent: agentHere(),
      store,
      signal: stop.signal,
      pollMs: 20,
      onOutcome: (o) => outcomes.push(o.outcome),
    });
    clearTimeout(t);
    return outcomes;
  }

  /** Start the run in a child: it pauses at the worker's first approval. */
  async function startPaused(id: string) {
    const a = outOf(await child('run', id));
    expect(a.result, JSON.stringify(a)).toMatchObject({
      status: 'paused',
      pendingInterrupt: { agentPath: PAUSED_PATH, reason: 'manager' },
    });
    return a.result.pendingInterrupt.checkpointId as string;
  }

  /** Bring a run whose resumer was killed to its next pause or its end: recovery (lease waited out), then the answers still due. */
  async function finish(id: string, answered: { p1: string; p2?: string }) {
    const latest = await store.latest(id);
    if (latest?.status !== 'interrupted' && latest?.step !== 'run_end') {
      await untilLeaseFree(store, id);
      const report = await recoverRuns({ agents: [agentHere()], store });
      expect(report.runs.map((r) => [r.executionId, r.outcome])).toEqual([[id, 'recovered']]);
    }
    // a stale answer to the first pause never answers a later one
    await expect(
      agentHere().resume(id, { approved: true, metadata: { who: 'stale' } }, { checkpointId: answered.p1 }),
    ).rejects.toMatchObject({ code: 'ALREADY_RESUMED' });
    let now = await store.latest(id);
    if (now?.status === 'interrupted') {
      expect(now).toMatchObject({ agentPath: PAUSED_PATH, interruptReason: 'shipping' });
      const r = await agentHere().resume(id, { approved: true, metadata: { who: 'bob' } }, { checkpointId: now.id });
      expect(r.status).toBe('completed');
    }
    now = await store.latest(id);
    if (now?.step !== 'run_end') {
      await untilLeaseFree(store, id);
      const r = await agentHere().resume(id);
      expect(r.status).toBe('completed');
    }
    const end = await store.latest(id);
    expect(end?.nodeOutput).toMatch(/^desk: payer: .*"shipped":true/);
  }

  const FIRST: [FaultPoint, number][] = [
    ['store.claim.afterCommit', 1],
    // hit 1: the supervisor's delegation re-entered; hit 2: the worker's tool re-run with the answer
    ['runtime.beforeTool', 2],
    ['store.idempotency.afterCommit', 1],
    ['store.recordInterrupt.betweenRows', 1],
    ['store.recordInterrupt.afterCommit', 1],
  ];
  for (const [point, hits] of FIRST) {
    it(`answering the first pause, the resumer is SIGKILLed at ${point}#${hits}: the run goes on to the second pause and ends with each effect and model turn once`, async () => {
      const id = `first-${n}`;
      const p1 = await startPaused(id);
      const b = await child('answer', id, point, hits, answerEnv('alice', p1));
      expect(b.signal, b.stderr).toBe('SIGKILL');
      expect(await store.getPendingInterrupt(id).then((p) => p?.checkpointId ?? null)).not.toBe(p1);
      await finish(id, { p1 });
      await expectFinishedOnce(id);
    });
  }

  const SECOND: [FaultPoint, number, string[]?][] = [
    ['store.claim.afterCommit', 1],
    ['store.idempotency.afterCommit', 1],
    // hit 1: the worker's tool returned; hit 2: the supervisor's delegation returned
    ['runtime.afterTool', 1],
    // the worker's last reply is written with the supervisor's next row: a kill before it re-issues that model call (a turn boundary), no effect
    ['runtime.afterTool', 2, ['payer:1']],
    // the worker's final turn: its row is written, the model not yet called
    ['runtime.beforeModel', 1],
    ['runtime.afterRunEnd', 1],
  ];
  for (const [point, hits, reissued] of SECOND) {
    it(`answering the second pause, the resumer is SIGKILLed at ${point}#${hits}: the run ends with each effect and model turn once`, async () => {
      const id = `second-${n}`;
      const p1 = await startPaused(id);
      const b = outOf(await child('answer', id, undefined, 1, answerEnv('alice', p1)));
      expect(b.result).toMatchObject({
        status: 'paused',
        pendingInterrupt: { reason: 'shipping', context: { approver: 'alice' } },
      });
      const p2 = b.result.pendingInterrupt.checkpointId as string;
      const c = await child('answer', id, point, hits, answerEnv('bob', p2));
      expect(c.signal, c.stderr).toBe('SIGKILL');
      await finish(id, { p1, p2 });
      await expectFinishedOnce(id, reissued);
    });
  }

  it('two processes answer the nested pause at once: one claims it, the other is refused (AlreadyResumed, or RunInProgress while the winner holds the run); then the same for the second pause', async () => {
    const id = `race-${n}`;
    await startPaused(id);
    for (const reason of ['manager', 'shipping']) {
      // each names the pause it answers, as an application must: a loser that starts late never answers the next one
      const pending = await store.getPendingInterrupt(id);
      expect(pending?.reason).toBe(reason);
      const env = (i: number) => ({
        WAIT_GO: '1',
        CHECKPOINT_ID: pending!.checkpointId,
        ANSWER: JSON.stringify({ approved: true, metadata: { who: `p${i}` } }),
      });
      const kids = [0, 1].map((i) => forkTs(CHILD, ['answer', spec, dir, String(LEASE_MS), id], env(i)));
      const outs = kids.map((k) => {
        let s = '';
        k.stdout?.on('data', (d) => (s += d));
        return new Promise<Record<string, any>>((resolve) =>
          k.on('exit', () => resolve(outOf({ stdout: s, stderr: '' }))),
        );
      });
      await Promise.all(kids.map((k) => nextMessage(k)));
      for (const k of kids) k.send('go');
      const results = await Promise.all(outs);
      const won = results.filter((r) => r.result);
      expect(won, JSON.stringify(results)).toHaveLength(1);
      expect(
        results.filter((r) => r.error?.code === 'ALREADY_RESUMED' || r.error?.code === 'RUN_IN_PROGRESS'),
        JSON.stringify(results),
      ).toHaveLength(1);
      expect(won[0].result.status).toBe(reason === 'manager' ? 'paused' : 'completed');
    }
    await expectFinishedOnce(id);
  });

  it('recovery never takes up a paused nested run; one killed between the pause rows is brought back to the same pause, charging nothing', async () => {
    const paused = `rec-paused-${n}`;
    await startPaused(paused);
    const torn = `rec-torn-${n}`;
    const t = await child('run', torn, 'store.recordInterrupt.betweenRows');
    expect(t.signal).toBe('SIGKILL');
    expect(await store.latest(torn)).toMatchObject({ step: 'tool_call', agentPath: PAUSED_PATH });
    await untilLeaseFree(store, torn);
    const report = await recoverRuns({ agents: [agentHere()], store });
    expect(report.runs.map((r) => [r.executionId, r.outcome, r.outcome === 'recovered' ? r.status : null])).toEqual([
      [torn, 'recovered', 'paused'],
    ]);
    for (const id of [paused, torn])
      expect(await store.getPendingInterrupt(id)).toMatchObject({ agentPath: PAUSED_PATH, reason: 'manager' });
    expect([...effectsOf(dir, paused), ...effectsOf(dir, torn)]).toEqual([]);
    // a second pass finds nothing to do
    expect((await recoverRuns({ agents: [agentHere()], store })).runs).toEqual([]);
  });

  it('a decision for the first pause, recorded before code answered it, is superseded and never answers the second pause', async () => {
    const id = `dec-${n}`;
    const p1 = await startPaused(id);
    await decide(store, id, { approved: true, decidedBy: 'carol', metadata: { who: 'carol' } });
    const r = await agentHere().resume(id, { approved: true, metadata: { who: 'alice' } }, { checkpointId: p1 });
    expect(r).toMatchObject({
      status: 'paused',
      pendingInterrupt: { reason: 'shipping', context: { approver: 'alice' } },
    });
    expect(await store.getDecision(id, p1)).toMatchObject({ state: 'superseded' });
    expect(await serveBriefly()).toEqual([]);
    expect(await store.getPendingInterrupt(id)).toMatchObject({ reason: 'shipping' });
    expect(effectsOf(dir, id).map((e) => e.kind)).toEqual(['charge']);
  });

  it('the decision worker SIGKILLed right after its claim committed: no worker applies the decision again, recovery finishes the tool once', async () => {
    const id = `serve-${n}`;
    await startPaused(id);
    const d = await decide(store, id, { approved: true, decidedBy: 'carol', metadata: { who: 'carol' } });
    const s = await child('serve', id, 'store.claim.afterCommit');
    expect(s.signal, s.stderr).toBe('SIGKILL');
    expect(await store.getDecision(id, d.checkpointId)).toMatchObject({ state: 'applied' });
    // a second decision worker finds nothing pending
    expect((await store.listDecisions({ state: 'pending' })).items).toEqual([]);
    await untilLeaseFree(store, id);
    const report = await recoverRuns({ agents: [agentHere()], store });
    expect(report.runs.map((r) => [r.outcome, r.outcome === 'recovered' ? r.status : null])).toEqual([
      ['recovered', 'paused'],
    ]);
    expect(await store.getPendingInterrupt(id)).toMatchObject({ reason: 'shipping', context: { approver: 'carol' } });
    expect(effectsOf(dir, id).map((e) => e.kind)).toEqual(['charge']);
    const p2 = (await store.getPendingInterrupt(id))!.checkpointId;
    await finish(id, { p1: d.checkpointId, p2 });
    await expectFinishedOnce(id);
  });

  it('a cancelled nested pause: an answer, a decision and recovery all leave it alone; nothing is charged', async () => {
    const id = `cancel-${n}`;
    const p1 = await startPaused(id);
    await decide(store, id, { approved: true, decidedBy: 'carol' });
    await store.cancel(id, { reason: 'customer withdrew' });
    const a = outOf(await child('answer', id, undefined, 1, answerEnv('alice', p1)));
    expect(a.error?.code).toBe('RUN_CANCELLED');
    await expect(agentHere().resume(id)).rejects.toMatchObject({ code: 'RUN_CANCELLED' });
    expect((await recoverRuns({ agents: [agentHere()], store })).runs).toEqual([]);
    expect(await store.getDecision(id, p1)).toMatchObject({ state: 'superseded' });
    expect(await serveBriefly()).toEqual([]);
    expect(effectsOf(dir, id)).toEqual([]);
    expect((await store.list(id)).filter((r) => r.step === 'run_end').map((r) => r.status)).toEqual(['cancelled']);
  });
});
