/** Boundary 1: what one run writes, and when. */
import { refundAgent, refundRequest } from '../agents/refund.js';
import { Proof, proofEnv, same } from './lib.js';

const proof = new Proof('Proof 1 · the rows a run writes');
const env = await proofEnv('rows');
try {
  const ledger = env.ledger('charges');
  const { agent } = refundAgent({ store: env.store, ledger });

  proof.section('a run that completes: one small refund');
  const small = await agent.run(refundRequest('1042', 20), { executionId: 'run-small' });
  proof.say(`status: ${small.status} · output: ${JSON.stringify(small.output)}`);
  const smallRows = await proof.rows(env.store, 'run-small');
  proof.check(
    same(smallRows, [
      'turn:0 llm_call completed',
      'turn:0/tool:refund tool_call completed',
      'turn:1 llm_call completed',
      'run_end run_end completed',
    ]),
    'a row before each model call and each tool, then a completed marker',
  );
  const toolRow = (await env.store.list('run-small'))[1];
  proof.check(
    same(toolRow.nodeInput, { order: '1042', amount: 20 }),
    "the tool row holds the tool's arguments, written before it ran",
  );
  proof.check(toolRow.agentPath === 'agent:refund-bot/tool:refund', 'every row says who wrote it (agent path)');

  proof.section('a run that pauses: a large refund');
  const large = await agent.run(refundRequest('1042', 50000), { executionId: 'run-large' });
  proof.say(
    `status: ${large.status} · pending: ${JSON.stringify({ reason: large.pendingInterrupt?.reason, nodeId: large.pendingInterrupt?.nodeId, agentPath: large.pendingInterrupt?.agentPath })}`,
  );
  const largeRows = await proof.rows(env.store, 'run-large');
  proof.check(
    same(largeRows, [
      'turn:0 llm_call completed',
      'turn:0/tool:refund tool_call completed',
      'turn:0/tool:refund hitl_pause interrupted',
    ]),
    'the pause is one more row, with status interrupted',
  );
  const pending = await env.store.getPendingInterrupt('run-large');
  proof.say(`pending row: ${JSON.stringify(pending?.context)}`);
  proof.check(
    pending?.checkpointId === (await env.store.latest('run-large'))?.id,
    'the pending row points at the interrupted row (committed together)',
  );
  proof.check(!largeRows.some((r) => r.startsWith('run_end')), 'a paused run has no run-end marker');
  proof.check(ledger.charges().length === 1, 'only the small refund charged');
  const state = await env.store.readState((await env.store.latest('run-large'))!);
  proof.check(
    Array.isArray(state.messages) && state.messages.length === 2,
    'each row carries the messages so far (decoded from the snapshot codec)',
  );
} finally {
  await env.close();
}
proof.finish();
