/**
 * One machine of the kill campaign's "catch-up restores after an offline
 * double claim" shape: its own SQLite store (its own writer
 * id), a refund run that pauses for a manager's approval.
 *
 *   tsx double-claim-worker.ts start   <db> <planeUrl> <apiKey> <executionId> <ledger>
 *     run until the pause, drain it to the plane
 *   tsx double-claim-worker.ts restore <db> <planeUrl> <apiKey> <executionId> <ledger>
 *     restore the paused run from the plane (a second machine that holds it)
 *   tsx double-claim-worker.ts resume  <db> <planeUrl> <apiKey> <executionId> <ledger> <approver>
 *     answer the pause with the plane unreachable (<planeUrl> resets every
 *     connection): the claim guard finds the plane offline, the local claim
 *     stands, the run completes; nothing reaches the plane.
 *     WAYMARK_FAULT=point:hits SIGKILLs it at a named fault point
 *   tsx double-claim-worker.ts catchup <db> <planeUrl> <apiKey> <executionId> <ledger>
 *     back online: drain, then a catch-up restoreFromPlane of the run; then a
 *     fresh handle reads every row of the store
 *
 * Each mode prints one JSON line on stdout.
 */
import { connectPlane, restoreFromPlane, type FaultHook } from '../../client/index.js';
import { faultPoint, killAt } from '../../client/testing/faults.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { CHILD_LEASE_MS, Ledger, refundAgent, refundRequest, untilLeaseFree } from '../../examples/agents/refund.js';

const [mode, db, url, apiKey, executionId, ledgerPath, approver] = process.argv.slice(2);
const fault = process.env.WAYMARK_FAULT;
const faults: FaultHook | undefined = fault
  ? killAt(faultPoint(fault.split(':')[0]), { hits: Number(fault.split(':')[1] ?? 1) })
  : undefined;
const store = new SqliteCheckpointer({ path: db, faults });
const out = (v: unknown) => process.stdout.write(JSON.stringify(v) + '\n');

if (mode === 'start') {
  const replica = connectPlane(store, { url, apiKey, pollMs: 200, debounceMs: 5, timeoutMs: 3000 });
  const { agent } = refundAgent({ store, ledger: new Ledger(ledgerPath), leaseMs: CHILD_LEASE_MS });
  const r = await agent.run(refundRequest(executionId, 5000), { executionId });
  if (r.status !== 'paused') throw new Error(`expected a pause, got ${r.status}`);
  const s = await replica.flush({ timeoutMs: 30_000 });
  await replica.stop();
  if (s.pendingRows !== 0) throw new Error(`the pause did not reach the plane: ${JSON.stringify(s)}`);
  out({ paused: true });
} else if (mode === 'restore') {
  const r = await restoreFromPlane(store, executionId, { url, apiKey });
  out(r);
} else if (mode === 'resume') {
  const replica = connectPlane(store, {
    url,
    apiKey,
    pollMs: 200,
    debounceMs: 5,
    backoffBaseMs: 50,
    backoffCapMs: 500,
    timeoutMs: 1000,
    claimFlushMs: 500,
    faults,
  });
  const offline: unknown[] = [];
  replica.on('claim_offline', (e) => offline.push(e));
  const { agent } = refundAgent({ store, ledger: new Ledger(ledgerPath), faults, leaseMs: CHILD_LEASE_MS });
  await untilLeaseFree(store, executionId);
  const r = await agent.resume(executionId, { approved: true, metadata: { approver } });
  await replica.stop();
  if (r.status !== 'completed') throw new Error(`${executionId} ended ${r.status}: ${JSON.stringify(r.error)}`);
  const stats = await store.outboxStats();
  out({ status: r.status, claimOffline: offline.length, pendingRows: stats.pendingCount });
} else if (mode === 'catchup') {
  const replica = connectPlane(store, {
    url,
    apiKey,
    pollMs: 200,
    debounceMs: 5,
    backoffBaseMs: 50,
    backoffCapMs: 500,
    timeoutMs: 3000,
  });
  const s = await replica.flush({ timeoutMs: 30_000 });
  await replica.stop();
  let restore: unknown;
  try {
    restore = await restoreFromPlane(store, executionId, { url, apiKey });
  } catch (e) {
    restore = { error: { code: (e as { code?: string }).code, message: (e as Error).message } };
  }
  // every row read back by a fresh handle (no cursor cache): a grafted row fails here with CORRUPT_ROW
  const fresh = new SqliteCheckpointer({ path: db });
  const unreadable: string[] = [];
  try {
    for (const row of await fresh.list(executionId)) {
      try {
        await fresh.readState(row);
      } catch (e) {
        unreadable.push(`seq ${row.seq}: ${(e as { code?: string }).code ?? ''} ${(e as Error).message}`);
      }
    }
  } finally {
    await fresh.close();
  }
  out({ pendingRows: s.pendingRows, quarantined: s.quarantinedCount, restore, unreadable });
} else throw new Error(`unknown mode ${mode}`);
await store.close();
