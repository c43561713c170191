/**
 * A process of the lease tests. argv: <mode> <spec> <calls> <effects> <leaseMs> …
 *   run      … <id> <steps> [faultPoint hits]
 *   run-many … <prefix> <count> <steps> [faultPoint hits]   (runs <prefix>-0… at once)
 *   resume   … <id>
 *   recover  … [faultPoint hits]
 * WAIT_GO=1: says {ready} over IPC and starts on the next message, so two
 * children start at once. STALL_UNTIL=<file>: the first tool call blocks the
 * event loop until the file exists. HOLD_UNTIL=<file>: the first tool call
 * awaits the file (writing <file>.holding first). MODEL_DELAY_MS: a slow model. Prints one
 * JSON line: the result, the recovery report, or the error's code.
 */
import { openStore, recoverRuns } from '../../client/index.js';
import { faultPoint, killAt } from '../../client/testing/faults.js';
import { leaseAgent, leaseInput } from './lease-agent.js';

const [mode, spec, calls, effects, leaseMs, ...rest] = process.argv.slice(2);
const [point, hits] =
  mode === 'run' ? rest.slice(2) : mode === 'run-many' ? rest.slice(3) : mode === 'recover' ? rest : [];
const faults = point ? killAt(faultPoint(point), { hits: Number(hits ?? 1) }) : undefined;
const store = await openStore(spec, { faults, max: 4 });
await store.setup();
const agent = leaseAgent({
  store,
  callsFile: calls,
  effectsFile: effects,
  leaseMs: Number(leaseMs),
  faults,
  stallUntil: process.env.STALL_UNTIL,
  holdUntil: process.env.HOLD_UNTIL,
  modelDelayMs: Number(process.env.MODEL_DELAY_MS ?? 0),
});
if (process.env.WAIT_GO === '1') {
  const go = new Promise<void>((resolve) => process.once('message', () => resolve()));
  process.send!({ ready: true });
  await go;
}
let out: unknown;
try {
  if (mode === 'run') out = { result: await agent.run(leaseInput(Number(rest[1])), { executionId: rest[0] }) };
  else if (mode === 'run-many') {
    const ids = Array.from({ length: Number(rest[1]) }, (_, i) => `${rest[0]}-${i}`);
    out = { results: await Promise.all(ids.map((id) => agent.run(leaseInput(Number(rest[2])), { executionId: id }))) };
  } else if (mode === 'resume') out = { result: await agent.resume(rest[0]) };
  else {
    const { runs, ...totals } = await recoverRuns({ agents: [agent], store, concurrency: 3 });
    out = {
      report: {
        ...totals,
        runs: runs.map(({ result: _r, ...o }: { result?: unknown } & Record<string, unknown>) => o),
      },
    };
  }
} catch (e) {
  out = {
    error: {
      code: (e as { code?: string }).code,
      message: (e as Error).message,
      details: (e as { details?: unknown }).details,
    },
  };
}
process.stdout.write(JSON.stringify({ ...(out as object), pid: process.pid }) + '\n');
await store.close();
process.disconnect?.();
