/**
 * A decision worker in its own process: serveDecisions over a store spec with
 * the refund agent. argv: <store spec> <ledger> [hold]
 * With `hold`, `agentFor` reports `held` (with the decision) over IPC and
 * waits for `go` before it returns the agent: both workers of a race have
 * read the decision as pending before either claims. Each outcome is sent
 * over IPC; `stop` ends the worker, which then reports `stopped` and exits 0.
 */
import { openStore, serveDecisions } from '../../client/index.js';
import { Ledger, refundAgent } from '../../examples/agents/refund.js';

const [spec, ledgerPath, hold] = process.argv.slice(2);
const store = await openStore(spec, { max: 4 });
const { agent } = refundAgent({ store, ledger: new Ledger(ledgerPath) });
const stop = new AbortController();
process.on('message', (m: { type: string }) => {
  if (m.type === 'stop') stop.abort();
});
const summary = await serveDecisions({
  store,
  signal: stop.signal,
  pollMs: 50,
  agentFor: async (decision) => {
    if (hold === 'hold') {
      await new Promise<void>((resolve) => {
        const onGo = (m: { type: string }) => {
          if (m.type !== 'go') return;
          process.off('message', onGo);
          resolve();
        };
        process.on('message', onGo);
        process.send?.({ type: 'held', decisionId: decision.decisionId });
      });
    }
    return agent;
  },
  onOutcome: (o) => {
    const { decision, ...rest } = o;
    process.send?.({
      type: 'outcome',
      decisionId: decision.decisionId,
      state: decision.state,
      ...rest,
      ...('result' in rest ? { result: undefined } : {}),
    });
  },
});
await store.close();
process.send!({ type: 'stopped', summary }, () => process.exit(0));
