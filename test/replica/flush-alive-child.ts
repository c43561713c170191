/** Awaits flush() against an unreachable plane, then says so. Exits 13 if flush let the event loop drain. */
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';

const store = new SqliteCheckpointer({ path: ':memory:' });
await store.put({
  executionId: 'e',
  nodeId: 'turn:0',
  turn: 0,
  step: 'llm_call',
  status: 'completed',
  agentPath: 'agent:a',
  state: {},
});
const replica = connectPlane(store, {
  url: 'http://127.0.0.1:9',
  apiKey: 'wm_x',
  pollMs: 0,
  backoffBaseMs: 2000,
  backoffCapMs: 2000,
  timeoutMs: 200,
});
const s = await replica.flush({ timeoutMs: 600 });
await replica.stop();
console.log(JSON.stringify({ done: true, pendingRows: s.pendingRows, lastError: s.lastError }));
