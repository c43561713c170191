/**
 * SQLite adapter of the store contract (better-sqlite3).
 *
 * Durability settings: WAL journal, `busy_timeout`, and `synchronous=FULL` by
 * default: a committed row survives a process crash and a power loss.
 * `synchronous=NORMAL` survives a process crash (SIGKILL included) but may lose
 * the last commits on power loss or an OS crash. Every transaction that reads
 * then writes is `BEGIN IMMEDIATE`, so several processes may share one file
 * and a claim is atomic across them.
 *
 * Group commit: the puts and lease acquisitions that concurrent runs issue
 * within one tick (before the microtask queue runs dry) share one IMMEDIATE
 * transaction (one fsync), a savepoint each; each resolves only after that
 * COMMIT returned, a failing one rolls back its own savepoint and fails alone,
 * and any other call first commits the queued writes, so calls apply in the
 * order they were made (client/store/group-commit.ts).
 *
 * This file holds the class: open, the group commit, and the writes that
 * decide inside one IMMEDIATE transaction (put, pause, claim, cancel,
 * idempotency). Statements it runs live beside it, as functions taking the
 * prepared statements, file for file as the Postgres store's (the pairing is
 * in index.ts).
 *
 * What the `waymark/sqlite` entry exports (its index.ts re-exports this file; the
 * optional peer `better-sqlite3` is loaded by driver.ts): the API reference documents the entry from here.
 *
 * @module waymark/sqlite
 */
