/**
 * A "laptop" of the approvals browser tests, in its own process: a SQLite
 * store connected to a plane (a replica), the refund agent, and the decision
 * worker (`serveDecisions` with the replica, so the plane's decisions wake
 * it). argv: <db file> <ledger file> <plane url> <key>
 * IPC: `ready` once it listens; `{type:'run', executionId}` runs a refund
 * (its order is the execution id) to its pause and answers `paused` (with the
 * pause's checkpoint id) once the plane holds it; `{type:'restore',
 * executionId}` restores that run from the plane (`restoreFromPlane`) and
 * answers `restored`; each worker outcome is sent as `outcome` after the
 * replica flushed it (so the plane knows it applied); `stop` ends the worker
 * and the process (`stopped`).
 * `{type:'hold', executionId}` (answered `holding`): the worker reports
 * `held` the first time it takes up that run's decision and waits for
 * `{type:'go', decisionId}` before it resumes the run, so two laptops racing
 * have both read the decision as pending before either claims.
 * The replica's backoff is capped at 1 s: a laptop whose network comes back
 * asks the plane again within a second.
 */
import { connectPlane, restoreFromPlane, serveDecisions, type StoredDecision } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';

type Msg = { type: string; executionId?: string; decisionId?: string };

const [dbFile, ledgerFile, url, apiKey] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path: dbFile });
const replica = connectPlane(store, {
  url,
  apiKey,
  pollMs: 0,
  debounceMs: 5,
  timeoutMs: 5000,
  decisionWaitSeconds: 1,
  backoffCapMs: 1000,
});
const { agent } = refundAgent({ store, ledger: new Ledger(ledgerFile) });
const stop = new AbortController();
const holding = new Set<string>();
const released = new Set<string>();

process.on('message', async (m: Msg) => {
  if (m.type === 'stop') stop.abort();
  if (m.type === 'run') {
    const r = await agent.run(refundRequest(m.executionId!, 9000), { executionId: m.executionId });
    await replica.flush({ timeoutMs: 10_000 });
    process.send?.({
      type: 'paused',
      status: r.status,
      checkpointId: r.pendingInterrupt?.checkpointId ?? null,
      writerId: store.writerId,
    });
  }
  if (m.type === 'hold') {
    holding.add(m.executionId!);
    process.send?.({ type: 'holding', executionId: m.executionId });
  }
  if (m.type === 'restore') {
    const r = await restoreFromPlane(store, m.executionId!, { url, apiKey });
    process.send?.({
      type: 'restored',
      inserted: r.inserted,
      pendingImported: r.pendingImported,
      writerId: store.writerId,
    });
  }
});

/** The first take-up of a held run's decision waits for the parent's `go`; a retry does not. */
async function held(decision: StoredDecision): Promise<void> {
  if (!holding.has(decision.executionId) || released.has(decision.decisionId)) return;
  await new Promise<void>((resolve) => {
    const onGo = (m: Msg) => {
      if (m.type !== 'go' || m.decisionId !== decision.decisionId) return;
      process.off('message', onGo);
      released.add(decision.decisionId);
      resolve();
    };
    process.on('message', onGo);
    process.send?.({ type: 'held', decisionId: decision.decisionId });
  });
}

process.send?.({ type: 'ready', writerId: store.writerId });
const summary = await serveDecisions({
  agentFor: async (decision) => {
    await held(decision);
    return agent;
  },
  store,
  replica,
  signal: stop.signal,
  pollMs: 200,
  onOutcome: (o) => {
    void replica.flush({ timeoutMs: 10_000 }).then(() => {
      process.send?.({
        type: 'outcome',
        outcome: o.outcome,
        decisionId: o.decision.decisionId,
        executionId: o.decision.executionId,
        status: 'status' in o ? o.status : null,
        appliedBy: 'appliedBy' in o ? o.appliedBy : null,
        writerId: store.writerId,
      });
    });
  },
});
await replica.stop();
await store.close();
process.send!({ type: 'stopped', summary }, () => process.exit(0));
