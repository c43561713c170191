/**
 * Resumes a paused refund run while connected to a plane, and is SIGKILLed at
 * 'claim.afterPlaneClaim': the plane claim is won, the local claim never made.
 * argv: <db> <planeUrl> <apiKey> <executionId> <ledger>. Exits 3 if the fault point was never reached.
 */
import { connectPlane } from '../../client/index.js';
import { killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent } from '../../examples/agents/refund.js';

const [db, url, apiKey, executionId, ledgerPath] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path: db });
connectPlane(store, { url, apiKey, pollMs: 0, timeoutMs: 5000, faults: killAt('claim.afterPlaneClaim') });
const { agent } = refundAgent({ store, ledger: new Ledger(ledgerPath) });
await agent.resume(executionId, { approved: true }).catch((e: Error) => process.stderr.write(`${e.message}\n`));
process.exit(3);
