/**
 * Ingest under the run's one owner (owners.ts): before a batch's checkpoints
 * are stored, each is held against the plane's chain and owner; after, the
 * owner record follows the rows that were accepted. The plane keeps one
 * branch per run: it never accepts a row after a completed or cancelled
 * marker, a row of a run another writer holds live, a row that follows
 * another branch's row (a delta whose `prev` is not the plane's row before
 * it), nor any later row of a writer refused for one of these or whose row
 * met another at its seq (seq_conflict): that writer is fenced until it
 * acquires the run again. A row refused for its payload (too large, invalid)
 * leaves a hole instead, and the rows after it still land: the run is then
 * incomplete there, and its restore refused.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import { type Checkpoint, isCancelMarker } from '../shared/rows.js';
import { checkpoints, runOwners } from './db/schema.js';
import { rowsOf, type Tx } from './db/open.js';
import { type Item, reject } from './ingest-item.js';
import { fenceWriter, followRows, PLANE_WRITER } from './owners.js';

const checkpointOf = (i: Item): Checkpoint | null => (!i.result && i.event?.kind === 'checkpoint' ? i.event.row : null);

/**
 * Refuse (`taken_over`) each new checkpoint of the batch that:
 * - comes after the run's completed or cancelled marker on the plane;
 * - belongs to a run another writer owns with a live hold (a cancel marker
 *   excepted: a cancel is a change of owner anyone holding the run may make);
 * - follows another branch's row (a delta whose `prev` is not the row before);
 * - or follows a row of the batch refused here, or one that met another row
 *   at its seq (refused `seq_conflict`, naming the writer of the plane's row).
 * Each refusal fences the writer from the seq before it, so its later batches
 * are refused too (ingest's refuseTakenOver).
 */
export async function refuseOffBranch(tx: Tx, projectId: string, writerId: string, items: Item[]): Promise<void> {
  // a run the batch deletes starts again under its id after the deletion: its new rows follow nothing the plane holds
  const deleted = new Set(
    items.flatMap((i) => (!i.result && i.event?.kind === 'execution_deleted' ? [i.event.executionId] : [])),
  );
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
        .select({
          executionId: runOwners.executionId,
          writerId: runOwners.writerId,
          epoch: runOwners.epoch,
          live: sql<boolean>`${runOwners.state} = 'held' AND ${runOwners.expiresAt} > now()`,
        })
        .from(runOwners)
        .where(and(eq(runOwners.projectId, projectId), inArray(runOwners.executionId, ids)))
    ).map((o) => [o.executionId, o]),
  );
  // each run's newest row on the plane (a run that ended there takes no row after its marker), and the plane's rows
  // at the seqs the batch writes and the one before each (a new row must follow the plane's own row before it): one
  // index probe per run and per seq (a LATERAL with LIMIT is never turned into a scan of the runs' rows)
  const newest = new Map(
    rowsOf<{ executionId: string; seq: number; step: string; status: string; writerId: string }>(
      await tx.execute(sql`
        SELECT t.e AS "executionId", c.seq, c.step, c.status, c.writer_id AS "writerId"
        FROM jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) AS t(e)
        JOIN LATERAL (
          SELECT seq, step, status, writer_id FROM checkpoints
          WHERE project_id = ${projectId} AND execution_id = t.e ORDER BY seq DESC LIMIT 1
        ) c ON true`),
    ).map((r) => [r.executionId, r]),
  );
  const wanted = fresh.flatMap((i) => {
    const row = checkpointOf(i)!;
    return [
      { e: row.executionId, s: row.seq },
      { e: row.executionId, s: row.seq - 1 },
    ];
  });
  const at = new Map(
    rowsOf<{ executionId: string; seq: number; id: string; writerId: string }>(
      await tx.execute(sql`
        SELECT r.e AS "executionId", r.s AS seq, c.id, c.writer_id AS "writerId"
        FROM jsonb_to_recordset(${JSON.stringify(wanted)}::jsonb) AS r(e text, s int)
        JOIN LATERAL (
          SELECT id, writer_id FROM checkpoints
          WHERE project_id = ${projectId} AND execution_id = r.e AND seq = r.s LIMIT 1
        ) c ON true`),
    ).map((r) => [`${r.executionId}\u0000${r.seq}`, r]),
  );
  const accepted = new Map<string, string>();
  const refusedFrom = new Map<string, number>();
  for (const item of fresh) {
    const row = checkpointOf(item)!;
    const refuse = async (why: string, fenceAt: number, winner: string) => {
      reject(
        item,
        'taken_over',
        `execution ${row.executionId}: ${why}; this writer's later rows of the run are refused until it takes the run again`,
      );
      if (!refusedFrom.has(row.executionId)) {
        refusedFrom.set(row.executionId, row.seq);
        await fenceWriter(tx, projectId, row.executionId, writerId, winner, fenceAt);
      }
    };
    const key = (seq: number) => `${row.executionId}\u0000${seq}`;
    const there = at.get(key(row.seq));
    if (there && there.id !== row.id) {
      // another branch's row holds this seq: refused by seq, naming whose branch (the writer told sees which machine
      // holds the run); this writer's branch stops here. Fenced from this seq, so a batch sent again is refused by seq
      // here again, and only what follows by the fence
      reject(
        item,
        'seq_conflict',
        `execution ${row.executionId} already has a different row at seq ${row.seq}, written by '${there.writerId}'`,
      );
      if (!refusedFrom.has(row.executionId)) {
        refusedFrom.set(row.executionId, row.seq);
        await fenceWriter(tx, projectId, row.executionId, writerId, there.writerId, row.seq);
      }
      continue;
    }
    if (refusedFrom.has(row.executionId)) {
      await refuse(
        `row ${row.id} follows row(s) of this batch the plane refused (from seq ${refusedFrom.get(row.executionId)})`,
        row.seq - 1,
        PLANE_WRITER,
      );
      continue;
    }
    // a delta names the row it follows: one that is not the plane's row before it is another branch's
    const before = accepted.get(key(row.seq - 1)) ?? at.get(key(row.seq - 1))?.id ?? null;
    if (row.seq > 0 && row.state.kind === 'delta' && before !== null && row.state.prev !== before) {
      await refuse(
        `row ${row.id} follows row ${row.state.prev}, not the plane's row at seq ${row.seq - 1} (${before}): it is another branch's`,
        row.seq - 1,
        at.get(key(row.seq - 1))?.writerId ?? PLANE_WRITER,
      );
      continue;
    }
    const end = newest.get(row.executionId);
    if (
      end &&
      end.step === 'run_end' &&
      (end.status === 'completed' || end.status === 'cancelled') &&
      row.seq > end.seq
    ) {
      await refuse(`the run ended at seq ${end.seq} (${end.status}) on the plane`, end.seq, end.writerId);
      continue;
    }
    const owner = owners.get(row.executionId);
    if (owner?.live && owner.writerId !== writerId && !isCancelMarker(row)) {
      await refuse(`writer '${owner.writerId}' owns the run (epoch ${owner.epoch})`, row.seq - 1, owner.writerId);
      continue;
    }
    accepted.set(key(row.seq), row.id);
  }
}

