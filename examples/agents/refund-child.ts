/**
 * A child process that runs or resumes the refund agent and may be killed at
 * a named fault point (used by the proofs and the crash tests). argv: storeSpec ledgerPath executionId action amount [faultPoint hits]
 * action: run | resume-approve | resume
 */
import { faultPoint, killAt } from '../../client/testing/faults.js';
import { openStore } from '../../client/index.js';
import { CHILD_LEASE_MS, Ledger, refundAgent, refundRequest } from './refund.js';

const [spec, ledgerPath, executionId, action, amount, point, hits] = process.argv.slice(2);
const faults = point ? killAt(faultPoint(point), { hits: Number(hits ?? 1) }) : undefined;
const store = await openStore(spec, { faults, max: 4 });
const { agent, model } = refundAgent({
  store,
  ledger: new Ledger(ledgerPath),
  withNotify: action === 'run-notify',
  faults,
  leaseMs: CHILD_LEASE_MS,
});
let result;
let error: { code?: string; message: string } | undefined;
try {
  if (action === 'run' || action === 'run-notify')
    result = await agent.run(refundRequest('1042', Number(amount)), { executionId });
  else if (action === 'resume-approve')
    result = await agent.resume(executionId, { approved: true, metadata: { approver: 'child' } });
  else result = await agent.resume(executionId);
} catch (e) {
  error = { code: (e as { code?: string }).code, message: (e as Error).message };
}
process.stdout.write(JSON.stringify({ result, error, modelCalls: model.calls, pid: process.pid }) + '\n');
await store.close();
