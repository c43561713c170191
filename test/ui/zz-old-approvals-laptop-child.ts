/**
 * The "laptop" of the approvals browser test, in its own process: a SQLite
 * store connected to a plane (a replica), the refund agent, and the decision
 * worker (`serveDecisions` with the replica, so the plane's decisions wake
 * it). argv: <db file> <ledger file> <plane url> <key>
 * IPC: `{type:'run', executionId}` runs a refund to its pause and answers
 * `paused` (with the pause's checkpoint id) once the plane holds it; each
 * worker outcome is sent as `outcome` after the replica flushed it (so the
 * plane knows it applied); `stop` ends the worker and the process (`stopped`).
 */
import { connectPlane, serveDecisions } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';

const [dbFile, ledgerFile, url, apiKey] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path: dbFile });
const replica = connectPlane(store, { url, apiKey, pollMs: 0, debounceMs: 5, timeoutMs: 5000, decisionWaitSeconds: 1 });
const { agent } = refundAgent({ store, ledger: new Ledger(ledgerFile) });
const stop = new AbortController();

process.on('message', async (m: { type: string; executionId?: string }) => {
  if (m.type === 'stop') stop.abort();
  if (m.type === 'run') {
    const r = await agent.run(refundRequest('A-1', 9000), { executionId: m.executionId });
    await replica.flush({ timeoutMs: 10_000 });
    process.send?.({ type: 'paused', status: r.status, checkpointId: r.pendingInterrupt?.checkpointId ?? null, writerId: store.writerId });
  }
});

const summary = await serveDecisions({
  agent,
  store,
  replica,
  signal: stop.signal,
  pollMs: 200,
  onOutcome: (o) => {
    void replica.flush({ timeoutMs: 10_000 }).then(() => {
      process.send?.({ type: 'outcome', outcome: o.outcome, decisionId: o.decision.decisionId, status: 'status' in o ? o.status : null });
    });
  },
});
await replica.stop();
await store.close();
process.send!({ type: 'stopped', summary }, () => process.exit(0));
