/**
 * A long run on a PostgresCheckpointer, in its own process (postgres.js 3.4.9
 * can crash a process when a backend dies under a buffered write, upstream
 * porsager/postgres#1154). Runs or resumes; prints its outcome.
 *   tsx store-storm-child.ts <url> <ledger> <run|resume>
 */
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { Agent, idempotent, ScriptedModel, tool } from '../../client/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { CHILD_LEASE_MS, untilLeaseFree } from '../../examples/agents/refund.js';

export const TURNS = 150;
const [url, ledger, mode] = process.argv.slice(2);
const store = new PostgresCheckpointer({ url, max: 2 });
const charge = idempotent(async function charge(i: number) {
  appendFileSync(ledger, `${i}\n`);
  return { i };
});
const t = tool({
  name: 'step',
  description: '',
  parameters: z.object({ i: z.number() }),
  execute: async ({ i }) => charge(i),
});
const model = new ScriptedModel(({ turn }) =>
  turn < TURNS ? { toolCalls: [{ name: 'step', arguments: { i: turn } }] } : { content: 'done' },
);
const agent = new Agent({
  name: 'long',
  model,
  tools: [t],
  checkpointer: store,
  maxTurns: TURNS + 5,
  leaseMs: CHILD_LEASE_MS,
});
let outcome: string;
try {
  // a process that died under the storm holds the run until its lease (1 s) expires
  if (mode === 'resume') await untilLeaseFree(store, 'under-fire');
  const r = mode === 'run' ? await agent.run('go', { executionId: 'under-fire' }) : await agent.resume('under-fire');
  outcome = r.status;
} catch (e) {
  outcome = `threw ${(e as { code?: string }).code ?? (e as Error).message}`;
}
await store.close().catch(() => {});
process.stdout.write(JSON.stringify({ outcome }) + '\n');
