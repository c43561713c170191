/** Boundary 3: a crash and a rerun — resume re-enters at the newest row. */
import { refundAgent } from '../agents/refund.js';
import { Proof, proofEnv, same } from './lib.js';

const proof = new Proof('Proof 3 · crashes re-enter at the newest row');
const env = await proofEnv('crash');
try {
  proof.section('killed inside the tool (SIGKILL)');
  let ledger = env.ledger('tool');
  let c = await env.child({ executionId: 'crash-tool', action: 'run', amount: 20, ledger, kill: 'runtime.beforeTool' });
  proof.say(`child signal: ${c.signal}`);
  await proof.rows(env.store, 'crash-tool');
  let fresh = refundAgent({ store: env.store, ledger });
  let r = await fresh.agent.resume('crash-tool');
  proof.say(
    `resume → status=${r.status} model calls=${fresh.model.calls} charges=${JSON.stringify(ledger.charges().map((x) => x.amount))}`,
  );
  proof.check(c.signal === 'SIGKILL', 'the child was killed');
  proof.check(
    r.status === 'completed' && fresh.model.calls === 1,
    'the tool ran again from its saved arguments; the model was called only for the next turn',
  );
  proof.check(ledger.charges().length === 1, 'one charge');

  proof.section('killed waiting on the model');
  ledger = env.ledger('model');
  c = await env.child({
    executionId: 'crash-model',
    action: 'run',
    amount: 20,
    ledger,
    kill: 'runtime.beforeModel',
    hits: 2,
  });
  await proof.rows(env.store, 'crash-model');
  fresh = refundAgent({ store: env.store, ledger });
  r = await fresh.agent.resume('crash-model');
  proof.say(
    `resume → status=${r.status} model calls=${fresh.model.calls} charges after resume=${ledger.charges().length}`,
  );
  proof.check(r.status === 'completed' && fresh.model.calls === 1, 'the model was re-issued once');
  proof.check(ledger.charges().length === 1, 'the tool that ran before the crash did not run again');

  proof.section('two tools in one turn; the first pauses');
  ledger = env.ledger('siblings');
  const sib = refundAgent({ store: env.store, ledger, withNotify: true });
  const p = await sib.agent.run('Refund order 1042 amount 50000', { executionId: 'siblings' });
  proof.say(
    `status: ${p.status} · notify ran during the first pass: ${ledger.entries().filter((e) => e.kind === 'notify').length}`,
  );
  let shown: string[] = [];
  const gen = sib.model.generate.bind(sib.model);
  sib.model.generate = async (req) => {
    shown = req.messages.filter((m) => m.role === 'tool').map((m) => (m as { content: string }).content);
    return gen(req);
  };
  r = await sib.agent.resume('siblings', { approved: true });
  proof.say(`resume → ${r.status} · tool results the model saw: ${JSON.stringify(shown)}`);
  proof.check(ledger.entries().filter((e) => e.kind === 'notify').length === 0, 'the sibling notify never ran');
  proof.check(shown.length === 2 && /not run on resume/.test(shown[1]), 'the model was told the sibling did not run');

  proof.section('a tool re-invoked after a crash can pause');
  ledger = env.ledger('ctp');
  c = await env.child({
    executionId: 'crash-then-pause',
    action: 'run',
    amount: 50000,
    ledger,
    kill: 'runtime.beforeTool',
  });
  fresh = refundAgent({ store: env.store, ledger });
  const cp = await fresh.agent.resume('crash-then-pause');
  proof.say(`crash resume → status: ${cp.status} · node: ${cp.pendingInterrupt?.nodeId}`);
  proof.check(
    cp.status === 'paused' && (await env.store.getPendingInterrupt('crash-then-pause')) !== null,
    'the pause was recorded with its pending row',
  );
  r = await fresh.agent.resume('crash-then-pause', { approved: true });
  proof.say(`approve → status: ${r.status} · charges: ${JSON.stringify(ledger.charges().map((x) => x.amount))}`);
  proof.check(
    r.status === 'completed' &&
      same(
        ledger.charges().map((x) => x.amount),
        [50000],
      ),
    'approving it finished the run with one charge',
  );

  proof.section('killed right after claiming the pause');
  ledger = env.ledger('claim');
  await env.child({ executionId: 'crash-claim', action: 'run', amount: 50000, ledger });
  c = await env.child({
    executionId: 'crash-claim',
    action: 'resume-approve',
    ledger,
    kill: 'store.claim.afterCommit',
  });
  fresh = refundAgent({ store: env.store, ledger });
  r = await fresh.agent.resume('crash-claim');
  proof.say(
    `claimer signal: ${c.signal} · recovery resume (no value needed) → ${r.status} · charges: ${ledger.charges().length}`,
  );
  proof.check(
    r.status === 'completed' && ledger.charges().length === 1,
    'the answer was committed with the claim; the run finished once',
  );
} finally {
  await env.close();
}
proof.finish();
