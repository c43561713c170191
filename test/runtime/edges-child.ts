/**
 * A process of the edge tests. argv: <mode> <spec> <dir> <leaseMs> <executionId> [faultPoint hits]
 *   run            start the run (it pauses at the worker's first approval)
 *   answer         resume with ANSWER (JSON, default {approved:true}), CHECKPOINT_ID naming the pause
 *   resume         resume without a value
 *   recover        one recoverRuns pass (executionId ignored)
 *   serve          serveDecisions until the run's pending decisions are settled (SERVE_FOR outcomes)
 * WAIT_GO=1: says {ready} over IPC and starts on the next message. STRAY_CALL=<desk|payer>:<name>: that
 * agent's model first calls a tool it does not have (edges-agent.ts). Prints one JSON line.
 */
import { openStore, recoverRuns, serveDecisions } from '../../client/index.js';
import { faultPoint, killAt } from '../../client/testing/faults.js';
import { edgesAgent, strayCallOf } from './edges-agent.js';

const [mode, spec, dir, leaseMs, executionId, point, hits] = process.argv.slice(2);
const faults = point ? killAt(faultPoint(point), { hits: Number(hits ?? 1) }) : undefined;
const store = await openStore(spec, { faults, max: 4 });
await store.setup();
const { desk } = edgesAgent({
  store,
  dir,
  leaseMs: Number(leaseMs),
  faults,
  strayCall: strayCallOf(process.env.STRAY_CALL),
});
if (process.env.WAIT_GO === '1') {
  const go = new Promise<void>((resolve) => process.once('message', () => resolve()));
  process.send!({ ready: true });
  await go;
}
let out: unknown;
try {
  if (mode === 'run') out = { result: await desk.run('handle the payments', { executionId }) };
  else if (mode === 'answer') {
    const answer = JSON.parse(process.env.ANSWER ?? '{"approved":true}');
    out = {
      result: await desk.resume(
        executionId,
        answer,
        process.env.CHECKPOINT_ID ? { checkpointId: process.env.CHECKPOINT_ID } : {},
      ),
    };
  } else if (mode === 'resume') out = { result: await desk.resume(executionId) };
  else if (mode === 'recover') {
    const { runs, ...totals } = await recoverRuns({ agents: [desk], store, concurrency: 2 });
    out = {
      report: {
        ...totals,
        runs: runs.map(({ result: _r, ...r }: { result?: unknown } & Record<string, unknown>) => r),
      },
    };
  } else if (mode === 'serve') {
    const stop = new AbortController();
    const outcomes: Record<string, unknown>[] = [];
    const want = Number(process.env.SERVE_FOR ?? 1);
    await serveDecisions({
      agent: desk,
      store,
      signal: stop.signal,
      pollMs: 50,
      onOutcome: ({ decision: _d, ...o }) => {
        outcomes.push('result' in o ? { ...o, result: undefined } : o);
        if (outcomes.filter((x) => x.outcome !== 'failed').length >= want) stop.abort();
      },
    });
    out = { outcomes };
  }
} catch (e) {
  out = { error: { code: (e as { code?: string }).code, message: (e as Error).message } };
}
process.stdout.write(`${JSON.stringify({ ...(out as object), pid: process.pid })}\n`);
await store.close();
process.disconnect?.();
