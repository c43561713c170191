/**
 * Issue 16, the application side: a decision recorded in a store is applied
 * by `serveDecisions` through the ordinary claim, exactly once, on SQLite and
 * Postgres. Real stores, real child processes for the race; no plane here
 * (test/decisions/plane.test.ts covers the feed and the plane claim).
 */
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  uuidv7,
  serveDecisions,
  type Checkpointer,
  type Decision,
  type DecisionOutcome,
  type OutboxEvent,
} from '../../client/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';
import { deployAgent } from '../runtime/stale-resumer-agent.js';
import { until } from '../helpers/until.js';

const CHILD = fileURLToPath(new URL('./worker-child.ts', import.meta.url));
const tmp = scratchDir('waymark-decisions-');
afterAll(() => tmp.cleanup());

let n = 0;
const exec = () => `decide-${Date.now().toString(36)}-${++n}`;

function decision(executionId: string, checkpointId: string, over: Partial<Decision> = {}): Decision {
  return {
    decisionId: uuidv7(),
    executionId,
    checkpointId,
    approved: true,
    metadata: { comment: 'fine' },
    decidedBy: 'manager',
    source: 'local',
    decidedAt: new Date().toISOString(),
    ...over,
  };
}

async function events(store: Checkpointer, kind: OutboxEvent['kind']): Promise<OutboxEvent[]> {
  return (await store.fetchUnsynced({ limit: 10_000, maxBytes: Number.MAX_SAFE_INTEGER }))
    .filter((e) => e.kind === kind)
    .map((e) => e.event!);
}

/** Serve until `until` says enough outcomes came (or 20 s passed), then stop; the outcomes in order. */
async function serveUntil(
  o: Omit<Parameters<typeof serveDecisions>[0], 'signal' | 'onOutcome'>,
  until: (seen: DecisionOutcome[]) => boolean,
): Promise<DecisionOutcome[]> {
  const seen: DecisionOutcome[] = [];
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 20_000);
  const done = serveDecisions({
    ...o,
    signal: stop.signal,
    pollMs: 50,
    onOutcome: (x) => {
      seen.push(x);
      if (until(seen)) stop.abort();
    },
  });
  await done;
  clearTimeout(timer);
  return seen;
}

/** `store` as a worker sees it, counting the worker's scans (a pass starts by listing the first page of pending decisions). */
function countingScans(store: Checkpointer): { store: Checkpointer; scans(): number } {
  let scans = 0;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'listDecisions')
        return (q: Parameters<Checkpointer['listDecisions']>[0]) => {
          if (!q?.cursor) scans++;
          return target.listDecisions(q);
        };
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { store: wrapped, scans: () => scans };
}

interface Backend {
  name: string;
  open(): Promise<{ store: Checkpointer; spec: string; close(): Promise<void> }>;
}

