/**
 * One client process of the kill campaign: its own SQLite store, connected to
 * the plane, running (or recovering) a small workload. WAYMARK_FAULT=point:hits
 * SIGKILLs it at a named fault point.
 *
 *   tsx worker.ts <work|recover> <db> <planeUrl> <apiKey> <trial> <ledger>
 *
 * WAYMARK_FAULT_FROM=again counts fault hits only from the deletion of the
 * run that is deleted and started again under one id.
 */
import { connectPlane, type FaultHook } from '../../client/index.js';
import { faultPoint, killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { CHILD_LEASE_MS, Ledger, refundAgent, untilLeaseFree } from '../../examples/agents/refund.js';

const [mode, db, url, apiKey, trial, ledgerPath] = process.argv.slice(2);
const fault = process.env.WAYMARK_FAULT;
const kill = fault ? killAt(faultPoint(fault.split(':')[0]), { hits: Number(fault.split(':')[1] ?? 1) }) : undefined;
// WAYMARK_FAULT_FROM=again: hits count only from the deletion of the run started again (a shape aimed at that batch)
let armed = process.env.WAYMARK_FAULT_FROM !== 'again';
const faults: FaultHook | undefined = kill ? (point) => void (armed && kill(point)) : undefined;
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
const ledger = new Ledger(ledgerPath);

/** The workload: a small refund, two that pause (charge before / after approval), and a fork. */
export const RUNS = [
  { id: `${trial}-small`, order: `${trial}-small`, amount: 20, before: false },
  { id: `${trial}-before`, order: `${trial}-before`, amount: 5000, before: true },
  { id: `${trial}-after`, order: `${trial}-after`, amount: 5000, before: false },
];
const FORK = `${trial}-fork`;
const agentFor = (before: boolean) =>
  refundAgent({ store, ledger, chargeBeforeApproval: before, faults, leaseMs: CHILD_LEASE_MS }).agent;
const approve = { approved: true, metadata: { approver: 'campaign' } };

async function drive(run: (typeof RUNS)[number]): Promise<void> {
  const agent = agentFor(run.before);
  // a killed worker still holds its runs until their leases (1 s) expire
  await untilLeaseFree(store, run.id);
  const latest = await store.latest(run.id);
  let r;
  if (!latest) r = await agent.run(`Refund order ${run.order} amount ${run.amount}`, { executionId: run.id });
  else if (latest.step === 'run_end' && latest.status === 'completed') return;
  else if (latest.status === 'interrupted') r = await agent.resume(run.id, approve);
  else r = await agent.resume(run.id);
  if (r.status === 'paused') r = await agent.resume(run.id, approve);
  if (r.status !== 'completed') throw new Error(`${run.id} ended ${r.status}: ${JSON.stringify(r.error)}`);
}

async function driveFork(): Promise<void> {
  const agent = agentFor(false);
  await untilLeaseFree(store, FORK);
  const latest = await store.latest(FORK);
  if (!latest) await agent.fork(RUNS[0].id, { executionId: FORK });
  else if (!(latest.step === 'run_end' && latest.status === 'completed')) await agent.resume(FORK);
}

/**
 * Delete and restart under one id while connected: a run
 * under AGAIN completes and is synced, then is deleted and started again
 * (another order) under the same id; the deletion and the new rows drain
 * together. A meta note set before the deletion makes recovery finish the
 * deletion rather than run the first order again.
 */
export const AGAIN = `${trial}-again`;
export const AGAIN_ORDERS = [`${trial}-again1`, `${trial}-again2`];
async function driveAgain(): Promise<void> {
  const request = (order: string) => ({ id: AGAIN, order, amount: 20, before: false });
  if ((await store.getMeta('campaign.again')) !== 'deleting') {
    await drive(request(AGAIN_ORDERS[0]));
    const s = await replica.flush({ timeoutMs: 20_000 });
    if (s.pendingRows !== 0) return; // the plane is away: recovery deletes and restarts once it is back
    await store.setMeta('campaign.again', 'deleting');
  }
  const first = (await store.list(AGAIN, { limit: 1 }))[0];
  const isSecond = first && JSON.stringify(await store.readState(first)).includes(AGAIN_ORDERS[1]);
  armed = true;
  if (first && !isSecond) await store.deleteExecution(AGAIN);
  await drive(request(AGAIN_ORDERS[1]));
}

for (const run of RUNS) await drive(run);
await driveFork();
await driveAgain();
const s = await replica.flush({ timeoutMs: mode === 'recover' ? 60_000 : 20_000 });
await replica.stop();
await store.close();
process.stdout.write(
  JSON.stringify({ pendingRows: s.pendingRows, quarantined: s.quarantinedCount, lastError: s.lastError }) + '\n',
);
