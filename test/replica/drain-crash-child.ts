/**
 * Runs a refund to its pause unconnected, then connects and drains, and is
 * SIGKILLed at 'drain.afterResponse': the plane committed the batch, this
 * store never marked it synced.
 * argv: <db> <planeUrl> <apiKey> <executionId> <ledger>. Exits 3 if the fault point was never reached.
 */
import { connectPlane } from '../../client/index.js';
import { killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';

const [db, url, apiKey, executionId, ledgerPath] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path: db });
const { agent } = refundAgent({ store, ledger: new Ledger(ledgerPath) });
await agent.run(refundRequest('9', 50_000), { executionId });
const replica = connectPlane(store, {
  url,
  apiKey,
  pollMs: 0,
  timeoutMs: 5000,
  followChanges: false,
  faults: killAt('drain.afterResponse'),
});
await replica.flush({ timeoutMs: 10_000 });
process.exit(3);
