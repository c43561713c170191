/** `waymark runs` and `waymark inspect`: read a local store and print it. */
import type { Checkpointer, ExecutionSummary } from '../checkpointer.js';

type Out = (line: string) => void;

const STATE_LABEL: Record<ExecutionSummary['state'], string> = {
  running: 'running/crashed (no marker)',
  paused: 'paused',
  completed: 'completed',
  failed: 'failed',
};

export function table(rows: string[][], out: Out): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows) out(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd());
}

export async function listRuns(store: Checkpointer, out: Out): Promise<number> {
  const rows: string[][] = [['EXECUTION', 'STATE', 'ROWS', 'LAST NODE', 'UPDATED']];
  let after: string | undefined;
  let count = 0;
  for (;;) {
    const page = await store.listExecutions({ afterExecutionId: after, limit: 500 });
    if (!page.length) break;
    for (const e of page) rows.push([e.executionId, STATE_LABEL[e.state], String(e.rowCount), e.lastNodeId, e.updatedAt]);
    count += page.length;
    after = page[page.length - 1].executionId;
  }
  if (count === 0) out('no runs in this store');
  else table(rows, out);
  return count;
}

export async function inspectRun(store: Checkpointer, executionId: string, out: Out): Promise<boolean> {
  const rows: string[][] = [['SEQ', 'NODE', 'STEP', 'STATUS', 'AGENT PATH', 'TIME']];
  let after = -1;
  for (;;) {
    const page = await store.list(executionId, { afterSeq: after, limit: 500 });
    if (!page.length) break;
    for (const r of page) rows.push([String(r.seq), r.nodeId, r.step, r.status, r.agentPath, r.createdAt]);
    after = page[page.length - 1].seq;
  }
  if (rows.length === 1) {
    out(`execution ${executionId}: no rows in this store`);
    return false;
  }
  out(`execution ${executionId}`);
  table(rows, out);
  const pending = await store.getPendingInterrupt(executionId);
  out('');
  out(pending ? `pending interrupt: ${pending.reason} at ${pending.nodeId} (${pending.agentPath})\n  context: ${JSON.stringify(pending.context)}` : 'pending interrupt: none');
  const idem = await store.listIdempotent(executionId);
  out(`idempotency entries: ${idem.length}`);
  for (const e of idem) out(`  ${e.key} → ${JSON.stringify(e.result)}`);
  return true;
}
