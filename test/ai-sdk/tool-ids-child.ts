/** argv: dbPath ledger executionId callId [plain]. Runs the two-call agent (the AI SDK model, or with `plain` a plain Model), SIGKILLed before the second tool runs (its row committed). */
import { killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { plainTwoCallsModel, twoCallsAgent, twoCallsModel } from './tool-ids-agent.js';

const [path, ledger, executionId, callId, kind] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path });
const agent = twoCallsAgent({
  model: kind === 'plain' ? plainTwoCallsModel(callId) : twoCallsModel(callId),
  store,
  ledger,
  faults: killAt('runtime.beforeTool', { hits: 2 }),
});
const result = await agent.run('charge A and B', { executionId });
process.stdout.write(`${JSON.stringify({ result })}\n`);
await store.close();