function workerSuite(b: Backend): void {
  describe(`decisions: ${b.name}`, () => {
    let store: Checkpointer;
    let spec: string;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, spec, close } = await b.open());
    });
    afterAll(async () => close?.());

    it('resume with checkpointId answers only that pause: an older one is AlreadyResumed naming the open pause, nothing claimed', async () => {
      const ledger = new Ledger(tmp.file(`deploy-${b.name}.jsonl`));
      const agent = deployAgent(store, ledger);
      const id = exec();
      const p1 = (await agent.run('ship it', { executionId: id })).pendingInterrupt!;
      const r = await agent.resume(id, { approved: true }, { checkpointId: p1.checkpointId });
      const p2 = r.pendingInterrupt!;
      expect(p2.checkpointId).not.toBe(p1.checkpointId);
      const rows = await store.list(id);
      let err: { code?: string; message?: string; details?: Record<string, unknown> } | undefined;
      await agent.resume(id, { approved: false }, { checkpointId: p1.checkpointId }).catch((e) => (err = e));
      expect(err?.code).toBe('ALREADY_RESUMED');
      expect(err?.message).toContain(p1.checkpointId);
      expect(err?.message).toContain(p2.checkpointId);
      expect(err?.details).toMatchObject({
        executionId: id,
        checkpointId: p1.checkpointId,
        openCheckpointId: p2.checkpointId,
      });
      expect(await store.list(id)).toEqual(rows);
      expect(await store.getPendingInterrupt(id)).toEqual(p2);
      // the open pause, with a decision: applied, and recorded on the claim
      const d = decision(id, p2.checkpointId, { approved: false });
      await store.recordDecision(d);
      expect(
        (await agent.resume(id, { approved: false }, { checkpointId: p2.checkpointId, decisionId: d.decisionId }))
          .status,
      ).toBe('completed');
      expect(await store.getDecision(id, p2.checkpointId)).toMatchObject({
        state: 'applied',
        appliedBy: store.writerId,
      });
      expect(ledger.entries().map((e) => e.order)).toEqual([
        'deploy:prod:approved=true',
        'drop:production:approved=false',
      ]);
      let bad: { code?: string } | undefined;
      await agent.resume(id, { approved: true }, { decisionId: 'not-a-uuid' }).catch((e) => (bad = e));
      expect(bad?.code).toBe('INVALID_DECISION');
    });

    it('a decision applies only to its own pause: decisionId without checkpointId is INVALID_OPTIONS; a decision for another pause is INVALID_DECISION; nothing claimed', async () => {
      const ledger = new Ledger(tmp.file(`b9-${b.name}.jsonl`));
      const agent = deployAgent(store, ledger);
      const id = exec();
      const p1 = (await agent.run('ship it', { executionId: id })).pendingInterrupt!;
      const d1 = decision(id, p1.checkpointId);
      await store.recordDecision(d1);
      // code answers p1 meanwhile; the run pauses again at p2, which nobody decided
      const p2 = (await agent.resume(id, { approved: true }, { checkpointId: p1.checkpointId })).pendingInterrupt!;
      const rows = await store.list(id);
      let err: { code?: string; message?: string; details?: Record<string, unknown> } | undefined;
      await agent.resume(id, { approved: d1.approved }, { decisionId: d1.decisionId }).catch((e) => (err = e));
      expect(err?.code).toBe('INVALID_OPTIONS');
      expect(err?.message).toContain('checkpointId');
      let other: { code?: string; details?: Record<string, unknown> } | undefined;
      await agent
        .resume(id, { approved: d1.approved }, { checkpointId: p2.checkpointId, decisionId: d1.decisionId })
        .catch((e) => (other = e));
      expect(other?.code).toBe('INVALID_DECISION');
      expect(other?.details).toMatchObject({
        decisionId: d1.decisionId,
        decisionCheckpointId: p1.checkpointId,
        checkpointId: p2.checkpointId,
      });
      expect(await store.list(id)).toEqual(rows);
      expect(await store.getPendingInterrupt(id)).toEqual(p2);
      expect(await store.getDecision(id, p1.checkpointId)).toMatchObject({ state: 'superseded' });
      await store.cancel(id);
    });

    it('a worker applies a local decision once: the run completes with one charge, the decision reads applied, the claim event names it', async () => {
      const ledger = new Ledger(tmp.file(`apply-${b.name}.jsonl`));
      const { agent } = refundAgent({ store, ledger });
      const id = exec();
      const pause = (await agent.run(refundRequest('A-1', 5000), { executionId: id })).pendingInterrupt!;
      const d = decision(id, pause.checkpointId);
      expect(await store.recordDecision(d)).toEqual({ recorded: true });
      const seen = await serveUntil({ agent, store }, (s) => s.some((x) => x.decision.decisionId === d.decisionId));
      const mine = seen.filter((x) => x.decision.decisionId === d.decisionId);
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({
        outcome: 'applied',
        status: 'completed',
        decision: { state: 'applied', appliedBy: store.writerId },
      });
      expect(ledger.charges()).toHaveLength(1);
      expect(await store.latest(id)).toMatchObject({ step: 'run_end', status: 'completed' });
      const claimed = (await events(store, 'interrupt_claimed')) as Extract<
        OutboxEvent,
        { kind: 'interrupt_claimed' }
      >[];
      expect(claimed.find((e) => e.executionId === id)?.decisionId).toBe(d.decisionId);
      expect((await events(store, 'decision_recorded')).map((e) => e.id)).toContain(d.decisionId);
    });

    it('a decision whose pause was answered from code meanwhile is reported superseded (and reads superseded); a cancelled run’s too', async () => {
      const ledger = new Ledger(tmp.file(`superseded-${b.name}.jsonl`));
      const { agent } = refundAgent({ store, ledger });
      const answered = exec();
      const cancelled = exec();
      const p1 = (await agent.run(refundRequest('S-1', 5000), { executionId: answered })).pendingInterrupt!;
      const p2 = (await agent.run(refundRequest('S-2', 5000), { executionId: cancelled })).pendingInterrupt!;
      const d1 = decision(answered, p1.checkpointId);
      const d2 = decision(cancelled, p2.checkpointId);
      await store.recordDecision(d1);
      await store.recordDecision(d2);
      // between the worker's listing and its claim: code answers one pause, an operator cancels the other run
      const seen = await serveUntil(
        {
          store,
          agentFor: async (d) => {
            if (d.decisionId === d1.decisionId) await agent.resume(answered, { approved: false });
            if (d.decisionId === d2.decisionId) await store.cancel(cancelled, { reason: 'customer withdrew' });
            return agent;
          },
        },
        (s) => s.filter((x) => [d1.decisionId, d2.decisionId].includes(x.decision.decisionId)).length === 2,
      );
      const byId = new Map(seen.map((x) => [x.decision.decisionId, x]));
      expect(byId.get(d1.decisionId)).toMatchObject({
        outcome: 'superseded',
        code: 'ALREADY_RESUMED',
        claimedBy: store.writerId,
        decision: { state: 'superseded' },
      });
      expect(byId.get(d2.decisionId)).toMatchObject({
        outcome: 'superseded',
        code: 'RUN_CANCELLED',
        decision: { state: 'superseded' },
      });
      expect(ledger.charges()).toHaveLength(0);
      expect((await store.listDecisions({ state: 'superseded' })).items.map((x) => x.decisionId)).toEqual(
        expect.arrayContaining([d1.decisionId, d2.decisionId]),
      );
    });

    it('a decision that cannot be applied fails, stays pending and is tried again after a backoff', async () => {
      const ledger = new Ledger(tmp.file(`failed-${b.name}.jsonl`));
      const { agent } = refundAgent({ store, ledger });
      const { agent: broken } = refundAgent({ store, ledger, withoutRefundTool: true });
      const id = exec();
      const pause = (await agent.run(refundRequest('F-1', 5000), { executionId: id })).pendingInterrupt!;
      const d = decision(id, pause.checkpointId);
      await store.recordDecision(d);
      const seen = await serveUntil(
        { store, agentFor: (x) => (x.decisionId === d.decisionId ? broken : null), retry: { baseMs: 20, capMs: 40 } },
        (s) => s.filter((x) => x.decision.decisionId === d.decisionId).length >= 2,
      );
      const mine = seen.filter((x) => x.decision.decisionId === d.decisionId);
      expect(mine.map((x) => x.outcome)).toEqual(['failed', 'failed']);
      expect(mine.map((x) => (x as { attempts: number }).attempts)).toEqual([1, 2]);
      expect(mine[0]).toMatchObject({ error: { code: 'TOOL_NOT_FOUND' } });
      expect(await store.getDecision(id, pause.checkpointId)).toMatchObject({ state: 'pending' });
      expect(await store.getPendingInterrupt(id)).toEqual(pause);
      // closed, so later tests' workers do not meet it
      await store.cancel(id);
      expect(await store.getDecision(id, pause.checkpointId)).toMatchObject({ state: 'superseded' });
    });

    it('two worker processes on one store race one decision: one applies it, the other reports it applied by the other; one charge', async () => {
      const ledger = new Ledger(tmp.file(`race-${b.name}.jsonl`));
      const { agent } = refundAgent({ store, ledger });
      const id = exec();
      const pause = (await agent.run(refundRequest('R-1', 7000), { executionId: id })).pendingInterrupt!;
      const workers = [forkTs(CHILD, [spec, ledger.path, 'hold']), forkTs(CHILD, [spec, ledger.path, 'hold'])];
      const errs = ['', ''];
      workers.forEach((w, i) => w.stderr?.on('data', (x) => (errs[i] += x)));
      try {
        const held = workers.map((w) => nextMessage<{ type: string; decisionId: string }>(w, (m) => m.type === 'held'));
        const d = decision(id, pause.checkpointId);
        await store.recordDecision(d);
        // both read the decision as pending before either claims
        expect((await Promise.all(held)).map((h) => h.decisionId)).toEqual([d.decisionId, d.decisionId]);
        const outcomes = workers.map((w) =>
          nextMessage<{ type: string; outcome: string; appliedBy?: string; status?: string }>(
            w,
            (m) => m.type === 'outcome',
          ),
        );
        for (const w of workers) w.send({ type: 'go' });
        const got = await Promise.all(outcomes);
        expect(got.map((o) => o.outcome).sort(), errs.join('\n')).toEqual(['applied', 'applied_elsewhere']);
        expect(got.find((o) => o.outcome === 'applied')?.status).toBe('completed');
        expect(got.find((o) => o.outcome === 'applied_elsewhere')?.appliedBy).toBe(store.writerId);
        for (const w of workers) w.send({ type: 'stop' });
        await Promise.all(workers.map((w) => nextMessage(w, (m: { type: string }) => m.type === 'stopped')));
        await Promise.all(workers.map((w) => (w.exitCode === null ? once(w, 'exit') : null)));
        expect(ledger.charges()).toHaveLength(1);
        expect(await store.getDecision(id, pause.checkpointId)).toMatchObject({ state: 'applied' });
        expect(await store.latest(id)).toMatchObject({ step: 'run_end', status: 'completed' });
      } finally {
        for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
      }
    });

    it('a stream of ordinary checkpoint writes starts at most one scan per writeDebounceMs, not one per write', async () => {
      const ledger = new Ledger(tmp.file(`scans-${b.name}.jsonl`));
      const { agent } = refundAgent({ store, ledger });
      let writes = 0;
      const off = store.onWrite(() => writes++);
      const stop = new AbortController();
      // a debounce long next to one run's writes, so that the scans the elapsed time allows stay well below the
      // writes on a loaded machine too: with 500 ms the writes had to come at 12 a second; with 2 s, the 60 writes
      // may take up to half a minute
      const debounceMs = 2000;
      const serving = serveDecisions({
        agent,
        store,
        signal: stop.signal,
        pollMs: 60_000,
        writeDebounceMs: debounceMs,
      });
      const started = Date.now();
      const ids: string[] = [];
      // agent traffic: runs that pause, none decided
      while (Date.now() - started < 1000 || writes < 60) {
        const id = exec();
        ids.push(id);
        await agent.run(refundRequest(id, 5000), { executionId: id });
      }
      const elapsed = Date.now() - started;
      stop.abort();
      const summary = await serving;
      off();
      for (const id of ids) await store.cancel(id);
      expect(writes).toBeGreaterThanOrEqual(60);
      // the first scan, one per debounce window while writes came, one for the last write's deferred wake-up: counted
      // against the time the writes took, so a slower machine is allowed as many more scans as it took windows
      expect(summary.scans).toBeLessThanOrEqual(Math.ceil(elapsed / debounceMs) + 2);
      expect(summary.scans * 3, `${summary.scans} scans for ${writes} writes in ${elapsed} ms`).toBeLessThan(writes);
    });

    it('the worker forgets a failed or settled decision once it is no longer pending in the store', async () => {
      const ledger = new Ledger(tmp.file(`evict-${b.name}.jsonl`));
      const { agent } = refundAgent({ store, ledger });
      const { agent: broken } = refundAgent({ store, ledger, withoutRefundTool: true });
      const id = exec();
      const pause = (await agent.run(refundRequest('E-1', 5000), { executionId: id })).pendingInterrupt!;
      const d = decision(id, pause.checkpointId);
      await store.recordDecision(d);
      const seen: DecisionOutcome[] = [];
      const stop = new AbortController();
      const counting = countingScans(store);
      const serving = serveDecisions({
        store: counting.store,
        agentFor: (x) => (x.decisionId === d.decisionId ? broken : null),
        signal: stop.signal,
        pollMs: 50,
        writeDebounceMs: 0,
        retry: { baseMs: 60_000, capMs: 60_000 },
        onOutcome: (x) => seen.push(x),
      });
      const mine = () => seen.filter((x) => x.decision.decisionId === d.decisionId).map((x) => x.outcome);
      await until('the decision failed', () => mine().length > 0);
      expect(mine()).toEqual(['failed']);
      // while it is pending and waiting for its retry, the worker remembers it; closed, the next scan gives its final
      // outcome, and the one after forgets it: waited for by counting the scans (a sleep may end before they ran)
      await store.cancel(id);
      expect(await store.getDecision(id, pause.checkpointId)).toMatchObject({ state: 'superseded' });
      await until('the closed decision has its final outcome', () => mine().length === 2);
      const at = counting.scans();
      await until('a whole scan ran after that outcome', () => counting.scans() >= at + 2);
      stop.abort();
      const summary = await serving;
      expect(summary.failed).toBeGreaterThanOrEqual(1);
      expect(summary.remembered).toBe(0);
    });

    it('a decision still pending and waiting for its retry stays remembered', async () => {
      const ledger = new Ledger(tmp.file(`keep-${b.name}.jsonl`));
      const { agent } = refundAgent({ store, ledger });
      const { agent: broken } = refundAgent({ store, ledger, withoutRefundTool: true });
      const id = exec();
      const pause = (await agent.run(refundRequest('K-1', 5000), { executionId: id })).pendingInterrupt!;
      const d = decision(id, pause.checkpointId);
      await store.recordDecision(d);
      const stop = new AbortController();
      let failed = false;
      const counting = countingScans(store);
      const serving = serveDecisions({
        store: counting.store,
        agentFor: (x) => (x.decisionId === d.decisionId ? broken : null),
        signal: stop.signal,
        pollMs: 50,
        retry: { baseMs: 60_000, capMs: 60_000 },
        onOutcome: (x) => {
          if (x.decision.decisionId === d.decisionId) failed = true;
        },
      });
      await until('the decision failed', () => failed);
      // whole scans after the failure, counted (not a sleep that may end before one ran): still remembered
      const at = counting.scans();
      await until('two whole scans ran after the failure', () => counting.scans() >= at + 3);
      stop.abort();
      expect((await serving).remembered).toBe(1);
      await store.cancel(id);
    });

    it('serveDecisions refuses options it cannot work with, naming every problem', async () => {
      let err: { code?: string; details?: { problems: string[] } } | undefined;
      await serveDecisions({ store, signal: new AbortController().signal, restore: true, pollMs: 0 }).catch(
        (e) => (err = e),
      );
      expect(err?.code).toBe('INVALID_OPTIONS');
      expect(err?.details?.problems).toEqual([
        'pollMs: must be an integer number of ms, at least 1 (got 0)',
        'give exactly one of agent and agentFor',
        'restore needs a replica (the plane to restore from)',
      ]);
    });
  });
}

workerSuite({
  name: 'sqlite',
  async open() {
    const path = tmp.file('decisions.db');
    const store = new SqliteCheckpointer({ path });
    return { store, spec: `sqlite:${path}`, close: () => store.close() };
  },
});

const pg = await pgReady('decisions worker: postgres');
let db: TestDatabase | undefined;
afterAll(async () => db?.drop());
if (pg) {
  workerSuite({
    name: 'postgres',
    async open() {
      db = await createTestDatabase('waymark_decisions');
      const store = new PostgresCheckpointer({ url: db.url, schema: 'decide', max: 4 });
      await store.setup();
      return { store, spec: `postgres:${db.url}#decide`, close: () => store.close() };
    },
  });
}
