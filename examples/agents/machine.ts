/**
 * One "machine" in a fleet: its own SQLite file, connected to a plane. Used by
 * the handoff proof and tests, each call a separate process.
 *
 *   tsx machine.ts <pause|restore-resume|resume|sync> <db> <planeUrl> <apiKey> <executionId> <ledger> [claimFlushMs]
 */
import { connectPlane, restoreFromPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { Ledger, refundAgent, refundRequest } from './refund.js';

const [action, db, url, apiKey, executionId, ledgerPath, claimFlushMs] = process.argv.slice(2);
const store = new SqliteCheckpointer({ path: db });
const replica = connectPlane(store, {
  url,
  apiKey,
  pollMs: 0,
  timeoutMs: 5000,
  claimFlushMs: Number(claimFlushMs ?? 5000),
});
const { agent } = refundAgent({ store, ledger: new Ledger(ledgerPath), chargeBeforeApproval: true });
const out: Record<string, unknown> = { pid: process.pid, writerId: store.writerId };
try {
  if (action === 'pause') {
    out.result = await agent.run(refundRequest('1042', 50000), { executionId });
  } else if (action === 'restore-resume') {
    const progress: string[] = [];
    out.restore = await restoreFromPlane(store, executionId, {
      url,
      apiKey,
      pageSize: 2,
      onProgress: (p) => progress.push(`${p.rows}/${p.totalRows}`),
    });
    out.progress = progress;
    out.result = await agent.resume(executionId, { approved: true, metadata: { approver: 'bob' } });
  } else if (action === 'resume') {
    out.result = await agent.resume(executionId, { approved: true, metadata: { approver: 'late' } });
  }
} catch (e) {
  out.error = { code: (e as { code?: string }).code, message: (e as Error).message };
}
out.flush = await replica.flush({ timeoutMs: action === 'resume' && Number(claimFlushMs) < 1000 ? 200 : 15_000 });
await replica.stop();
out.rowIds = (await store.list(executionId)).map((r) => r.id);
await store.close();
process.stdout.write(JSON.stringify(out) + '\n');
