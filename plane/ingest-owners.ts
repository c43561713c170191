/**
 * Ingest under the run's one owner (owners.ts): before a batch's checkpoints
 * are stored, each is held against the plane's chain and owner; after, the
 * owner record follows the rows that were accepted. The plane keeps one
 * branch per run: it never accepts a row after a completed or cancelled
 * marker, a row that does not follow the plane's own newest row, or any later
 * row of a writer whose row it refused for either reason (the writer is
 * fenced until it acquires the run again).
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Checkpoint } from '../shared/rows.js';
import { checkpoints, runOwners } from './db/schema.js';
import { type Item, reject, type Tx } from './ingest.js';
import { fenceWriter, followRows, PLANE_WRITER } from './owners.js';

const checkpointOf = (i: Item): Checkpoint | null => (!i.result && i.event?.kind === 'checkpoint' ? i.event.row : null);
const isCancel = (r: Pick<Checkpoint, 'step' | 'status'>) => r.step === 'run_end' && r.status === 'cancelled';

/**
 * Refuse (`taken_over`) each new checkpoint of the batch that:
 * - comes after the run's completed or cancelled marker on the plane;
 * - belongs to a run another writer owns with a live hold (a cancel marker
 *   excepted: a cancel is a change of owner anyone holding the run may make);
 * - does not follow the row before it (the plane's, or the batch's own);
 * - or follows a row of the batch refused here.
 * A row at a seq the plane holds under another id is left to the insert
 * (seq_conflict), and its writer's later rows of the batch are refused here.
 * Each refusal fences the writer from the seq before it, so its later batches
 * are refused too (ingest's refuseTakenOver).
 */
export async function refuseOffBranch(tx: Tx, projectId: string, writerId: string, items: Item[]): Promise<void> {
  // a run the batch deletes starts again under its id after the deletion: its new rows follow nothing the plane holds
  const deleted = new Set(items.flatMap((i) => (!i.result && i.event?.kind === 'execution_deleted' ? [i.event.executionId] : [])));
  const rows = items.filter((i) => checkpointOf(i) && !deleted.has(checkpointOf(i)!.executionId));
  if (!rows.length) return;
  const ids = [...new Set(rows.map((i) => checkpointOf(i)!.executionId))];
  const held = new Set(
    (
      await tx
        .select({ id: checkpoints.id })
        .from(checkpoints)
        .where(
          and(
            eq(checkpoints.projectId, projectId),
            inArray(
              checkpoints.id,
              rows.map((i) => checkpointOf(i)!.id),
            ),
          ),
        )
    ).map((r) => r.id),
  );
  const fresh = rows.filter((i) => !held.has(checkpointOf(i)!.id));
  if (!fresh.length) return;
  const owners = new Map(
    (
      await tx
        .select({ executionId: runOwners.executionId, writerId: runOwners.writerId, epoch: runOwners.epoch, live: sql<boolean>`${runOwners.state} = 'held' AND ${runOwners.expiresAt} > now()` })
        .from(runOwners)
        .where(and(eq(runOwners.projectId, projectId), inArray(runOwners.executionId, ids)))
    ).map((o) => [o.executionId, o]),
  );
  // the plane's rows at the seqs the batch writes and the one before each: what each new row must follow
  const seqs = fresh.map((i) => checkpointOf(i)!.seq);
  const planeRows = await tx
    .select({ executionId: checkpoints.executionId, seq: checkpoints.seq, id: checkpoints.id, step: checkpoints.step, status: checkpoints.status, writerId: checkpoints.writerId })
    .from(checkpoints)
    .where(and(eq(checkpoints.projectId, projectId), inArray(checkpoints.executionId, ids), sql`${checkpoints.seq} >= ${Math.max(0, Math.min(...seqs) - 1)}`));
  const at = new Map(planeRows.map((r) => [`${r.executionId}\u0000${r.seq}`, r]));
  const newest = new Map<string, (typeof planeRows)[number]>();
  for (const r of planeRows) if ((newest.get(r.executionId)?.seq ?? -1) < r.seq) newest.set(r.executionId, r);
  const accepted = new Map<string, string>();
  const refusedFrom = new Map<string, number>();
  for (const item of fresh) {
    const row = checkpointOf(item)!;
    const key = (seq: number) => `${row.executionId}\u0000${seq}`;
    const refuse = async (why: string, fenceAt: number, winner: string) => {
      reject(item, 'taken_over', `execution ${row.executionId}: ${why}; this writer's later rows of the run are refused until it takes the run again`);
      if (!refusedFrom.has(row.executionId)) {
        refusedFrom.set(row.executionId, row.seq);
        await fenceWriter(tx, projectId, row.executionId, writerId, winner, fenceAt);
      }
    };
    if (refusedFrom.has(row.executionId)) {
      await refuse(`row ${row.id} follows row(s) of this batch the plane refused (from seq ${refusedFrom.get(row.executionId)})`, row.seq - 1, PLANE_WRITER);
      continue;
    }
    const end = newest.get(row.executionId);
    if (end && end.step === 'run_end' && (end.status === 'completed' || end.status === 'cancelled') && row.seq > end.seq) {
      await refuse(`the run ended at seq ${end.seq} (${end.status}) on the plane`, end.seq, end.writerId);
      continue;
    }
    const owner = owners.get(row.executionId);
    if (owner?.live && owner.writerId !== writerId && !isCancel(row)) {
      await refuse(`writer '${owner.writerId}' owns the run (epoch ${owner.epoch})`, row.seq - 1, owner.writerId);
      continue;
    }
    const there = at.get(key(row.seq));
    if (there && there.id !== row.id) {
      // seq_conflict at the insert; the rest of this writer's branch is refused here
      refusedFrom.set(row.executionId, row.seq);
      await fenceWriter(tx, projectId, row.executionId, writerId, there.writerId, row.seq - 1);
      continue;
    }
    if (row.seq > 0) {
      const before = accepted.get(key(row.seq - 1)) ?? at.get(key(row.seq - 1))?.id ?? null;
      const follows = row.state.kind === 'delta' ? row.state.prev : null;
      if (before !== null && follows !== null && follows !== before) {
        await refuse(`row ${row.id} follows row ${follows}, which the plane does not hold at seq ${row.seq - 1} (it holds ${before})`, row.seq - 1, at.get(key(row.seq - 1))?.writerId ?? PLANE_WRITER);
        continue;
      }
    }
    accepted.set(key(row.seq), row.id);
  }
}

/** After the batch's rows are stored: each run's owner follows what was accepted (owners.ts followRows). */
export async function followAccepted(tx: Tx, projectId: string, writerId: string, items: Item[], floorMs: number): Promise<void> {
  const runs = new Map<string, { last: Checkpoint | null; paused: boolean }>();
  for (const i of items) {
    // stored by this batch (a redelivered row changed nothing when it came again)
    if (i.result) continue;
    const e = i.event;
    if (!e || (e.kind !== 'checkpoint' && e.kind !== 'interrupt_opened')) continue;
    const r = runs.get(i.executionId!) ?? { last: null, paused: false };
    if (e.kind === 'checkpoint') {
      if (!r.last || e.row.seq > r.last.seq) r.last = e.row;
      r.paused = r.paused && e.row.status === 'interrupted';
    } else r.paused = true;
    runs.set(i.executionId!, r);
  }
  if (runs.size) await followRows(tx, projectId, writerId, runs, floorMs);
}
