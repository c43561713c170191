/**
 * The Postgres store's import (`importRows`): rows from a bundle (a restore
 * from the plane) inserted as synced (an outbox event marked sent, so the
 * run shows as held by a plane), never overwriting a local row. Inside
 * the caller's transaction, each execution the bundle names is locked first,
 * the local rows the plan can ask about are read, the plan
 * (client/store/import.ts) is written, pauses that are no longer the newest
 * row are dropped as stale, and the bundle's pause and idempotency entries
 * are added.
 */
import type { Checkpoint, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
import type * as C from '../checkpointer.js';
import { toColumns } from '../store/columns.js';
import { importResultOf, planImport } from '../store/import.js';
import { canonicalTime } from '../store/rows.js';
import { codePointOrder } from '../../shared/text.js';
import { ADVANCE, lockExecution } from './executions.js';
import { textList, type Tables, type Tx } from './tables.js';

/** Write a checked bundle inside the caller's transaction; `dropped` hears each execution whose newest row moved. */
export async function importInto(
  tx: Tx,
  t: Tables,
  bundle: { checkpoints: Checkpoint[]; pending: PendingInterrupt | null; idempotency: IdempotencyEntry[] },
  dropped: (executionId: string) => void,
): Promise<C.ImportResult> {
  const { checkpoints, pending, idempotency: idem } = bundle;
  const executionIds = [...new Set(checkpoints.map((c) => c.executionId))].sort(codePointOrder);
  // lock each execution (a placeholder row when new) so no writer moves it while the plan is made and written
  for (const e of executionIds) await lockExecution(tx, t, e);
  // the local rows the plan can ask about: the bundle's seq range (and the row before it) per execution, and the bundle's ids
  const range = new Map<string, { lo: number; hi: number }>();
  for (const c of checkpoints) {
    const r = range.get(c.executionId);
    if (!r) range.set(c.executionId, { lo: c.seq, hi: c.seq });
    else {
      r.lo = Math.min(r.lo, c.seq);
      r.hi = Math.max(r.hi, c.seq);
    }
  }
  const at = new Map<string, string>();
  for (const e of executionIds) {
    const { lo: first, hi } = range.get(e)!;
    const lo = Math.max(0, first - 1);
    const local = await tx<{ id: string; seq: string | number }[]>`
      SELECT id, seq FROM ${t.checkpoints} WHERE execution_id = ${e} AND seq >= ${lo} AND seq <= ${hi}`;
    for (const r of local) at.set(`${e}\u0000${Number(r.seq)}`, r.id);
  }
  const found = new Map<string, { executionId: string; seq: number }>();
  if (checkpoints.length) {
    const rows = await tx<{ id: string; execution_id: string; seq: string | number }[]>`
      SELECT id, execution_id, seq FROM ${t.checkpoints} WHERE id IN ${textList(
        tx,
        checkpoints.map((c) => c.id),
      )}`;
    for (const r of rows) found.set(r.id, { executionId: r.execution_id, seq: Number(r.seq) });
  }
  const plan = planImport(checkpoints, {
    idAt: (e, seq) => at.get(`${e}\u0000${seq}`) ?? null,
    find: (id) => found.get(id) ?? null,
  });
  const res = importResultOf(plan);
  for (const c of plan.insert) {
    await tx`INSERT INTO ${t.checkpoints} ${tx(toColumns.checkpoint(c))}`;
    await tx`UPDATE ${t.executions} SET ${tx(toColumns.execution(c), ...ADVANCE)}
      WHERE execution_id = ${c.executionId} AND next_seq <= ${c.seq}`;
    dropped(c.executionId);
    res.inserted++;
  }
  // each restored checkpoint's event, already sent: the plane holds the row (heldByPlane reads it), nothing is queued
  if (plan.insert.length) {
    const at = canonicalTime();
    const sent = plan.insert.map((c) => ({
      id: c.id,
      kind: 'checkpoint',
      execution_id: c.executionId,
      payload: null,
      bytes: 0,
      created_at: at,
      synced: true,
    }));
    await tx`INSERT INTO ${t.outbox} ${tx(sent)} ON CONFLICT (id) DO NOTHING`;
  }
  // an execution row left as a placeholder (nothing written) must not stay empty
  if (executionIds.length) {
    await tx`DELETE FROM ${t.executions}
      WHERE last_id = '' AND execution_id IN ${textList(tx, executionIds)}`;
  }
  const touched = [...new Set([...executionIds, ...(pending ? [pending.executionId] : [])])].sort();
  for (const e of touched) {
    // a pause is open only while its checkpoint is the newest row: one that is not is stale
    const [open] = await tx<{ checkpoint_id: string }[]>`
      SELECT checkpoint_id FROM ${t.pending} WHERE execution_id = ${e} FOR UPDATE`;
    if (!open) continue;
    const [latest] = await tx<{ id: string }[]>`
      SELECT id FROM ${t.checkpoints} WHERE execution_id = ${e} ORDER BY seq DESC LIMIT 1`;
    if (open.checkpoint_id !== latest?.id) {
      await tx`DELETE FROM ${t.pending} WHERE execution_id = ${e} AND checkpoint_id = ${open.checkpoint_id}`;
      res.stalePendingRemoved.push({ executionId: e, checkpointId: open.checkpoint_id });
    }
  }
  if (pending) {
    const [latest] = await tx<{ id: string }[]>`
      SELECT id FROM ${t.checkpoints} WHERE execution_id = ${pending.executionId} ORDER BY seq DESC LIMIT 1`;
    if (latest?.id === pending.checkpointId) {
      const ins =
        await tx`INSERT INTO ${t.pending} ${tx(toColumns.pending(pending))} ON CONFLICT (execution_id) DO NOTHING`;
      res.pendingImported = ins.count === 1;
    }
  }
  for (const e of idem) {
    const ins =
      await tx`INSERT INTO ${t.idempotency} ${tx(toColumns.idempotency(e))} ON CONFLICT (execution_id, key) DO NOTHING`;
    res.idempotencyInserted += ins.count;
  }
  return res;
}
