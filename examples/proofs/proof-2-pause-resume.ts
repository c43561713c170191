/** Boundary 2: the process that paused and the one that resumes. */
import { refundAgent } from '../agents/refund.js';
import { Proof, proofEnv, same } from './lib.js';

const proof = new Proof('Proof 2 · pause in one process, resume in another');
const env = await proofEnv('pause');
try {
  const ledger = env.ledger('charges');
  proof.section('process A pauses and exits; process B (this one) resumes');
  const a = await env.child({ executionId: 'refund-1', action: 'run', amount: 50000, ledger });
  proof.say(
    `child pid=${a.pid} status=${a.out?.result?.status} context=${JSON.stringify(a.out?.result?.pendingInterrupt?.context)}`,
  );
  proof.check(a.code === 0 && a.out?.result?.status === 'paused', 'the child paused and exited cleanly');
  const { agent } = refundAgent({ store: env.store, ledger });
  const r = await agent.resume('refund-1', { approved: true, metadata: { approver: 'alice' } });
  proof.say(
    `this pid=${process.pid} resumed → status: ${r.status} · output: ${JSON.stringify(r.output)} · charges: ${JSON.stringify(ledger.charges().map((c) => ({ order: c.order, amount: c.amount })))}`,
  );
  proof.check(r.status === 'completed' && ledger.charges().length === 1, 'the resume finished the run with one charge');
  const paused = (await env.store.list('refund-1')).find((x) => x.step === 'hitl_pause');
  proof.check(
    same(paused?.interruptContext, { order: '1042', amount: 50000, balance: 100 }),
    'the approver context is JSON frozen at the pause',
  );

  proof.section('a second resume is refused');
  try {
    await agent.resume('refund-1', { approved: true });
    proof.check(false, 'a second resume raises AlreadyResumed');
  } catch (e) {
    proof.say(`${(e as Error).name}: ${(e as Error).message}`);
    proof.check((e as { code?: string }).code === 'ALREADY_RESUMED', 'a second resume raises AlreadyResumed');
  }

  proof.section('five resumer processes race for one pause');
  const race = env.ledger('race');
  const p = await env.child({ executionId: 'refund-race', action: 'run', amount: 50000, ledger: race });
  proof.check(p.out?.result?.status === 'paused', 'the run paused');
  const outcomes = await Promise.all(
    Array.from({ length: 5 }, () => env.child({ executionId: 'refund-race', action: 'resume-approve', ledger: race })),
  );
  const labels = outcomes.map((o) => o.out?.result?.status ?? o.out?.error?.code ?? `exit ${o.code}`);
  proof.say(`outcomes: ${JSON.stringify(labels.sort())}`);
  proof.check(labels.filter((l) => l === 'completed').length === 1, 'exactly one resumer completed');
  proof.check(labels.filter((l) => l === 'ALREADY_RESUMED').length === 4, 'the other four got AlreadyResumed');
  proof.check(race.charges().length === 1, `one charge across five processes (${race.charges().length})`);
} finally {
  await env.close();
}
proof.finish();
