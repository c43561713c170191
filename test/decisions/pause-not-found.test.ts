/**
 * The decision worker and PAUSE_NOT_FOUND, with real stores on a real plane:
 * a decision for a pause the plane will never hold (this store's copy of the
 * run lost at the plane before that pause: another machine's branch won) is
 * `superseded` with the reason, once; a decision whose pause is only not yet
 * on the plane is tried again and applied once its row arrives there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectPlane,
  restoreFromPlane,
  serveDecisions,
  type DecisionOutcome,
  type Replica,
} from '../../client/index.js';
import { decide } from '../../client/runtime/decide.js';
import { lostAtPlane, runLostAtPlane } from '../../client/replica/branch.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

/** Nothing listens here: a resume against it is offline (its local claim stands). */
const UNREACHABLE = 'http://127.0.0.1:9';
const tmp = scratchDir('waymark-pause-not-found-');
let plane: TestPlane;
let key = '';
const replicas: Replica[] = [];
const stores: SqliteCheckpointer[] = [];
const connect = (store: SqliteCheckpointer, url: string) => {
  const r = connectPlane(store, { url, apiKey: key, pollMs: 0, followChanges: false, claimFlushMs: 200 });
  replicas.push(r);
  return r;
};
const open = (name: string) => {
  const s = new SqliteCheckpointer({ path: tmp.file(`${name}.db`), writerId: name });
  stores.push(s);
  return s;
};

/** Serve decisions of `store` until `done` holds of the outcomes (15 s at most); the outcomes. */
async function serveUntil(
  store: SqliteCheckpointer,
  replica: Replica,
  ledger: Ledger,
  done: (o: DecisionOutcome[]) => boolean,
): Promise<DecisionOutcome[]> {
  const outcomes: DecisionOutcome[] = [];
  const stop = new AbortController();
  const { agent } = refundAgent({ store, ledger, twoApprovals: true });
  const served = serveDecisions({
    agent,
    store,
    replica,
    signal: stop.signal,
    pollMs: 50,
    retry: { baseMs: 50, capMs: 200 },
    onOutcome: (o) => {
      outcomes.push(o);
      if (done(outcomes)) stop.abort();
    },
  });
  const timer = setTimeout(() => stop.abort(), 15_000);
  await served;
  clearTimeout(timer);
  return outcomes;
}

beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('acme', ['ingest', 'read']);
});
afterAll(async () => {
  for (const r of replicas) await r.stop().catch(() => {});
  for (const s of stores) await s.close();
  await plane?.close();
});

describe('serveDecisions and PAUSE_NOT_FOUND', () => {
  it('a decision for a pause of a branch the plane refused is superseded, with the reason, and nothing is resumed', async () => {
    const RUN = 'refund-lost';
    const ledger = new Ledger(tmp.file('lost.jsonl'));
    const loser = open('laptop-a');
    const winner = open('laptop-b');
    // the loser pauses for the manager, synced
    const first = connect(loser, plane.url);
    const a = refundAgent({ store: loser, ledger, twoApprovals: true }).agent;
    expect((await a.run(refundRequest('1042', 50_000), { executionId: RUN })).status).toBe('paused');
    expect(await first.flush({ timeoutMs: 10_000 })).toMatchObject({ pendingRows: 0 });
    await first.stop();
    // the winner takes that pause at the plane and finishes
    const b = connect(winner, plane.url);
    await restoreFromPlane(winner, RUN, { url: plane.url, apiKey: key });
    const declined = await refundAgent({ store: winner, ledger }).agent.resume(RUN, { approved: false });
    expect(declined.status).toBe('completed');
    expect(await b.flush({ timeoutMs: 10_000 })).toMatchObject({ pendingRows: 0 });
    // the loser, offline, answers the same pause and goes on to the finance pause, which only it has
    const offline = connect(loser, UNREACHABLE);
    expect((await a.resume(RUN, { approved: true })).status).toBe('paused');
    await offline.stop();
    const finance = (await loser.getPendingInterrupt(RUN))!;
    expect(finance.reason).toBe('finance_approval');
    // back online: the plane keeps the winner's branch and refuses the loser's rows, the finance pause among them
    const replica = connect(loser, plane.url);
    await replica.flush({ timeoutMs: 10_000 });
    const lost = (await lostAtPlane(loser)).get(RUN);
    expect(lost).toBeDefined();
    expect(lost!.fromSeq).toBeLessThanOrEqual((await loser.getById(finance.checkpointId))!.seq);
    // the one-run read (by the run's row ids) says the same as the listing's, and nothing of the winner's copy
    expect(await runLostAtPlane(loser, RUN)).toEqual(lost);
    expect(await runLostAtPlane(winner, RUN)).toBeNull();
    // a person answers the finance pause in the loser's own UI
    const d = await decide(loser, RUN, { approved: true, decidedBy: 'alice', checkpointId: finance.checkpointId });

    const outcomes = await serveUntil(loser, replica, ledger, (o) => o.some((x) => x.outcome !== 'failed'));
    const settled = outcomes.filter((o) => o.decision.decisionId === d.decisionId && o.outcome !== 'failed');
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({ outcome: 'superseded', code: 'PAUSE_NOT_FOUND' });
    expect((settled[0] as { reason: string }).reason).toContain(`from seq ${lost!.fromSeq}`);
    // nothing was charged (the winner declined; the loser's branch waits at its finance pause, still open here)
    expect(ledger.charges()).toHaveLength(0);
    expect((await loser.getPendingInterrupt(RUN))?.checkpointId).toBe(finance.checkpointId);
  });

  it('a decision whose pause is not on the plane yet is tried again, and applied once its row gets there', async () => {
    const RUN = 'refund-late';
    const ledger = new Ledger(tmp.file('late.jsonl'));
    const store = open('laptop-c');
    // the plane is reachable for claims, but ingest is held back: the pause's row is not on the plane yet
    const proxy = await new FaultProxy(plane.url).start();
    try {
      const replica = connect(store, proxy.url);
      const { agent } = refundAgent({ store, ledger, twoApprovals: true });
      proxy.rule = ({ path }) => (path.startsWith('/v1/ingest') ? { status: 503 } : undefined);
      expect((await agent.run(refundRequest('77', 50_000), { executionId: RUN })).status).toBe('paused');
      const pause = (await store.getPendingInterrupt(RUN))!;
      const d = await decide(store, RUN, { approved: false, decidedBy: 'alice', checkpointId: pause.checkpointId });
      let failedOnce = false;
      const outcomes = await serveUntil(store, replica, ledger, (o) => {
        if (!failedOnce && o.some((x) => x.outcome === 'failed')) {
          failedOnce = true;
          // the rows may go now
          proxy.rule = null;
        }
        return o.some((x) => x.outcome !== 'failed');
      });
      const mine = outcomes.filter((o) => o.decision.decisionId === d.decisionId);
      expect(mine.some((o) => o.outcome === 'failed')).toBe(true);
      expect(mine.find((o) => o.outcome !== 'failed')).toMatchObject({ outcome: 'applied', status: 'completed' });
    } finally {
      await proxy.close();
    }
  });
});
