/**
 * An application process of the run-request tests: a SQLite store connected
 * to a plane, the `worker-bot` agent (the one test/ui/stale-run-child.ts
 * runs: a `work` tool, then an answer), and the decision worker, which applies
 * the plane's run requests (restoring a run its store does not hold).
 * argv: <db file> <plane url> <key> <fail file> <ledger file> <hold file>
 * - The model fails (MODEL_ERROR) while the fail file exists: a run started
 *   then fails, and a retry after it is gone completes.
 * - The `work` tool appends `<execution id> <writer id>` to the ledger (a side
 *   effect two machines share), then waits while the hold file exists (the
 *   test holds the applier until the other worker has met the request).
 * IPC: `{type:'run', executionId}` runs it (answered `ran`, after a flush);
 * `{type:'serve'}` starts the worker (answered `serving`); each request
 * outcome is sent as `outcome` after the replica flushed it; `stop` ends the
 * worker and the process (`stopped`, with the summary).
 */
import { appendFileSync, existsSync } from 'node:fs';
import { z } from 'zod';
import { Agent, connectPlane, ScriptedModel, serveDecisions, tool } from '../../client/index.js';
import { currentRun } from '../../client/runtime/context.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';

type Msg = { type: string; executionId?: string };

const [dbFile, url, apiKey, failFile, ledger, holdFile] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path: dbFile });
const replica = connectPlane(store, { url, apiKey, pollMs: 0, debounceMs: 5, timeoutMs: 5000, followChanges: false });
const work = tool({
  name: 'work',
  description: 'Do a step of work',
  parameters: z.object({}),
  execute: async () => {
    appendFileSync(ledger, `${currentRun()?.executionId} ${store.writerId}\n`);
    while (existsSync(holdFile)) await new Promise((r) => setTimeout(r, 20));
    return 'done';
  },
});
const agent = new Agent({
  name: 'worker-bot',
  model: new ScriptedModel(({ turn }) => {
    if (existsSync(failFile)) throw Object.assign(new Error('upstream 500'), { code: 'MODEL_ERROR' });
    return turn === 0 ? { toolCalls: [{ name: 'work', arguments: {} }] } : { content: `finished by ${store.writerId}` };
  }),
  tools: [work],
  checkpointer: store,
  leaseMs: 2000,
});
const stop = new AbortController();
let serving: Promise<unknown> | null = null;

process.on('message', async (m: Msg) => {
  if (m.type === 'run') {
    const r = await agent.run('work once', { executionId: m.executionId });
    await replica.flush({ timeoutMs: 10_000 });
    process.send?.({ type: 'ran', status: r.status, writerId: store.writerId });
  }
  if (m.type === 'serve') {
    serving = serveDecisions({
      agent,
      store,
      replica,
      restore: true,
      signal: stop.signal,
      pollMs: 150,
      retry: { baseMs: 100, capMs: 500 },
      onRequestOutcome: (o) => {
        void replica.flush({ timeoutMs: 10_000 }).then(() =>
          process.send?.({
            type: 'outcome',
            outcome: o.outcome,
            requestId: o.request.requestId,
            action: o.request.action,
            status: 'status' in o ? o.status : null,
            appliedBy: 'appliedBy' in o ? o.appliedBy : null,
            code: 'code' in o ? o.code : 'error' in o ? o.error.code : null,
            writerId: store.writerId,
          }),
        );
      },
    });
    process.send?.({ type: 'serving', writerId: store.writerId });
  }
  if (m.type === 'stop') {
    stop.abort();
    const summary = await serving;
    await replica.flush({ timeoutMs: 10_000 }).catch(() => {});
    await replica.stop();
    await store.close();
    process.send!({ type: 'stopped', summary }, () => process.exit(0));
  }
});
process.send?.({ type: 'ready', writerId: store.writerId });
