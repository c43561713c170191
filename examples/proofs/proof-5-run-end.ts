/** Boundary 5: a run that ended and one that died — the marker. */
import { ScriptedModel, type ScriptContext } from '../../client/index.js';
import { refundAgent, refundModel, refundRequest } from '../agents/refund.js';
import { Proof, proofEnv } from './lib.js';

const proof = new Proof('Proof 5 · the run-end marker');
const env = await proofEnv('run-end');
try {
  const ledger = env.ledger('charges');
  const { agent } = refundAgent({ store: env.store, ledger });

  proof.section('a finished run refuses to resume');
  await agent.run(refundRequest('1042', 20), { executionId: 'done-1' });
  const last = (await env.store.latest('done-1'))!;
  proof.say(`last row: #${last.seq} ${last.nodeId} step=${last.step} status=${last.status}`);
  try {
    await agent.resume('done-1');
    proof.check(false, 'resume of a completed run raises AlreadyFinished');
  } catch (e) {
    proof.say(`resume → ${(e as Error).name}: ${(e as Error).message}`);
    proof.check(
      (e as { code?: string }).code === 'ALREADY_FINISHED',
      'resume of a completed run raises AlreadyFinished',
    );
  }

  proof.section('a run that raised stays resumable');
  const failLedger = env.ledger('fail');
  const inner = refundModel();
  let failOnce = true;
  const flaky = new ScriptedModel((ctx: ScriptContext) => {
    if (ctx.turn === 1 && failOnce) {
      failOnce = false;
      throw new Error('provider returned 503');
    }
    return (
      inner as unknown as { rule: (c: ScriptContext) => ReturnType<ConstructorParameters<typeof ScriptedModel>[0]> }
    ).rule(ctx);
  });
  const failing = refundAgent({ store: env.store, ledger: failLedger, model: flaky });
  const f = await failing.agent.run(refundRequest('1042', 20), { executionId: 'fail-1' });
  const fl = (await env.store.latest('fail-1'))!;
  proof.say(`run → ${f.status} (${f.error?.message}) · last row: #${fl.seq} ${fl.nodeId} status=${fl.status}`);
  proof.check(
    f.status === 'failed' && fl.step === 'run_end' && fl.status === 'failed',
    'an escaping exception wrote a failed marker',
  );
  const again = await failing.agent.resume('fail-1');
  proof.say(`resume → ${again.status} · charges: ${failLedger.charges().length}`);
  proof.check(
    again.status === 'completed' && failLedger.charges().length === 1,
    'resume stepped over the marker; the tool did not run again',
  );

  proof.section('a fork branches a finished run under a new id');
  const before = await env.store.list('done-1');
  const fork = await agent.fork('done-1');
  const after = await env.store.list('done-1');
  proof.say(
    `fork → execution_id=${fork.executionId} status=${fork.status} · original rows: ${before.length} → ${after.length}`,
  );
  proof.check(
    fork.status === 'completed' && after.length === before.length && fork.executionId !== 'done-1',
    'the original is untouched',
  );
  try {
    await agent.fork('done-1', { checkpointId: last.id });
    proof.check(false, 'a fork from the marker is refused');
  } catch (e) {
    proof.say(`fork from the marker → ${(e as Error).name}: ${(e as Error).message}`);
    proof.check((e as { code?: string }).code === 'CHECKPOINT_ERROR', 'a fork from the marker is refused');
  }

  proof.section('prune keeps every pause');
  await agent.run(refundRequest('1042', 50000), { executionId: 'paused-1' });
  await env.store.putIdempotent('paused-1', 'charge-before-pause', { charged: true });
  const res = await env.store.prune({ olderThan: new Date(Date.now() + 1000), includeUnsynced: true });
  const left = (await env.store.listExecutions()).map((e) => e.executionId);
  proof.say(
    `prune → deleted ${res.checkpoints} rows of ${res.executions} runs · still stored: ${JSON.stringify(left)}`,
  );
  proof.check(JSON.stringify(left) === JSON.stringify(['paused-1']), 'only the paused run is left');
  proof.check((await env.store.getPendingInterrupt('paused-1')) !== null, 'its pending row is kept');
  proof.check(
    (await env.store.getIdempotent('paused-1', 'charge-before-pause')).hit,
    'its idempotency entries are kept',
  );
} finally {
  await env.close();
}
proof.finish();