/**
 * Say which `taken_over` refusals are of a cancelled run (its owner is
 * nobody now): the writer's runner then stops as cancelled, not as taken over.
 */
export async function markCancelled(tx: Tx, projectId: string, items: Item[]): Promise<void> {
  const refused = items.filter(
    (i) => i.result?.status === 'rejected' && i.result.code === 'taken_over' && i.executionId,
  );
  if (!refused.length) return;
  const ids = [...new Set(refused.map((i) => i.executionId!))];
  const cancelled = new Set(
    (
      await tx
        .select({ executionId: runOwners.executionId })
        .from(runOwners)
        .where(
          and(
            eq(runOwners.projectId, projectId),
            inArray(runOwners.executionId, ids),
            eq(runOwners.state, 'cancelled'),
          ),
        )
    ).map((o) => o.executionId),
  );
  for (const i of refused)
    if (cancelled.has(i.executionId!) && i.result?.status === 'rejected') i.result.cancelled = true;
}

/** After the batch's rows are stored: each run's owner follows what was accepted (owners.ts followRows). */
export async function followAccepted(
  tx: Tx,
  projectId: string,
  writerId: string,
  items: Item[],
  floorMs: number,
): Promise<void> {
  const runs = new Map<string, { last: Checkpoint | null; paused: boolean; first: boolean; graph: boolean }>();
  for (const i of items) {
    // stored by this batch (a redelivered row changed nothing when it came again)
    if (i.result) continue;
    const e = i.event;
    if (!e || (e.kind !== 'checkpoint' && e.kind !== 'interrupt_opened')) continue;
    const r = runs.get(i.executionId!) ?? { last: null, paused: false, first: false, graph: false };
    if (e.kind === 'checkpoint') {
      if (!r.last || e.row.seq > r.last.seq) r.last = e.row;
      if (e.row.seq === 0) r.first = true;
      if (e.row.step === 'graph_step') r.graph = true;
      r.paused = r.paused && e.row.status === 'interrupted';
    } else r.paused = true;
    runs.set(i.executionId!, r);
  }
  if (runs.size) await followRows(tx, projectId, writerId, runs, floorMs);
}
