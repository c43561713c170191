/**
 * One process of the kill campaign's "concurrent resumers of successive
 * pauses" shape: a refund that needs two approvals in turn (manager, then
 * finance: two successive pauses of one tool). Several of these processes
 * share one SQLite store (and so one writer id) and one plane.
 *
 *   tsx resumers-worker.ts start   <db> <planeUrl> <apiKey> <executionId> <ledger>
 *     run until the first pause, flush, exit
 *   tsx resumers-worker.ts resume  <db> <planeUrl> <apiKey> <executionId> <ledger> <tag>
 *     answer every open pause (approver <tag>) until the run completes; a
 *     pause another resumer answered first is AlreadyResumed, and the loop
 *     reads again (so is RunInProgress: another resumer holds the run); while the run is mid-step it waits (never resumes without
 *     an answer: another resumer may be running the tool); a run that stays
 *     mid-step is left to recovery
 *   tsx resumers-worker.ts recover <db> <planeUrl> <apiKey> <executionId> <ledger>
 *     alone: finish the run (re-entering a step a killed resumer left), flush
 *
 * WAYMARK_FAULT=point:hits SIGKILLs the process at a named fault point.
 */
import { connectPlane, hasCode, type FaultHook } from '../../client/index.js';
import { faultPoint, killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { CHILD_LEASE_MS, Ledger, refundAgent, untilLeaseFree } from '../../examples/agents/refund.js';

const [mode, db, url, apiKey, executionId, ledgerPath, tag] = process.argv.slice(2);
const fault = process.env.WAYMARK_FAULT;
const faults: FaultHook | undefined = fault
  ? killAt(faultPoint(fault.split(':')[0]), { hits: Number(fault.split(':')[1] ?? 1) })
  : undefined;
const store = new SqliteCheckpointer({ path: db, faults });
const replica = connectPlane(store, {
  url,
  apiKey,
  pollMs: 200,
  debounceMs: 5,
  backoffBaseMs: 50,
  backoffCapMs: 500,
  timeoutMs: 3000,
  claimFlushMs: 2000,
  faults,
});
const { agent } = refundAgent({
  store,
  ledger: new Ledger(ledgerPath),
  twoApprovals: true,
  faults,
  leaseMs: CHILD_LEASE_MS,
});
// a slow claim guard (a flush and a plane round trip on a bad network: up to seconds in the field):
// the window in which another resumer answers the pause this one read and the run reaches the next
const planeGuard = store.planeGuard.current;
agent.claimGuard = async (pause) => {
  await planeGuard?.claim(pause);
  await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 400)));
};
const answer = () => ({ approved: true, metadata: { approver: tag ?? 'recovery' } });
const done = async () => {
  const latest = await store.latest(executionId);
  return latest?.step === 'run_end' && latest.status === 'completed';
};

if (mode === 'start') {
  const r = await agent.run(`Refund order ${executionId} amount 5000`, { executionId });
  if (r.status !== 'paused') throw new Error(`expected a pause, got ${r.status}`);
} else if (mode === 'resume') {
  // a run left mid-step for this long is taken to be a killed resumer's: recovery (run after every
  // resumer has exited, so never alongside one) finishes it; giving up early is always safe
  const STUCK_MS = 1500;
  let seen = '';
  let since = Date.now();
  while (!(await done())) {
    const latest = await store.latest(executionId);
    if (latest?.id !== seen) {
      seen = latest?.id ?? '';
      since = Date.now();
    }
    if (latest?.status !== 'interrupted') {
      if (Date.now() - since > STUCK_MS) break;
      await new Promise((r) => setTimeout(r, 10));
      continue;
    }
    try {
      await agent.resume(executionId, answer());
    } catch (e) {
      // answered by another resumer, or another resumer (live, or killed until its lease expires) holds the run
      if (!hasCode(e, 'ALREADY_RESUMED') && !hasCode(e, 'RUN_IN_PROGRESS')) throw e;
    }
  }
} else if (mode === 'recover') {
  for (let i = 0; i < 4 && !(await done()); i++) {
    // a resumer killed mid-step still holds the run until its lease (1 s) expires
    await untilLeaseFree(store, executionId);
    const latest = await store.latest(executionId);
    await agent.resume(executionId, latest?.status === 'interrupted' ? answer() : undefined);
  }
  if (!(await done())) throw new Error(`${executionId} did not complete in recovery`);
} else throw new Error(`unknown mode ${mode}`);
const s = await replica.flush({ timeoutMs: mode === 'recover' ? 60_000 : 20_000 });
await replica.stop();
await store.close();
process.stdout.write(
  JSON.stringify({ pendingRows: s.pendingRows, quarantined: s.quarantinedCount, lastError: s.lastError }) + '\n',
);
