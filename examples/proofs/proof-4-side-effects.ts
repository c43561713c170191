/** Boundary 4: a resume and a side effect — the re-executed step. */
import { z } from 'zod';
import { Agent, idempotent, ScriptedModel, tool } from '../../client/index.js';
import { refundAgent, refundRequest } from '../agents/refund.js';
import { Proof, proofEnv } from './lib.js';

const proof = new Proof('Proof 4 · side effects across a resume');
const env = await proofEnv('side-effects');
try {
  proof.section('the same tool, paused and resumed (the charge happens before the pause)');
  for (const wrapped of [false, true]) {
    const ledger = env.ledger(`charge-${wrapped}`);
    const charge = async (order: string) => ledger.append({ kind: 'charge', order });
    const chargeOnce = idempotent(async function chargeCard(order: string) {
      ledger.append({ kind: 'charge', order });
      return { charged: order };
    });
    const refund = tool({
      name: 'refund',
      description: 'charge then ask',
      parameters: z.object({ order: z.string() }),
      execute: async ({ order }) => {
        if (wrapped) await chargeOnce(order);
        else await charge(order);
        const { interrupt } = await import('../../client/index.js');
        return interrupt('confirm', { order }).approved;
      },
    });
    const model = new ScriptedModel(({ turn }) =>
      turn === 0 ? { toolCalls: [{ name: 'refund', arguments: { order: '1042' } }] } : { content: 'done' },
    );
    const agent = new Agent({ name: 'refund-bot', model, tools: [refund], checkpointer: env.store });
    const id = `side-${wrapped}`;
    await agent.run('go', { executionId: id });
    const r = await agent.resume(id, { approved: true });
    const n = ledger.charges().length;
    proof.say(`${wrapped ? 'idempotent' : 'plain function'}`.padEnd(16) + ` status=${r.status} charge fired ${n}×`);
    proof.check(
      n === (wrapped ? 1 : 2),
      wrapped ? 'wrapped: the second pass returned the cached result' : 'plain: the side effect fired again on resume',
    );
  }

  proof.section('the cache is per run');
  const ledger = env.ledger('per-run');
  const { agent } = refundAgent({ store: env.store, ledger });
  await agent.run(refundRequest('1042', 20), { executionId: 'per-run-1' });
  await agent.run(refundRequest('1042', 20), { executionId: 'per-run-2' });
  proof.check(ledger.charges().length === 2, 'a new execution id is a miss: each run charged once');

  proof.section('outside a run there is no cache');
  let fired = 0;
  const f = idempotent(async function outside() {
    fired++;
    return fired;
  });
  await f();
  await f();
  proof.say(`called twice outside any run → fired ${fired}×`);
  proof.check(fired === 2, 'outside a run the body runs every time');

  proof.section('a stored null is a hit');
  let nulls = 0;
  const lookup = idempotent(async function lookup() {
    nulls++;
    return null;
  });
  const t = tool({
    name: 'look',
    description: '',
    parameters: z.object({}),
    execute: async () => {
      await lookup();
      const { interrupt } = await import('../../client/index.js');
      return interrupt('confirm', null).approved;
    },
  });
  const m = new ScriptedModel(({ turn }) =>
    turn === 0 ? { toolCalls: [{ name: 'look', arguments: {} }] } : { content: 'ok' },
  );
  const a2 = new Agent({ name: 'n', model: m, tools: [t], checkpointer: env.store });
  await a2.run('go', { executionId: 'null-hit' });
  await a2.resume('null-hit', { approved: true });
  proof.check(nulls === 1, `a function returning null ran once across the resume (${nulls})`);

  proof.section('once the effect ran, its result is recorded as JSON would write it');
  let opaqueRuns = 0;
  const opaque = idempotent(async function opaque() {
    opaqueRuns++;
    return { receiptUrl: undefined, at: new Date(0), ids: new Set([1]) };
  });
  const t2 = tool({ name: 'opaque', description: '', parameters: z.object({}), execute: () => opaque() });
  const m2 = new ScriptedModel(({ turn, toolResults }) =>
    turn === 0 ? { toolCalls: [{ name: 'opaque', arguments: {} }] } : { content: toolResults[0].content },
  );
  const r2 = await new Agent({ name: 'o', model: m2, tools: [t2], checkpointer: env.store }).run('go');
  proof.say(`the model was told: ${JSON.stringify(r2.output)}`);
  proof.check(
    r2.output === '{"at":"1970-01-01T00:00:00.000Z","ids":{}}' && opaqueRuns === 1,
    'undefined dropped, Date as text, Set as {}: recorded, never a failure the model could retry',
  );

  proof.section('a result with no JSON form stops the run instead');
  const bigint = idempotent(async function bigint() {
    return 10n;
  });
  const t3 = tool({ name: 'bigint', description: '', parameters: z.object({}), execute: () => bigint() });
  const m3 = new ScriptedModel(({ turn }) =>
    turn === 0 ? { toolCalls: [{ name: 'bigint', arguments: {} }] } : { content: 'never' },
  );
  const code = await new Agent({ name: 'b', model: m3, tools: [t3], checkpointer: env.store })
    .run('go', { executionId: 'bigint' })
    .then(
      () => 'no error',
      (e: { code?: string }) => e.code,
    );
  const last = await env.store.latest('bigint');
  proof.say(`run() threw ${code}; newest row: ${last?.step} ${last?.status}; model calls: ${m3.calls}`);
  proof.check(
    code === 'EFFECT_NOT_RECORDED' && last?.step === 'run_end' && last.status === 'failed' && m3.calls === 1,
    'EFFECT_NOT_RECORDED escapes run() after a failed marker (no recovery runs the effect again) and the model is not told',
  );
  const entries = await env.store.listIdempotent('side-true');
  proof.check(entries.length === 1, 'the cache entry is a row of the run (and replicates with it)');
} finally {
  await env.close();
}
proof.finish();
