/** argv: dbPath ledger executionId callId. Runs the two-call agent, SIGKILLed before the second tool runs (its row committed). */
import { killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { twoCallsAgent, twoCallsModel } from './tool-ids-agent.js';

const [path, ledger, executionId, callId] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path });
const agent = twoCallsAgent({ model: twoCallsModel(callId), store, ledger, faults: killAt('runtime.beforeTool', { hits: 2 }) });
const result = await agent.run('charge A and B', { executionId });
process.stdout.write(`${JSON.stringify({ result })}\n`);
await store.close();