import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { uuidv7 } from '../../shared/ids.js';
import type { Json } from '../../shared/json.js';
import { stateOfCursor, type ChainRow } from '../../shared/codec.js';
import type { Checkpoint, Decision, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
// the store contract's types, named `C.Lease`, `C.CancelResult`, …
import type * as C from '../checkpointer.js';
import { DuplicateIdError, PauseExistsError } from '../errors.js';
import { STORE_BASE_OPTIONS, StoreBase, writerIdProblems, written, type StoreBaseOptions } from '../store/base.js';
import { durationProblem, oneOfProblem, optionNames, shown } from '../../support/validate.js';
import { openDatabase } from './driver.js';
import { alreadyCancelled, cancelMarker, checkCancel, notFound } from '../store/cancel.js';
import {
  checkpointValues,
  executionValues,
  fromColumns,
  toColumns,
  type IdempotencyColumns,
  type PendingColumns,
} from '../store/columns.js';
import { GroupCommit } from '../store/group-commit.js';
import type { Settled } from '../../shared/settled.js';
import {
  idempotencyRecorded,
  interruptClaimed,
  interruptClosed,
  interruptOpened,
  type QueuedEvent,
} from '../store/events.js';
import { checkBundle } from '../store/import.js';
import { checkLease, fencedWriteError, isHeld } from '../store/lease.js';
import {
  buildRow,
  canonicalTime,
  checkIdempotencyBytes,
  checkIdempotencyKey,
  checkInput,
  checkJson,
  checkListOptions,
  checkPrev,
  checkPrevOwner,
  pendingFor,
  type RowText,
} from '../store/rows.js';
import { PruneWalk } from '../store/prune.js';
import type { UsageTotal } from '../../shared/usage.js';
import { migrateSqlite } from './migrations.js';
import * as decisions from './decisions.js';
import { checkClaimDecisionId, checkDecision } from '../store/decisions.js';
import { prepareStatements, type Statements } from './statements.js';
import { fence, fenceWrite, leaseInfo, takeLease } from './leases.js';
import { deleteRows, pruneChunk } from './delete.js';
import { importInto } from './import.js';
import { advanceValues, executionAt, sqliteCode } from './executions.js';
import {
  listExecutionSummaries,
  listIdempotency,
  listPending,
  listRows,
  listUsageRows,
  readById,
  readChain,
  readIdempotent,
  readLatest,
  readNote,
  readPending,
} from './reads.js';
import { applyResults, fetchUnsynced, heldByPlane, listQuarantined, noteSending, outboxStats } from './outbox.js';

/** SQLite's `synchronous` pragma: how much a commit waits for the disk (FULL: every commit survives a power loss). */
export type SqliteSynchronous = 'FULL' | 'NORMAL' | 'EXTRA';

/** Options of `new SqliteCheckpointer(...)`: the file, its durability, and the store options every backend takes. */
export interface SqliteCheckpointerOptions extends StoreBaseOptions {
  /** File path, or ':memory:' (one process only). */
  path: string;
  /** Default FULL. NORMAL trades the last commits on power loss for speed. */
  synchronous?: SqliteSynchronous;
  /** How long a writer waits for another process's lock. Default 10 s. */
  busyTimeoutMs?: number;
  /** This store's writer id; persisted on first open when absent. */
  writerId?: string;
}

/** A write waiting for its group commit: a put, or a lease acquisition. */
type QueuedWrite =
  | { kind: 'put'; executionId: string; input: C.CheckpointInput; lease: C.Lease | undefined }
  | { kind: 'lease'; executionId: string; request: C.LeaseRequest };
/** What a queued write wrote, by its kind: a put's row text, or the lease taken. */
type Written = RowText | C.Lease;

const SQLITE_OPTIONS = [
  ...STORE_BASE_OPTIONS,
  ...optionNames<Omit<SqliteCheckpointerOptions, keyof StoreBaseOptions>>({
    path: true,
    synchronous: true,
    busyTimeoutMs: true,
    writerId: true,
  }),
];
// OFF is not in the type (it gives up durability); a benchmark's baseline casts to it
const SYNCHRONOUS: readonly string[] = ['FULL', 'NORMAL', 'EXTRA', 'OFF'];

/** The SQLite store's own options: a missing path would open a temporary database, and `synchronous` goes into a pragma. */
function sqliteProblems(o: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (typeof o.path !== 'string' || o.path === '')
    problems.push(`path: required, the database file (or ':memory:') (got ${shown(o.path)})`);
  const synchronous = SYNCHRONOUS.includes(o.synchronous as string)
    ? null
    : oneOfProblem('synchronous', o.synchronous, ['FULL', 'NORMAL', 'EXTRA']);
  for (const p of [synchronous, durationProblem('busyTimeoutMs', o.busyTimeoutMs, 0)]) if (p) problems.push(p);
  problems.push(...writerIdProblems(o.writerId));
  return problems;
}

export class SqliteCheckpointer extends StoreBase implements C.Checkpointer {
  readonly writerId: string;
  readonly instanceId: string;
  readonly path: string;
  private readonly db: Database.Database;
  private readonly st: Statements;
  /** Transaction functions made once (better-sqlite3 runs one called inside a transaction as a savepoint). */
  private readonly tx: {
    writeOne: Database.Transaction<(job: QueuedWrite) => Written>;
    commitBatch: Database.Transaction<(jobs: QueuedWrite[]) => Settled<Written>[]>;
  };

  constructor(options: SqliteCheckpointerOptions) {
    super('SqliteCheckpointer', options, SQLITE_OPTIONS, sqliteProblems);
    this.path = options.path;
    this.db = openDatabase(options.path);
    this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`);
    if (options.path !== ':memory:') this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    this.db.pragma('foreign_keys = ON');
    migrateSqlite(this.db);
    this.st = prepareStatements(this.db);
    this.tx = {
      writeOne: this.db.transaction((job: QueuedWrite) => this.writeOne(job)),
      commitBatch: this.db.transaction((jobs: QueuedWrite[]) => this.commitBatch(jobs)),
    };
    this.writerId = this.resolveWriterId(options.writerId);
    this.instanceId = this.resolveInstance();
  }

  /**
   * This file's instance id, kept with the file and bound to where it lies
   * (device and inode): a copy of the file (cp, a restored backup) gets a new
   * one the first time it is opened, so the plane tells it from the original
   * under the same writer id. A `:memory:` store is a new instance each open.
   */
  private resolveInstance(): string {
    const place = this.path === ':memory:' || this.path === '' ? null : statSync(this.path, { throwIfNoEntry: false });
    const at = place ? `${place.dev}:${place.ino}` : null;
    if (at === null) return uuidv7();
    const keptHere = () => {
      const kept = this.st.getMeta.get('instance') as { value: string } | undefined;
      const parsed = kept ? (JSON.parse(kept.value) as { id?: unknown; at?: unknown }) : null;
      return typeof parsed?.id === 'string' && parsed.at === at ? parsed.id : null;
    };
    // a plain read settles every open but the first; processes opening a fresh copy at once agree on one id
    return (
      keptHere() ??
      this.db
        .transaction(() => {
          const id = keptHere() ?? uuidv7();
          this.st.setMeta.run('instance', JSON.stringify({ id, at }));
          return id;
        })
        .immediate()
    );
  }

  private resolveWriterId(given?: string): string {
    // once persisted it never changes: a plain read settles every open but the first, without the write lock
    const persisted = this.st.getMeta.get('writer_id') as { value: string } | undefined;
    if (persisted) return given ?? persisted.value;
    const tx = this.db.transaction(() => {
      const row = this.st.getMeta.get('writer_id') as { value: string } | undefined;
      if (row) return row.value;
      const id = given ?? `sqlite-${uuidv7()}`;
      this.st.insertMeta.run('writer_id', id);
      return id;
    });
    const stored = tx.immediate();
    return given ?? stored;
  }

  async setup(): Promise<void> {
    this.assertOpen();
    migrateSqlite(this.db);
  }

  private queue(e: QueuedEvent): void {
    if (!this.outbox) return;
    this.st.insertOutbox.run(e.id, e.kind, e.executionId, e.payload, e.bytes, canonicalTime());
  }

  protected async readChain(executionId: string, base: number, seq: number): Promise<ChainRow[]> {
    return readChain(this.st, executionId, base, seq);
  }

  /** Write one checkpoint inside the caller's IMMEDIATE transaction. */
  private writeCheckpoint(input: C.CheckpointInput): RowText {
    const ex = executionAt(this.st, input.executionId);
    if (checkPrev(input, ex ?? null) === 'lookup') {
      checkPrevOwner(input, (this.st.getById.get(input.prevId!) as { execution_id: string } | undefined)?.execution_id);
    }
    const seq = ex ? ex.next_seq : 0;
    const prev =
      ex && seq > 0
        ? this.cursorAt(input.executionId, seq - 1, ex.last_id, (b, s) => readChain(this.st, input.executionId, b, s))
        : null;
    const rt = buildRow(input, seq, prev, this.writerId);
    this.st.upsertExec.run(executionValues(rt.row));
    this.insertRow(rt);
    return rt;
  }

  /** The checkpoint of `rt`, its event waiting on the row itself (outbox.ts), inside the caller's transaction (after the execution moved). */
  private insertRow(rt: RowText): void {
    try {
      if (this.outbox) this.st.insertQueuedCheckpoint.run(checkpointValues(rt.row, rt), rt.bytes);
      else this.st.insertCheckpoint.run(checkpointValues(rt.row, rt));
    } catch (e) {
      if (sqliteCode(e) === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw new DuplicateIdError(rt.row.id);
      throw e;
    }
  }

  /**
   * Joins the group commit as a put does: the runs that start together take
   * their leases in one transaction (a savepoint each; a lease held elsewhere
   * fails only its own acquisition), not one commit each.
   */
  async acquireLease(executionId: string, request: C.LeaseRequest): Promise<C.Lease> {
    this.assertNotClosed();
    checkLease(executionId, request);
    // a lease job's outcome is the lease (`after` below)
    return this.writes.enqueue({ kind: 'lease', executionId, request }) as Promise<C.Lease>;
  }

  async renewLease(lease: C.Lease): Promise<C.Lease> {
    this.assertOpen();
    checkLease(lease?.executionId, lease);
    const renewed = this.db.transaction(() => fence(this.st, lease, false)).immediate();
    this.renewals.notedExpiry(renewed);
    return renewed;
  }

  async releaseLease(lease: C.Lease): Promise<void> {
    this.assertOpen();
    checkLease(lease?.executionId, lease);
    this.st.releaseLease.run(lease.executionId, lease.holder, lease.epoch);
  }

  async getLease(executionId: string): Promise<C.LeaseInfo | null> {
    this.assertOpen();
    return leaseInfo(this.st, executionId);
  }

  async cancel(executionId: string, options?: C.CancelOptions): Promise<C.CancelResult> {
    this.assertOpen();
    const reason = checkCancel(executionId, options);
    let out: { rt: RowText | null; marker: Checkpoint; closed: PendingInterrupt | null };
    try {
      out = this.db
        .transaction(() => {
          const last = readLatest(this.st, executionId);
          if (!last) throw notFound(executionId);
          if (alreadyCancelled(last)) return { rt: null, marker: last, closed: null };
          const closed = readPending(this.st, executionId);
          if (closed) {
            this.st.deletePending.run(executionId);
            this.queue(interruptClosed(closed, this.writerId));
          }
          // every runner is fenced out: its next write or renewal finds the holder cleared and the marker
          this.st.clearLease.run(executionId);
          const state = stateOfCursor(
            this.cursorAt(executionId, last.seq, last.id, (b, s) => readChain(this.st, executionId, b, s)),
          );
          const rt = this.writeCheckpoint(cancelMarker(last, state, reason));
          return { rt, marker: rt.row, closed };
        })
        .immediate();
    } catch (e) {
      this.cursors.drop(executionId);
      throw e;
    }
    this.afterCommit(executionId, written(out.rt), 'store.cancel.afterCommit');
    return { checkpoint: out.marker, closedPause: out.closed, alreadyCancelled: out.rt === null };
  }

  /**
   * Queued for the group commit: the puts issued in one tick
   * (by concurrent runs) are written in one IMMEDIATE transaction, a savepoint
   * each, and resolve after its COMMIT (see client/store/group-commit.ts).
   */
  async put(input: C.CheckpointInput, options: C.WriteOptions = {}): Promise<Checkpoint> {
    const lease = this.checkQueuedWrite(input, options);
    // a put job's outcome is its row (`after` below)
    return this.writes.enqueue({ kind: 'put', executionId: input.executionId, input, lease }) as Promise<Checkpoint>;
  }

  protected override settle(): void {
    // inside an open transaction (a fault hook calling back in) the batch would commit as a savepoint only
    if (this.db.inTransaction) return;
    this.writes.settle();
  }

  /** One queued write, in the batch's transaction (as a savepoint when the batch holds more than one). */
  private writeOne(job: QueuedWrite): Written {
    if (job.kind === 'lease') {
      const lease = takeLease(this.st, job.executionId, job.request);
      this.renewals.notedExpiry(lease);
      return lease;
    }
    return this.writePut(job.input, job.lease);
  }

  /**
   * A put inside the batch's transaction. A lease this store renewed less
   * than a third of its ttl ago is only checked, in the statement that
   * advances the execution; otherwise (and for the run-end marker, which
   * releases it) it is renewed first. A write that cannot go on the cached
   * cursor, or whose fence found the lease gone, takes the full path, which
   * renews the lease or names why it is lost.
   */
  private writePut(input: C.CheckpointInput, lease: C.Lease | undefined): RowText {
    const release = input.step === 'run_end';
    const renew = !!lease && (release || !this.renewals.fresh(lease));
    if (lease && renew) this.renewWith(lease, release);
    const fast = this.writeOnCursor(input, renew ? undefined : lease);
    if (fast) return fast;
    if (lease && !renew) this.renewWith(lease, false);
    return this.writeCheckpoint(input);
  }

  /** Inside the caller's transaction: fence and renew (or release) `lease`, noting the renewal. */
  private renewWith(lease: C.Lease, release: boolean): void {
    const expires = fenceWrite(this.st, lease, release);
    if (!release) this.renewals.noted(lease, expires - lease.ttlMs);
  }

  /**
   * The next row of an execution this store wrote or read last, built from
   * the cached cursor without reading the execution back: the head moves
   * only if it is still at that row (and, with `fence`, only while the lease
   * is that one), then the row and its event are inserted. Null when the
   * cursor is missing or stale, or the fence failed; nothing written then.
   */
  private writeOnCursor(input: C.CheckpointInput, fence: C.Lease | undefined): RowText | null {
    // a fresh run's first row, or one naming another row than the cached newest, takes the full path's checks
    if (input.prevId === null) return null;
    const prev = this.cursors.newest(input.executionId);
    if (!prev || (input.prevId !== undefined && input.prevId !== prev.id)) return null;
    const rt = buildRow(input, prev.seq + 1, prev, this.writerId);
    const advance = fence ? this.st.advanceExecFenced : this.st.advanceExec;
    if (advance.run(advanceValues(rt.row, prev, fence)).changes !== 1) return null;
    this.insertRow(rt);
    return rt;
  }

  /** The writes of one tick, inside one IMMEDIATE transaction, a savepoint each; a failing write rolls back its own savepoint only. */
  private commitBatch(jobs: QueuedWrite[]): Settled<Written>[] {
    if (jobs.length === 1) {
      // a lone write needs no savepoint: its failure rolls the whole transaction back, as before group commit
      const value = this.writeOne(jobs[0]);
      this.fault('store.groupCommit.beforeCommit');
      return [{ ok: true, value }];
    }
    const out = jobs.map((job): Settled<Written> => {
      try {
        const value = this.tx.writeOne(job);
        // the next put of this execution in the batch encodes against this row without reading it back
        if (job.kind === 'put') this.cursors.set(job.executionId, (value as RowText).cursor);
        return { ok: true, value };
      } catch (error) {
        // an error that ended the whole transaction (I/O, disk full) fails the batch: nothing of it commits
        if (!this.db.inTransaction) throw error;
        // a refused lease leaves the cursor an earlier put of the run cached in this batch; a renewal rolled back
        if (job.kind === 'put') this.cursors.drop(job.executionId);
        this.renewals.forget(job.executionId);
        return { ok: false, error };
      }
    });
    this.fault('store.groupCommit.beforeCommit');
    return out;
  }

  private readonly writes = new GroupCommit<QueuedWrite, Written, Checkpoint | C.Lease>({
    commit: (jobs) => {
      try {
        return this.tx.commitBatch.immediate(jobs);
      } catch (e) {
        // rows cached and leases renewed inside the transaction were never committed
        for (const j of jobs) {
          this.cursors.drop(j.executionId);
          this.renewals.forget(j.executionId);
        }
        throw e;
      }
    },
    after: (job, value) => {
      if (job.kind === 'lease') return value as C.Lease;
      const rt = value as RowText;
      this.afterCommit(job.executionId, written(rt), 'store.put.afterCommit');
      return rt.row;
    },
    failed: (job, error) => {
      if (job.kind === 'lease') return error;
      this.cursors.drop(job.executionId);
      return fencedWriteError(error, job.input);
    },
  });

  async recordInterrupt(
    input: C.CheckpointInput,
    pause: { reason: string; context: Json | null },
    options: C.WriteOptions = {},
  ): Promise<{ checkpoint: Checkpoint; pending: PendingInterrupt }> {
    const lease = this.checkWrite(input, options);
    let out: { rt: RowText; pending: PendingInterrupt };
    try {
      out = this.db
        .transaction(() => {
          // a pause ends this runner's hold: the resumer that claims it takes the lease anew
          if (lease) fenceWrite(this.st, lease, true);
          const rt = this.writeCheckpoint(input);
          const pending = pendingFor(rt.row, pause.reason, pause.context);
          this.fault('store.recordInterrupt.betweenRows');
          try {
            this.st.insertPending.run(toColumns.pending(pending));
          } catch (e) {
            if (sqliteCode(e) === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
              throw new PauseExistsError(pending.executionId);
            }
            throw e;
          }
          this.queue(interruptOpened(pending));
          return { rt, pending };
        })
        .immediate();
    } catch (e) {
      this.cursors.drop(input.executionId);
      throw fencedWriteError(e, input);
    }
    this.afterCommit(input.executionId, written(out.rt), 'store.recordInterrupt.afterCommit');
    return { checkpoint: out.rt.row, pending: out.pending };
  }

  async claimInterrupt(pause: C.PauseRef, options?: C.ClaimOptions): Promise<C.ClaimResult | null> {
    this.assertOpen();
    const { executionId, checkpointId } = pause;
    if (options?.next) checkInput(options.next);
    const decisionId = checkClaimDecisionId(options?.decisionId);
    const ask = options?.lease;
    if (ask) checkLease(executionId, ask);
    let out: { pending: PendingInterrupt; rt: RowText | null; lease: C.Lease | null } | null;
    try {
      out = this.db
        .transaction(() => {
          const row = this.st.claimPending.get(executionId, checkpointId) as PendingColumns | undefined;
          if (!row) return null;
          // the claim and the lease are one decision: refused lease, nothing claimed (the transaction rolls back)
          const lease = ask ? (isHeld(ask) ? fence(this.st, ask, false) : takeLease(this.st, executionId, ask)) : null;
          const pending = fromColumns.pending(row);
          const claimedAt = canonicalTime();
          decisions.recordClaim(this.st, {
            checkpoint_id: checkpointId,
            execution_id: executionId,
            writer_id: this.writerId,
            decision_id: decisionId,
            claimed_at: claimedAt,
          });
          this.queue(interruptClaimed(pending, this.writerId, decisionId, claimedAt));
          const rt = options?.next ? this.writeCheckpoint(options.next) : null;
          return { pending, rt, lease };
        })
        .immediate();
    } catch (e) {
      this.cursors.drop(executionId);
      throw e;
    }
    if (!out) return null;
    if (out.lease) this.renewals.notedExpiry(out.lease);
    this.afterCommit(executionId, written(out.rt), 'store.claim.afterCommit');
    return { pending: out.pending, checkpoint: out.rt?.row ?? null, lease: out.lease };
  }

  async recordDecision(decision: Decision): Promise<C.RecordDecisionResult> {
    this.assertOpen();
    const d = checkDecision(decision);
    const out = this.db.transaction(() => decisions.insertDecision(this.st, d, (e) => this.queue(e))).immediate();
    if (out.recorded) this.committed(null);
    return out;
  }

  async listDecisions(options: C.ListDecisionsOptions = {}): Promise<C.DecisionPage> {
    this.assertOpen();
    return decisions.listDecisions(this.st, options);
  }

  async getDecision(executionId: string, checkpointId: string): Promise<C.StoredDecision | null> {
    this.assertOpen();
    return decisions.getDecision(this.st, executionId, checkpointId);
  }

  async forgetUnheldDecisions(executionId: string, keepCheckpointId: string | null, upToSeq: number): Promise<number> {
    this.assertOpen();
    if (!decisions.hasUnheldDecisions(this.st, executionId, keepCheckpointId, upToSeq)) return 0;
    return this.db
      .transaction(() => decisions.forgetUnheldDecisions(this.st, executionId, keepCheckpointId, upToSeq))
      .immediate();
  }

  async decisionSeq(): Promise<number> {
    this.assertOpen();
    return decisions.decisionSeq(this.st);
  }

  async getPendingInterrupt(executionId: string): Promise<PendingInterrupt | null> {
    this.assertOpen();
    return readPending(this.st, executionId);
  }

  async listPendingInterrupts(options: C.PendingListOptions = {}): Promise<PendingInterrupt[]> {
    this.assertOpen();
    return listPending(this.st, options);
  }

  async latest(executionId: string): Promise<Checkpoint | null> {
    this.assertOpen();
    return readLatest(this.st, executionId);
  }

  async getById(id: string): Promise<Checkpoint | null> {
    this.assertOpen();
    return readById(this.st, id);
  }

  async list(executionId: string, options: C.ListOptions = {}): Promise<Checkpoint[]> {
    this.assertOpen();
    checkListOptions(options);
    return listRows(this.st, executionId, options);
  }

  async usageTotals(executionIds: readonly string[]): Promise<Map<string, UsageTotal>> {
    this.assertOpen();
    if (!executionIds.length) return new Map();
    // read at the call, as every read is; the sums' module is loaded on the first listing, not with the store
    const rows = listUsageRows(this.st, executionIds);
    const { usageTotalsOf } = await import('../store/usage.js');
    return usageTotalsOf(executionIds, rows);
  }

  async listExecutions(options: C.ExecutionListOptions = {}): Promise<C.ExecutionSummary[]> {
    this.assertOpen();
    return listExecutionSummaries(this.st, options);
  }

  async getIdempotent(executionId: string, key: string): Promise<C.IdempotentLookup> {
    this.assertOpen();
    return readIdempotent(this.st, executionId, key);
  }

  async putIdempotent(
    executionId: string,
    key: string,
    result: Json | null,
    options: C.IdempotentWriteOptions = {},
  ): Promise<IdempotencyEntry> {
    this.assertOpen();
    checkIdempotencyKey(executionId, key);
    checkJson('idempotent result', result);
    if (options.lease) checkLease(executionId, options.lease);
    const e: IdempotencyEntry = { executionId, key, result, createdAt: canonicalTime() };
    const event = idempotencyRecorded(e);
    checkIdempotencyBytes(key, event.bytes);
    const { entry, lost } = this.db
      .transaction(() => {
        let lost: unknown = null;
        if (options.lease) {
          try {
            fenceWrite(this.st, options.lease, false);
          } catch (error) {
            // the same run, taken over or cancelled (its holder's row is still there): the effect is recorded; a run
            // deleted (and perhaps started again under its id) lost that row: nothing may outlive it
            if (
              (this.st.getById.get(options.anchorId ?? '') as { execution_id: string } | undefined)?.execution_id !==
              executionId
            )
              throw error;
            lost = error;
          }
        }
        if (this.st.insertIdem.run(toColumns.idempotency(e)).changes === 1) {
          this.queue(event);
          return { entry: e, lost };
        }
        return { entry: fromColumns.idempotency(this.st.getIdem.get(executionId, key) as IdempotencyColumns), lost };
      })
      .immediate();
    this.afterCommit(executionId, written(null), 'store.idempotency.afterCommit');
    if (lost) throw lost;
    return entry;
  }

  async listIdempotent(executionId: string): Promise<IdempotencyEntry[]> {
    this.assertOpen();
    return listIdempotency(this.st, executionId);
  }

  async deleteExecution(executionId: string, options: C.DeleteOptions = {}): Promise<C.DeleteResult> {
    this.assertOpen();
    const out = this.db
      .transaction(() => {
        const result = deleteRows(this.st, executionId, (e) => this.queue(e), options.localOnly);
        decisions.dropDecisions(this.st, executionId);
        return result;
      })
      .immediate();
    this.afterDelete(executionId);
    return out;
  }

  async prune(options: C.PruneOptions): Promise<C.PruneResult> {
    this.assertOpen();
    const walk = new PruneWalk(options);
    while (!walk.done) {
      this.db
        .transaction(() =>
          pruneChunk(this.st, walk, (id) => {
            decisions.dropDecisions(this.st, id);
            this.cursors.drop(id);
          }),
        )
        .immediate();
    }
    return walk.result;
  }

  async fetchUnsynced(options: C.FetchUnsyncedOptions): Promise<C.OutboxEntry[]> {
    this.assertOpen();
    return fetchUnsynced(this.st, options);
  }

  async applyResults(results: { synced?: string[]; quarantined?: Record<string, string> }): Promise<void> {
    this.assertOpen();
    const synced = results.synced ?? [];
    const q = Object.entries(results.quarantined ?? {});
    this.db.transaction(() => applyResults(this.st, synced, q)).immediate();
  }

  async outboxStats(): Promise<C.OutboxStats> {
    this.assertOpen();
    return outboxStats(this.st);
  }

  async listQuarantined(options: C.QuarantineListOptions = {}): Promise<C.QuarantinedEntry[]> {
    this.assertOpen();
    return listQuarantined(this.st, options);
  }

  async importRows(bundle: C.RestoreBundle): Promise<C.ImportResult> {
    this.assertOpen();
    const checked = checkBundle(bundle);
    return this.db.transaction(() => importInto(this.st, checked, (id) => this.cursors.drop(id))).immediate();
  }

  async heldByPlane(executionId: string): Promise<boolean> {
    this.assertOpen();
    return heldByPlane(this.st, executionId);
  }

  async noteSending(executionIds: readonly string[]): Promise<void> {
    this.assertOpen();
    noteSending(this.st, executionIds);
  }

  async getMeta(key: string): Promise<string | null> {
    this.assertOpen();
    return readNote(this.st, key);
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.assertOpen();
    this.st.setMeta.run(`note:${key}`, value);
  }

  /** How the writes were grouped so far: commits run, writes they held (puts and lease acquisitions), the largest batch (for benches and tests). */
  get groupCommitStats(): { batches: number; writes: number; largest: number } {
    return { ...this.writes.stats };
  }

  /** `PRAGMA integrity_check` result ('ok' when healthy). */
  integrityCheck(): string {
    this.writes.settle();
    return this.db.pragma('integrity_check', { simple: true }) as string;
  }

  /** The underlying connection, for tools and tests. */
  get connection(): Database.Database {
    // raw reads see every put made before them, as the contract's reads do
    if (this.db.open) this.writes.settle();
    return this.db;
  }

  async close(): Promise<void> {
    // writes queued before the close are committed first, as they would have been before it
    // (a write listener may put while the queue commits: settle until nothing is left)
    while (this.db.open && this.writes.pending > 0) this.writes.settle();
    if (this.markClosed()) this.db.close();
  }
}
