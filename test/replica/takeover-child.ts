/**
 * One machine of the cross-machine takeover test: its own SQLite file,
 * connected to a plane, running the lease agent (test/runtime/lease-agent.ts).
 *
 *   tsx takeover-child.ts <run|restore-resume|resume|recover> <db> <planeUrl> <apiKey> <executionId> <calls> <effects>
 *
 * run: starts the run; at its first tool call it syncs and goes offline
 * (stops its drain), keeps running on its own, and hangs at the second tool
 * call (writing `<db>.holding`) until it is SIGKILLed.
 * restore-resume: restores the run from the plane and resumes it, retrying
 * while the plane says its first machine's lease is live (RUN_IN_PROGRESS).
 * resume: resumes the run here (a machine that comes back), then syncs and
 * prints `waymark sync status`. recover: one recoverRuns pass here.
 * Prints one JSON line.
 */
import { writeFileSync } from 'node:fs';
import { connectPlane, recoverRuns, restoreFromPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { syncStatus } from '../../client/cli/sync-commands.js';
import { leaseAgent, leaseInput } from '../runtime/lease-agent.js';

const [action, db, url, apiKey, executionId, calls, effects] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path: db });
const replica = connectPlane(store, { url, apiKey, pollMs: 0, timeoutMs: 5000 });
const lost: string[] = [];
replica.on('run_lost', (e: { executionId: string }) => lost.push(e.executionId));
let online = true;
const agent = leaseAgent({
  store,
  callsFile: calls,
  effectsFile: effects,
  leaseMs: 1000,
  onTool: async (step) => {
    if (action !== 'run') return;
    if (step === 0) {
      await replica.flush({ timeoutMs: 15_000 });
      await replica.stop();
      online = false;
    } else {
      writeFileSync(`${db}.holding`, '');
      setInterval(() => {}, 1000);
      await new Promise(() => {});
    }
  },
});
const out: Record<string, unknown> = { pid: process.pid, writerId: store.writerId };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
try {
  if (action === 'run') out.result = await agent.run(leaseInput(3), { executionId });
  else if (action === 'restore-resume') {
    out.restore = await restoreFromPlane(store, executionId, { url, apiKey });
    const refusals: string[] = [];
    const deadline = Date.now() + 120_000;
    for (;;) {
      try {
        out.result = await agent.resume(executionId);
        break;
      } catch (e) {
        const code = (e as { code?: string }).code ?? 'unknown';
        if (code !== 'RUN_IN_PROGRESS' || Date.now() > deadline) throw e;
        refusals.push(code);
        await sleep(100);
      }
    }
    out.refusals = refusals;
  } else if (action === 'resume') out.result = await agent.resume(executionId);
  else if (action === 'recover') {
    const { runs } = await recoverRuns({ agents: [agent], store, concurrency: 1 });
    out.recovered = runs.map(({ result: _r, ...o }: { result?: unknown } & Record<string, unknown>) => o);
  }
} catch (e) {
  out.error = {
    code: (e as { code?: string }).code,
    message: (e as Error).message,
    details: (e as { details?: unknown }).details,
  };
}
if (online) out.flush = await replica.flush({ timeoutMs: 15_000 });
await replica.stop();
const status: string[] = [];
await syncStatus(store, (l) => status.push(l));
out.status = status;
out.lost = lost;
out.rows = (await store.list(executionId)).map((r) => `${r.seq}:${r.nodeId}:${r.status}`);
await store.close();
process.stdout.write(JSON.stringify(out) + '\n');
