/**
 * What a restore may write into a store that already holds rows: a pure plan,
 * computed inside the import transaction from the local rows it names, so
 * both backends decide alike.
 *
 * A bundle row is written only where it extends the local history: its seq is
 * free here and the local row before it is the very row it follows (the
 * bundle's row at seq - 1, and a delta's `prev`). At the first row of an
 * execution that does not, the execution is reported diverged and none of its
 * later rows are written: grafting another machine's branch onto this one
 * gives rows that fail to decode or silently show the other branch.
 */
import {
  Checkpoint as CheckpointSchema,
  IdempotencyEntry as IdempotencySchema,
  PendingInterrupt as PendingSchema,
  type Checkpoint,
  type IdempotencyEntry,
  type PendingInterrupt,
} from '../../shared/rows.js';
import type { ImportResult, RestoreBundle } from '../checkpointer.js';
import { checkBundleRows } from './rows.js';

/** Why an execution's import stopped. */
export type DivergenceReason =
  /** a different local row holds this seq */
  | 'seq_taken'
  /** the local row before this seq is not the row it follows */
  | 'predecessor_differs'
  /** neither the store nor the bundle holds the row it follows */
  | 'no_predecessor'
  /** this row's id is stored here at another place */
  | 'id_taken';

/** A restore bundle checked with the wire schemas before anything is written (InvalidRowError naming the first bad row). */
export function checkBundle(bundle: RestoreBundle): {
  checkpoints: Checkpoint[];
  pending: PendingInterrupt | null;
  idempotency: IdempotencyEntry[];
} {
  return {
    checkpoints: checkBundleRows(CheckpointSchema, bundle.checkpoints, 'checkpoint'),
    pending: bundle.pending ? checkBundleRows(PendingSchema, [bundle.pending], 'pending interrupt')[0] : null,
    idempotency: checkBundleRows(IdempotencySchema, bundle.idempotency, 'idempotency entry'),
  };
}

/** An execution whose local history differs from a restored bundle's: where, why, and the local row there. */
export interface DivergedExecution {
  executionId: string;
  /** The first bundle seq that was not written. */
  seq: number;
  reason: DivergenceReason;
  /** The local row at that seq, if any. */
  localId: string | null;
  /** The bundle's row at that seq. */
  incomingId: string;
}

export interface ImportPlan {
  /** Rows to write, ascending by seq per execution. */
  insert: Checkpoint[];
  /** Rows already stored here (same id at the same place). */
  skipped: number;
  diverged: DivergedExecution[];
  /** Rows of diverged executions not written (the diverging row and every later one). */
  withheld: number;
}

export interface LocalRows {
  /** Id of the local row at (executionId, seq), or null. */
  idAt(executionId: string, seq: number): string | null;
  /** Where a local row with this id is, or null. */
  find(id: string): { executionId: string; seq: number } | null;
}

export function planImport(rows: readonly Checkpoint[], local: LocalRows): ImportPlan {
  const plan: ImportPlan = { insert: [], skipped: 0, diverged: [], withheld: 0 };
  const byExecution = new Map<string, Checkpoint[]>();
  for (const r of rows) {
    const list = byExecution.get(r.executionId) ?? [];
    list.push(r);
    byExecution.set(r.executionId, list);
  }
  for (const [executionId, list] of [...byExecution].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    list.sort((a, b) => a.seq - b.seq);
    const bundleIdAt = new Map(list.map((r) => [r.seq, r.id]));
    const written = new Map<number, string>();
    const idAt = (seq: number) => written.get(seq) ?? local.idAt(executionId, seq);
    let stopped = false;
    for (const c of list) {
      if (stopped) {
        plan.withheld++;
        continue;
      }
      const stop = (reason: DivergenceReason) => {
        plan.diverged.push({ executionId, seq: c.seq, reason, localId: idAt(c.seq), incomingId: c.id });
        plan.withheld++;
        stopped = true;
      };
      const at = local.find(c.id);
      if (at) {
        if (at.executionId === executionId && at.seq === c.seq) plan.skipped++;
        else stop('id_taken');
        continue;
      }
      if (idAt(c.seq) !== null) {
        stop('seq_taken');
        continue;
      }
      if (c.seq > 0) {
        const pred = idAt(c.seq - 1);
        const expected = bundleIdAt.get(c.seq - 1) ?? (c.state.kind === 'delta' ? c.state.prev : null);
        if (pred === null || expected === null) {
          stop('no_predecessor');
          continue;
        }
        if (pred !== expected || (c.state.kind === 'delta' && c.state.prev !== pred)) {
          stop('predecessor_differs');
          continue;
        }
      }
      written.set(c.seq, c.id);
      plan.insert.push(c);
    }
  }
  return plan;
}

/** The result of an import before its writes: what the plan decided, nothing written yet. */
export function importResultOf(plan: ImportPlan): ImportResult {
  return {
    inserted: 0,
    skipped: plan.skipped,
    diverged: plan.diverged,
    withheld: plan.withheld,
    pendingImported: false,
    stalePendingRemoved: [],
    idempotencyInserted: 0,
  };
}
