/**
 * A runner that dies mid-run: on a SQLite store connected to a plane, an agent
 * with a short lease calls its tool, which sends every row so far to the
 * plane, and the process is SIGKILLed at 'runtime.afterTool' (the tool done,
 * the next row not written). Its lease here and its hold at the plane are
 * then left to expire: the run is stale.
 * argv: <db> <planeUrl> <apiKey> <executionId> <leaseMs>. Exits 3 if the fault point was never reached.
 */
import { z } from 'zod';
import { Agent, connectPlane, ScriptedModel, tool } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { killAt } from '../../client/testing/faults.js';

const [db, url, apiKey, executionId, leaseMs] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path: db });
const replica = connectPlane(store, { url, apiKey, pollMs: 0, timeoutMs: 5000, followChanges: false });
const work = tool({
  name: 'work',
  description: 'Do a step of work',
  parameters: z.object({}),
  execute: async () => {
    // the rows up to this tool's row are on the plane before the process dies
    await replica.flush({ timeoutMs: 10_000 });
    return 'done';
  },
});
const agent = new Agent({
  name: 'worker-bot',
  model: new ScriptedModel(({ turn }) =>
    turn === 0 ? { toolCalls: [{ name: 'work', arguments: {} }] } : { content: 'finished' },
  ),
  tools: [work],
  checkpointer: store,
  leaseMs: Number(leaseMs),
  faults: killAt('runtime.afterTool'),
});
await agent.run('work once', { executionId });
process.exit(3);
