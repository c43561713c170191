/**
 * A run a plane holds is resumed through the plane's claim. The way it went
 * wrong for a new user: the quick start's script opened the store without
 * connecting it and approved a run another machine had already resumed
 * through the plane; the local claim knew nothing of that, and the refund was
 * charged twice. Such a resume is now refused (PLANE_NOT_CONNECTED).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import {
  connectPlane,
  decide,
  recoverRuns,
  restoreFromPlane,
  serveDecisions,
  type DecisionOutcome,
  type Replica,
} from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { main } from '../../client/cli/main.js';
import { fileURLToPath } from 'node:url';
import { runTs } from '../helpers/child.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-unconnected-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('unconnected', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

let n = 0;
function store(name: string): SqliteCheckpointer {
  const s = new SqliteCheckpointer({ path: tmp.file(`${name}.db`) });
  closing.push(() => s.close());
  return s;
}
function connect(s: SqliteCheckpointer): Replica {
  const replica = connectPlane(s, {
    url: plane.url,
    apiKey: key,
    pollMs: 0,
    debounceMs: 5,
    timeoutMs: 5000,
    followChanges: false,
  });
  closing.push(() => replica.stop());
  return replica;
}

/** Machine A ran the refund to its pause, connected, and its rows reached the plane. */
async function pausedOnPlane() {
  const name = `a${++n}`;
  const executionId = `refund-${name}`;
  const a = store(name);
  const replica = connect(a);
  const ledger = new Ledger(tmp.file(`${name}.jsonl`));
  expect((await refundAgent({ store: a, ledger }).agent.run(refundRequest('7', 50_000), { executionId })).status).toBe(
    'paused',
  );
  expect((await replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
  await replica.stop();
  return { name, executionId, ledger };
}

describe('a run a plane holds is not resumed from an unconnected store', () => {
  it("the newcomer's double charge: machine B resumed through the plane; A's unconnected script is refused, charges nothing, and its pause stays open", async () => {
    const { name, executionId, ledger } = await pausedOnPlane();
    // machine B, connected, restores the run and resumes it through the plane: one charge
    const b = store(`${name}-b`);
    const bReplica = connect(b);
    await restoreFromPlane(b, executionId, { url: plane.url, apiKey: key });
    const bLedger = new Ledger(tmp.file(`${name}-b.jsonl`));
    expect(
      (await refundAgent({ store: b, ledger: bLedger }).agent.resume(executionId, { approved: true })).status,
    ).toBe('completed');
    expect(bLedger.charges()).toHaveLength(1);
    await bReplica.flush({ timeoutMs: 10_000 });

    // on A, a script opens the same file unconnected (the quick start's refund.ts) and approves
    const again = store(name);
    const e = await refundAgent({ store: again, ledger })
      .agent.resume(executionId, { approved: true })
      .catch((x: unknown) => x);
    expect(e).toMatchObject({ name: 'NotConnected', code: 'PLANE_NOT_CONNECTED', details: { executionId } });
    expect((e as Error).message).toMatch(/held by a plane.*connectPlane.*withoutPlane: true.*nothing was claimed/);
    expect(ledger.charges()).toEqual([]);
    expect(await again.getPendingInterrupt(executionId)).not.toBeNull();
    expect((await again.latest(executionId))?.status).toBe('interrupted');

    // connected, the same resume reaches the plane's claim, which names the winner: still no charge
    const aReplica = connect(again);
    await expect(
      refundAgent({ store: again, ledger }).agent.resume(executionId, { approved: true }),
    ).rejects.toMatchObject({
      code: 'ALREADY_RESUMED',
      details: { claimedBy: b.writerId },
    });
    await aReplica.stop();
    expect(ledger.charges()).toEqual([]);
  });

  it('a store that only restored the run is refused too; withoutPlane gives the claim up on purpose and resumes', async () => {
    const { name, executionId } = await pausedOnPlane();
    const b = store(`${name}-b`);
    const restored = await restoreFromPlane(b, executionId, { url: plane.url, apiKey: key });
    expect(restored.inserted).toBeGreaterThan(0);
    expect(await b.heldByPlane(executionId)).toBe(true);
    const ledger = new Ledger(tmp.file(`${name}-b.jsonl`));
    const { agent } = refundAgent({ store: b, ledger });
    await expect(agent.resume(executionId, { approved: true })).rejects.toMatchObject({ code: 'PLANE_NOT_CONNECTED' });
    expect(ledger.charges()).toEqual([]);
    expect((await b.outboxStats()).pendingCount).toBe(0);
    expect((await agent.resume(executionId, { approved: true }, { withoutPlane: true })).status).toBe('completed');
    expect(ledger.charges()).toHaveLength(1);
    // deleting it here says what the next sync does to the plane's copy
    const lines: string[] = [];
    expect(await main(['delete', '--db', tmp.file(`${name}-b.db`), executionId, '--yes'], (l) => lines.push(l))).toBe(
      0,
    );
    expect(lines.join('\n')).toMatch(
      /^deleted refund-a\d+: \d+ row\(s\).*; a plane holds the run: its copy there is deleted at the next sync of this store$/,
    );
  });

  it('a batch the plane refused as a whole (a revoked key: 401) leaves nothing held: the run resumes unconnected', async () => {
    const name = `f${++n}`;
    const executionId = `refund-${name}`;
    const s = store(name);
    const replica = connectPlane(s, {
      url: plane.url,
      apiKey: 'wm_not_a_key',
      pollMs: 0,
      debounceMs: 5,
      timeoutMs: 5000,
      followChanges: false,
    });
    const ledger = new Ledger(tmp.file(`${name}.jsonl`));
    const { agent } = refundAgent({ store: s, ledger });
    expect((await agent.run(refundRequest('5', 50_000), { executionId })).status).toBe('paused');
    // flush() answers once the drain is in auth_failed; its timeout only bounds a hang
    await replica.flush({ timeoutMs: 30_000 });
    expect((await replica.status()).state).toBe('auth_failed');
    await replica.stop();
    expect(await s.heldByPlane(executionId)).toBe(false);
    expect((await agent.resume(executionId, { approved: true })).status).toBe('completed');
    expect(ledger.charges()).toHaveLength(1);
  });

  it('a drain that only ever met a refused connection leaves nothing held: the run resumes unconnected', async () => {
    const name = `r${++n}`;
    const executionId = `refund-${name}`;
    const s = store(name);
    // a port nothing listens on: every round is refused before any byte is sent
    const { createServer } = await import('node:net');
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const port = (probe.address() as { port: number }).port;
        probe.close(() => resolve(port));
      });
    });
    const replica = connectPlane(s, {
      url: `http://127.0.0.1:${closed}`,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      timeoutMs: 5000,
      backoffBaseMs: 10,
      backoffCapMs: 50,
      followChanges: false,
    });
    const ledger = new Ledger(tmp.file(`${name}.jsonl`));
    const { agent } = refundAgent({ store: s, ledger });
    expect((await agent.run(refundRequest('6', 50_000), { executionId })).status).toBe('paused');
    const after = await replica.flush({ timeoutMs: 1500 });
    expect(after.pendingRows).toBeGreaterThan(0);
    expect(after.lastError).toMatch(/network/);
    await replica.stop();
    expect(await s.heldByPlane(executionId)).toBe(false);
    expect((await agent.resume(executionId, { approved: true })).status).toBe('completed');
    expect(ledger.charges()).toHaveLength(1);
  });

  it('a run that never reached a plane resumes unconnected as before, though its store was connected once', async () => {
    const name = `c${++n}`;
    const s = store(name);
    const replica = connect(s);
    await replica.stop(); // connected, then stopped before anything drained
    const ledger = new Ledger(tmp.file(`${name}.jsonl`));
    const { agent } = refundAgent({ store: s, ledger });
    expect((await agent.run(refundRequest('8', 50_000), { executionId: `refund-${name}` })).status).toBe('paused');
    expect(await s.heldByPlane(`refund-${name}`)).toBe(false);
    expect((await agent.resume(`refund-${name}`, { approved: true })).status).toBe('completed');
    expect(ledger.charges()).toHaveLength(1);
  });

  it('a crashed run the plane holds is not taken over unconnected: resume and recoverRuns refuse it, nothing is written', async () => {
    const name = `d${++n}`;
    const executionId = `refund-${name}`;
    const s = store(name);
    const replica = connect(s);
    const { agent } = refundAgent({ store: s, ledger: new Ledger(tmp.file(`${name}.jsonl`)) });
    // a run that stopped mid-way (its writer died before the model answered): its first row, as a real run writes it, reached the plane
    const scratch = store(`${name}-scratch`);
    await refundAgent({ store: scratch, ledger: new Ledger(tmp.file(`${name}-scratch.jsonl`)) }).agent.run(
      refundRequest('9', 50_000),
      { executionId },
    );
    const [first] = await scratch.list(executionId);
    await s.put({ ...first, parentId: null, state: await scratch.readState(first) });
    expect((await replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
    await replica.stop();
    const before = await s.list(executionId);
    await expect(agent.resume(executionId)).rejects.toMatchObject({ code: 'PLANE_NOT_CONNECTED' });
    // an agent's own claim guard answers for pause claims only: a takeover is still checked
    agent.claimGuard = async () => {};
    await expect(agent.resume(executionId)).rejects.toMatchObject({ code: 'PLANE_NOT_CONNECTED' });
    const report = await recoverRuns({ store: s, agents: [agent] });
    expect(report.runs).toEqual([
      expect.objectContaining({
        executionId,
        outcome: 'failed',
        error: expect.objectContaining({ code: 'PLANE_NOT_CONNECTED' }),
      }),
    ]);
    expect(await s.list(executionId)).toEqual(before);
    // given up on purpose: recovered here (the refund pauses again for its approval)
    const again = await recoverRuns({ store: s, agents: [agent], withoutPlane: true });
    expect(again.runs).toEqual([expect.objectContaining({ executionId, outcome: 'recovered', status: 'paused' })]);
  });

  it('the decision worker of an unconnected store: a decision for a run the plane holds fails with the code and is retried; withoutPlane applies it', async () => {
    const { name, executionId } = await pausedOnPlane();
    const s = store(name);
    const ledger = new Ledger(tmp.file(`${name}-w.jsonl`));
    const { agent } = refundAgent({ store: s, ledger });
    await decide(s, executionId, { approved: true, decidedBy: 'alice' });
    const serve = async (withoutPlane: boolean) => {
      const stop = new AbortController();
      const outcomes: DecisionOutcome[] = [];
      const served = serveDecisions({
        agent,
        store: s,
        signal: stop.signal,
        pollMs: 20,
        retry: { baseMs: 10, capMs: 20 },
        withoutPlane,
        onOutcome: (o) => outcomes.push(o),
      });
      await expect.poll(() => outcomes.length, { timeout: 20_000 }).toBeGreaterThan(withoutPlane ? 0 : 1);
      stop.abort();
      await served;
      return outcomes;
    };
    const refused = await serve(false);
    expect(refused.every((o) => o.outcome === 'failed' && o.error.code === 'PLANE_NOT_CONNECTED')).toBe(true);
    expect(ledger.charges()).toEqual([]);
    const applied = await serve(true);
    expect(applied[0]).toMatchObject({ outcome: 'applied', status: 'completed' });
    expect(ledger.charges()).toHaveLength(1);
  });

  it('a drain killed after the plane committed its batch and before the answer was applied: the rows are unsynced here, yet the run is refused', async () => {
    const name = `e${++n}`;
    const executionId = `refund-${name}`;
    const db = tmp.file(`${name}.db`);
    const ledger = new Ledger(tmp.file(`${name}.jsonl`));
    const child = await runTs(fileURLToPath(new URL('./drain-crash-child.ts', import.meta.url)), [
      db,
      plane.url,
      key,
      executionId,
      ledger.path,
    ]);
    expect(child.signal, child.stderr).toBe('SIGKILL');
    // the plane holds the pause (another machine could restore and resume it there) ...
    expect((await call(`${plane.url}/v1/executions/${executionId}`, { key })).status).toBe(200);
    const s = store(name);
    // ... while this store never heard back: nothing of the run is marked synced
    expect((await s.outboxStats()).pendingCount).toBeGreaterThan(0);
    expect(await s.heldByPlane(executionId)).toBe(true);
    await expect(refundAgent({ store: s, ledger }).agent.resume(executionId, { approved: true })).rejects.toMatchObject(
      { code: 'PLANE_NOT_CONNECTED' },
    );
    expect(ledger.charges()).toEqual([]);
    expect(await s.getPendingInterrupt(executionId)).not.toBeNull();
  });
});
