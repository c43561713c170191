/**
 * A resumer of the two-pause deploy run, in its own process.
 * argv: <store spec> <ledger> <executionId> <approved: true|false> [hold]
 * With `hold`, its claim guard reports `held` over IPC once it has read the
 * pause, and waits for `go` before claiming: the window in which a stale
 * resumer sits (a slow plane claim, an offline flush). Reports `done` over IPC
 * with the result or the error code, then exits 0.
 */
import { openStore } from '../../client/index.js';
import { deployAgent } from './stale-resumer-agent.js';
import { Ledger } from '../../examples/agents/refund.js';

const [spec, ledgerPath, executionId, approved, hold] = process.argv.slice(2);
const store = await openStore(spec, { max: 4 });
const agent = deployAgent(store, new Ledger(ledgerPath));
if (hold === 'hold') {
  agent.claimGuard = (pause) =>
    new Promise<void>((resolve) => {
      process.once('message', () => resolve());
      process.send?.({ type: 'held', pause });
    });
}
let out: unknown;
try {
  const r = await agent.resume(executionId, { approved: approved === 'true' });
  out = { type: 'done', result: { status: r.status, pendingInterrupt: r.pendingInterrupt ?? null } };
} catch (e) {
  out = { type: 'done', error: { code: (e as { code?: string }).code ?? null, message: (e as Error).message } };
}
await store.close();
process.send!(out, () => process.exit(0));
