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
 * Group commit: the puts that concurrent runs issue within one tick (before
 * the microtask queue runs dry) share one IMMEDIATE transaction (one fsync), a savepoint per put;
 * each put resolves only after that COMMIT returned, a failing put rolls back
 * its own savepoint and fails alone, and any other call first commits the
 * queued puts, so calls apply in the order they were made
 * (client/store/group-commit.ts).
 */
import Database from 'better-sqlite3';
import { uuidv7 } from '../../shared/ids.js';
import type { Json } from '../../shared/json.js';
import { stateOfCursor, type ChainRow } from '../../shared/codec.js';
import type { Checkpoint, Decision, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
// the store contract's types, named `C.Lease`, `C.CancelResult`, …
import type * as C from '../checkpointer.js';
import { DuplicateIdError, PauseExistsError, RunInProgress } from '../errors.js';
import { StoreBase, written, type StoreBaseOptions } from '../store/base.js';
import { alreadyCancelled, cancelMarker, checkCancel, notFound, runCancelled } from '../store/cancel.js';
import { fromColumns, toColumns, type ChainColumns, type CheckpointColumns, type IdempotencyColumns, type PendingColumns } from '../store/columns.js';
import { GroupCommit, type BatchOutcome } from '../store/group-commit.js';
import { checkpointWritten, executionDeleted, idempotencyRecorded, interruptClaimed, interruptClosed, interruptOpened, type QueuedEvent } from '../store/events.js';
import { checkBundle, importResultOf, planImport } from '../store/import.js';
import { checkLease, fencedWriteError, isHeld, isoOf, leaseInfoOf, leaseLost, type LeaseColumns } from '../store/lease.js';
import { entryFromJoin, outboxStatsOf, quarantinedFromColumns, takeByBytes, type OutboxJoinRow, type QuarantinedColumns } from '../store/outbox.js';
import { buildRow, canonicalTime, checkIdempotencyKey, checkInput, checkJson, checkPrev, checkPrevOwner, pendingFor, type RowText } from '../store/rows.js';
import { PRUNE_CHUNK, PruneWalk, type PruneCandidate } from '../store/prune.js';
import { stateCondition, summaryFromRow, type ExecRow } from '../store/summary.js';
import { migrateSqlite } from './migrations.js';
import * as decisions from './decisions.js';
import { checkClaimDecisionId, checkDecision } from '../store/decisions.js';

export type SqliteSynchronous = 'FULL' | 'NORMAL' | 'EXTRA';

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

/** A put waiting for its group commit. */
interface QueuedPut {
  input: C.CheckpointInput;
  lease: C.Lease | undefined;
}

export class SqliteCheckpointer extends StoreBase implements C.Checkpointer {
  readonly writerId: string;
  readonly path: string;
  private readonly db: Database.Database;
  private readonly st: ReturnType<SqliteCheckpointer['prepare']>;
  /** Transaction functions made once (better-sqlite3 runs one called inside a transaction as a savepoint). */
  private readonly tx: { putOne: Database.Transaction<(job: QueuedPut) => RowText>; commitPuts: Database.Transaction<(jobs: QueuedPut[]) => BatchOutcome<RowText>[]> };
  /** Statements whose text depends on the call's options, each prepared the first time its text is needed. */
  private readonly variants = new Map<string, Database.Statement>();

  constructor(options: SqliteCheckpointerOptions) {
    super('SqliteCheckpointer', options);
    this.path = options.path;
    this.db = new Database(options.path);
    this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`);
    if (options.path !== ':memory:') this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    this.db.pragma('foreign_keys = ON');
    migrateSqlite(this.db);
    this.st = this.prepare();
    this.tx = { putOne: this.db.transaction((job: QueuedPut) => this.putOne(job)), commitPuts: this.db.transaction((jobs: QueuedPut[]) => this.commitPuts(jobs)) };
    this.writerId = this.resolveWriterId(options.writerId);
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

  /** Every fixed statement, prepared once at open (after the migrations made the tables). */
  private prepare() {
    const db = this.db;
    return {
      getMeta: db.prepare(`SELECT value FROM waymark_meta WHERE key = ?`),
      insertMeta: db.prepare(`INSERT INTO waymark_meta (key, value) VALUES (?, ?)`),
      setMeta: db.prepare(`INSERT INTO waymark_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`),
      getExec: db.prepare(`SELECT next_seq, last_id FROM executions WHERE execution_id = ?`),
      upsertExec: db.prepare(
        `INSERT INTO executions (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at)
         VALUES (@execution_id, @next_seq, @last_id, @last_node_id, @last_step, @last_status, @updated_at)
         ON CONFLICT (execution_id) DO UPDATE SET
           next_seq = excluded.next_seq, last_id = excluded.last_id, last_node_id = excluded.last_node_id,
           last_step = excluded.last_step, last_status = excluded.last_status, updated_at = excluded.updated_at
         WHERE excluded.next_seq > executions.next_seq`,
      ),
      insertCheckpoint: db.prepare(
        `INSERT INTO checkpoints (id, execution_id, seq, node_id, turn, step, status, agent_path, parent_id, state,
           node_input, node_output, interrupt_reason, interrupt_context, created_at, writer_id)
         VALUES (@id, @execution_id, @seq, @node_id, @turn, @step, @status, @agent_path, @parent_id, @state,
           @node_input, @node_output, @interrupt_reason, @interrupt_context, @created_at, @writer_id)`,
      ),
      insertOutbox: db.prepare(`INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)`),
      getById: db.prepare(`SELECT * FROM checkpoints WHERE id = ?`),
      getBySeq: db.prepare(`SELECT * FROM checkpoints WHERE execution_id = ? AND seq = ?`),
      latest: db.prepare(`SELECT * FROM checkpoints WHERE execution_id = ? ORDER BY seq DESC LIMIT 1`),
      chain: db.prepare(`SELECT id, seq, state FROM checkpoints WHERE execution_id = ? AND seq >= ? AND seq <= ? ORDER BY seq`),
      insertPending: db.prepare(
        `INSERT INTO pending_interrupts (execution_id, checkpoint_id, node_id, reason, context, agent_path, created_at)
         VALUES (@execution_id, @checkpoint_id, @node_id, @reason, @context, @agent_path, @created_at)`,
      ),
      claimPending: db.prepare(`DELETE FROM pending_interrupts WHERE execution_id = ? AND checkpoint_id = ? RETURNING *`),
      getPending: db.prepare(`SELECT * FROM pending_interrupts WHERE execution_id = ?`),
      getIdem: db.prepare(`SELECT * FROM idempotency WHERE execution_id = ? AND key = ?`),
      insertIdem: db.prepare(
        `INSERT INTO idempotency (execution_id, key, result, created_at) VALUES (@execution_id, @key, @result, @created_at)
         ON CONFLICT (execution_id, key) DO NOTHING`,
      ),
      listIdem: db.prepare(`SELECT * FROM idempotency WHERE execution_id = ? ORDER BY created_at, key`),
      markSynced: db.prepare(`UPDATE outbox SET synced = 1 WHERE id = ? AND synced = 0`),
      markQuarantined: db.prepare(`UPDATE outbox SET synced = 1, sync_error = ? WHERE id = ? AND synced = 0`),
      getLease: db.prepare(`SELECT * FROM leases WHERE execution_id = ?`),
      upsertLease: db.prepare(
        `INSERT INTO leases (execution_id, holder, epoch, expires_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (execution_id) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch, expires_at = excluded.expires_at`,
      ),
      renewLease: db.prepare(`UPDATE leases SET expires_at = ? WHERE execution_id = ? AND holder = ? AND epoch = ?`),
      releaseLease: db.prepare(`UPDATE leases SET holder = NULL, expires_at = 0 WHERE execution_id = ? AND holder = ? AND epoch = ?`),
      clearLease: db.prepare(`UPDATE leases SET holder = NULL, expires_at = 0 WHERE execution_id = ?`),
      cancelledMarker: db.prepare(
        `SELECT c.* FROM executions e JOIN checkpoints c ON c.id = e.last_id
         WHERE e.execution_id = ? AND e.last_step = 'run_end' AND e.last_status = 'cancelled'`,
      ),
      // an execution's outbox events: checkpoint events through the checkpoints' index, the other kinds through their own
      dropCheckpointEvents: db.prepare(`DELETE FROM outbox WHERE id IN (SELECT id FROM checkpoints WHERE execution_id = ?)`),
      dropOtherEvents: db.prepare(`DELETE FROM outbox WHERE execution_id = ? AND kind <> 'checkpoint'`),
      dropUnsentCheckpointEvents: db.prepare(`DELETE FROM outbox WHERE id IN (SELECT id FROM checkpoints WHERE execution_id = ?) AND synced = 0`),
      dropUnsentOtherEvents: db.prepare(`DELETE FROM outbox WHERE execution_id = ? AND kind <> 'checkpoint' AND synced = 0`),
      deleteCheckpoints: db.prepare(`DELETE FROM checkpoints WHERE execution_id = ?`),
      deletePending: db.prepare(`DELETE FROM pending_interrupts WHERE execution_id = ?`),
      deleteIdem: db.prepare(`DELETE FROM idempotency WHERE execution_id = ?`),
      deleteExec: db.prepare(`DELETE FROM executions WHERE execution_id = ?`),
      deleteLease: db.prepare(`DELETE FROM leases WHERE execution_id = ?`),
      prunable: db.prepare(
        `SELECT e.execution_id,
                (EXISTS (SELECT 1 FROM checkpoints c JOIN outbox o ON o.id = c.id AND o.synced = 0 WHERE c.execution_id = e.execution_id)
                 OR EXISTS (SELECT 1 FROM outbox o WHERE o.execution_id = e.execution_id AND o.kind <> 'checkpoint' AND o.synced = 0)) AS unsynced
         FROM executions e
         WHERE e.last_step = 'run_end' AND e.last_status IN ('completed', 'failed', 'cancelled') AND e.updated_at < ?
           AND NOT EXISTS (SELECT 1 FROM pending_interrupts p WHERE p.execution_id = e.execution_id)
           AND e.execution_id > ?
         ORDER BY e.execution_id LIMIT ${PRUNE_CHUNK}`,
      ),
      unsynced: db.prepare(
        `SELECT o.seq AS o_seq, o.id AS o_id, o.kind AS o_kind, o.execution_id AS o_execution_id,
                o.payload AS o_payload, o.bytes AS o_bytes, o.created_at AS o_created_at, c.*
         FROM outbox o LEFT JOIN checkpoints c ON o.kind = 'checkpoint' AND c.id = o.id
         WHERE o.synced = 0 ORDER BY o.seq LIMIT ?`,
      ),
      pendingStats: db.prepare(`SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes, min(created_at) AS oldest FROM outbox WHERE synced = 0`),
      quarantinedCount: db.prepare(`SELECT count(*) AS n FROM outbox WHERE sync_error IS NOT NULL`),
      lastQuarantined: db.prepare(`SELECT sync_error FROM outbox WHERE sync_error IS NOT NULL ORDER BY seq DESC LIMIT 1`),
      outboxSeq: db.prepare(`SELECT seq FROM outbox WHERE id = ?`),
    };
  }

  /** The statement for a text built from a call's options (a handful of variants each), prepared once. */
  private variant(sql: string): Database.Statement {
    let st = this.variants.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.variants.set(sql, st);
    }
    return st;
  }

  async setup(): Promise<void> {
    this.assertOpen();
    migrateSqlite(this.db);
  }

  private queue(e: QueuedEvent): void {
    if (!this.outbox) return;
    this.st.insertOutbox.run(e.id, e.kind, e.executionId, e.payload, e.bytes, canonicalTime());
  }

  /** Delete an execution's outbox events (only the unsent ones with `pendingOnly`), before its checkpoints. */
  private dropOutbox(executionId: string, pendingOnly: boolean): void {
    (pendingOnly ? this.st.dropUnsentCheckpointEvents : this.st.dropCheckpointEvents).run(executionId);
    (pendingOnly ? this.st.dropUnsentOtherEvents : this.st.dropOtherEvents).run(executionId);
  }

  /** Rows base..seq of an execution, as the codec needs them (id, seq, state only). */
  private chain(executionId: string, base: number, seq: number): ChainRow[] {
    return (this.st.chain.all(executionId, base, seq) as ChainColumns[]).map(fromColumns.chain);
  }

  protected async readChain(executionId: string, base: number, seq: number): Promise<ChainRow[]> {
    return this.chain(executionId, base, seq);
  }

  /** Write one checkpoint inside the caller's IMMEDIATE transaction. */
  private writeCheckpoint(input: C.CheckpointInput): RowText {
    const ex = this.st.getExec.get(input.executionId) as { next_seq: number; last_id: string } | undefined;
    if (checkPrev(input, ex ?? null) === 'lookup') {
      checkPrevOwner(input, (this.st.getById.get(input.prevId!) as { execution_id: string } | undefined)?.execution_id);
    }
    const seq = ex ? ex.next_seq : 0;
    const prev = ex && seq > 0 ? this.cursorAt(input.executionId, seq - 1, ex.last_id, (b, s) => this.chain(input.executionId, b, s)) : null;
    const rt = buildRow(input, seq, prev, this.writerId);
    try {
      this.st.insertCheckpoint.run(toColumns.checkpoint(rt.row, rt));
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw new DuplicateIdError(rt.row.id);
      throw e;
    }
    this.st.upsertExec.run(toColumns.execution(rt.row));
    this.queue(checkpointWritten(rt));
    return rt;
  }

  private leaseInfo(executionId: string): C.LeaseInfo | null {
    const row = this.st.getLease.get(executionId) as LeaseColumns | undefined;
    return row ? leaseInfoOf(row, Date.now()) : null;
  }

  /** The cancel marker when the execution's newest row is one (inside the caller's transaction). */
  private cancelledMarker(executionId: string): Checkpoint | null {
    const row = this.st.cancelledMarker.get(executionId) as CheckpointColumns | undefined;
    return row ? fromColumns.checkpoint(row) : null;
  }

  /** Inside the caller's IMMEDIATE transaction: take the lease if free or expired, else RunInProgress (RunCancelled for a cancelled run). */
  private takeLease(executionId: string, request: C.LeaseRequest): C.Lease {
    const marker = this.cancelledMarker(executionId);
    if (marker) throw runCancelled(marker);
    const now = Date.now();
    const row = this.st.getLease.get(executionId) as LeaseColumns | undefined;
    if (row && row.holder !== null && Number(row.expires_at) > now) {
      throw new RunInProgress(executionId, row.holder, isoOf(Number(row.expires_at)));
    }
    const epoch = (row ? Number(row.epoch) : 0) + 1;
    this.st.upsertLease.run(executionId, request.holder, epoch, now + request.ttlMs);
    return { executionId, holder: request.holder, ttlMs: request.ttlMs, epoch, expiresAt: isoOf(now + request.ttlMs) };
  }

  /** Inside the caller's IMMEDIATE transaction: the lease is still this one; renew (or release) it, else LeaseLost. */
  private fence(lease: C.Lease, release: boolean): C.Lease {
    const now = Date.now();
    const info = release ? this.st.releaseLease.run(lease.executionId, lease.holder, lease.epoch) : this.st.renewLease.run(now + lease.ttlMs, lease.executionId, lease.holder, lease.epoch);
    if (info.changes !== 1) {
      // a cancel clears the holder: the runner is told why it must stop
      const marker = this.cancelledMarker(lease.executionId);
      throw marker ? runCancelled(marker) : leaseLost(lease, this.leaseInfo(lease.executionId));
    }
    return { ...lease, expiresAt: isoOf(release ? now : now + lease.ttlMs) };
  }

  async acquireLease(executionId: string, request: C.LeaseRequest): Promise<C.Lease> {
    this.assertOpen();
    checkLease(executionId, request);
    return this.db.transaction(() => this.takeLease(executionId, request)).immediate();
  }

  async renewLease(lease: C.Lease): Promise<C.Lease> {
    this.assertOpen();
    checkLease(lease?.executionId, lease);
    return this.db.transaction(() => this.fence(lease, false)).immediate();
  }

  async releaseLease(lease: C.Lease): Promise<void> {
    this.assertOpen();
    checkLease(lease?.executionId, lease);
    this.st.releaseLease.run(lease.executionId, lease.holder, lease.epoch);
  }

  async getLease(executionId: string): Promise<C.LeaseInfo | null> {
    this.assertOpen();
    return this.leaseInfo(executionId);
  }

  async cancel(executionId: string, options?: C.CancelOptions): Promise<C.CancelResult> {
    this.assertOpen();
    const reason = checkCancel(executionId, options);
    let out: { rt: RowText | null; marker: Checkpoint; closed: PendingInterrupt | null };
    try {
      out = this.db
        .transaction(() => {
          const cols = this.st.latest.get(executionId) as CheckpointColumns | undefined;
          if (!cols) throw notFound(executionId);
          const last = fromColumns.checkpoint(cols);
          if (alreadyCancelled(last)) return { rt: null, marker: last, closed: null };
          const open = this.st.getPending.get(executionId) as PendingColumns | undefined;
          const closed = open ? fromColumns.pending(open) : null;
          if (closed) {
            this.st.deletePending.run(executionId);
            this.queue(interruptClosed(closed, this.writerId));
          }
          // every runner is fenced out: its next write or renewal finds the holder cleared and the marker
          this.st.clearLease.run(executionId);
          const state = stateOfCursor(this.cursorAt(executionId, last.seq, last.id, (b, s) => this.chain(executionId, b, s)));
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
    return this.puts.enqueue({ input, lease });
  }

  protected override settle(): void {
    // inside an open transaction (a fault hook calling back in) the batch would commit as a savepoint only
    if (this.db.inTransaction) return;
    this.puts.settle();
  }

  /** One put's savepoint (better-sqlite3 nests a transaction function as a savepoint). */
  private putOne({ input, lease }: QueuedPut): RowText {
    if (lease) this.fence(lease, input.step === 'run_end');
    return this.writeCheckpoint(input);
  }

  /** The puts of one turn, inside one IMMEDIATE transaction, a savepoint each; a failing put rolls back its own savepoint only. */
  private commitPuts(jobs: QueuedPut[]): BatchOutcome<RowText>[] {
    if (jobs.length === 1) {
      // a lone put needs no savepoint: its failure rolls the whole transaction back, as before group commit
      const rt = this.putOne(jobs[0]);
      this.fault('store.groupCommit.beforeCommit');
      return [{ ok: true, value: rt }];
    }
    const out = jobs.map((job): BatchOutcome<RowText> => {
      try {
        const rt = this.tx.putOne(job);
        // the next put of this execution in the batch encodes against this row without reading it back
        this.cursors.set(job.input.executionId, rt.cursor);
        return { ok: true, value: rt };
      } catch (error) {
        // an error that ended the whole transaction (I/O, disk full) fails the batch: nothing of it commits
        if (!this.db.inTransaction) throw error;
        this.cursors.drop(job.input.executionId);
        return { ok: false, error };
      }
    });
    this.fault('store.groupCommit.beforeCommit');
    return out;
  }

  private readonly puts = new GroupCommit<QueuedPut, RowText, Checkpoint>({
    commit: (jobs) => {
      try {
        return this.tx.commitPuts.immediate(jobs);
      } catch (e) {
        // rows cached inside the transaction were never committed
        for (const j of jobs) this.cursors.drop(j.input.executionId);
        throw e;
      }
    },
    after: ({ input }, rt) => {
      this.afterCommit(input.executionId, written(rt), 'store.put.afterCommit');
      return rt.row;
    },
    failed: ({ input }, error) => {
      this.cursors.drop(input.executionId);
      return fencedWriteError(error, input);
    },
  });

  async recordInterrupt(input: C.CheckpointInput, pause: { reason: string; context: Json | null }, options: C.WriteOptions = {}): Promise<{ checkpoint: Checkpoint; pending: PendingInterrupt }> {
    const lease = this.checkWrite(input, options);
    let out: { rt: RowText; pending: PendingInterrupt };
    try {
      out = this.db
        .transaction(() => {
          // a pause ends this runner's hold: the resumer that claims it takes the lease anew
          if (lease) this.fence(lease, true);
          const rt = this.writeCheckpoint(input);
          const pending = pendingFor(rt.row, pause.reason, pause.context);
          this.fault('store.recordInterrupt.betweenRows');
          try {
            this.st.insertPending.run(toColumns.pending(pending));
          } catch (e) {
            if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
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
          const lease = ask ? (isHeld(ask) ? this.fence(ask, false) : this.takeLease(executionId, ask)) : null;
          const pending = fromColumns.pending(row);
          const claimedAt = canonicalTime();
          decisions.recordClaim(this.db, { checkpoint_id: checkpointId, execution_id: executionId, writer_id: this.writerId, decision_id: decisionId, claimed_at: claimedAt });
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
    this.afterCommit(executionId, written(out.rt), 'store.claim.afterCommit');
    return { pending: out.pending, checkpoint: out.rt?.row ?? null, lease: out.lease };
  }

  async recordDecision(decision: Decision): Promise<C.RecordDecisionResult> {
    this.assertOpen();
    const d = checkDecision(decision);
    const out = this.db.transaction(() => decisions.insertDecision(this.db, d, (e) => this.queue(e))).immediate();
    if (out.recorded) this.committed(null);
    return out;
  }

  async listDecisions(options: C.ListDecisionsOptions = {}): Promise<C.DecisionPage> {
    this.assertOpen();
    return decisions.listDecisions(this.db, options);
  }

  async getDecision(executionId: string, checkpointId: string): Promise<C.StoredDecision | null> {
    this.assertOpen();
    return decisions.getDecision(this.db, executionId, checkpointId);
  }

  async getPendingInterrupt(executionId: string): Promise<PendingInterrupt | null> {
    this.assertOpen();
    const row = this.st.getPending.get(executionId) as PendingColumns | undefined;
    return row ? fromColumns.pending(row) : null;
  }

  async listPendingInterrupts(options: { afterExecutionId?: string; limit?: number } = {}): Promise<PendingInterrupt[]> {
    this.assertOpen();
    const rows = this.variant(`SELECT * FROM pending_interrupts WHERE execution_id > ? ORDER BY execution_id ${options.limit ? 'LIMIT ?' : ''}`).all(
      ...[options.afterExecutionId ?? '', ...(options.limit ? [options.limit] : [])],
    ) as PendingColumns[];
    return rows.map(fromColumns.pending);
  }

  async latest(executionId: string): Promise<Checkpoint | null> {
    this.assertOpen();
    const row = this.st.latest.get(executionId) as CheckpointColumns | undefined;
    return row ? fromColumns.checkpoint(row) : null;
  }

  async getById(id: string): Promise<Checkpoint | null> {
    this.assertOpen();
    const row = this.st.getById.get(id) as CheckpointColumns | undefined;
    return row ? fromColumns.checkpoint(row) : null;
  }

  async list(executionId: string, options: C.ListOptions = {}): Promise<Checkpoint[]> {
    this.assertOpen();
    const where = ['execution_id = ?'];
    const args: unknown[] = [executionId];
    if (options.afterSeq !== undefined) {
      where.push('seq > ?');
      args.push(options.afterSeq);
    }
    if (options.beforeSeq !== undefined) {
      where.push('seq < ?');
      args.push(options.beforeSeq);
    }
    let sql = `SELECT * FROM checkpoints WHERE ${where.join(' AND ')} ORDER BY seq ${options.order === 'desc' ? 'DESC' : 'ASC'}`;
    if (options.limit !== undefined) {
      sql += ' LIMIT ?';
      args.push(options.limit);
    }
    return (this.variant(sql).all(...args) as CheckpointColumns[]).map(fromColumns.checkpoint);
  }

  async listExecutions(options: { afterExecutionId?: string; limit?: number; state?: C.ExecutionState } = {}): Promise<C.ExecutionSummary[]> {
    this.assertOpen();
    const rows = this.variant(
      `SELECT e.*, p.execution_id IS NOT NULL AS paused,
              l.holder AS lease_holder, l.epoch AS lease_epoch, l.expires_at AS lease_expires_at
       FROM executions e
       LEFT JOIN pending_interrupts p ON p.execution_id = e.execution_id
       LEFT JOIN leases l ON l.execution_id = e.execution_id
       WHERE e.execution_id > ? ${options.state ? `AND ${stateCondition(options.state)}` : ''}
       ORDER BY e.execution_id ${options.limit ? 'LIMIT ?' : ''}`,
    ).all(...[options.afterExecutionId ?? '', ...(options.limit ? [options.limit] : [])]) as ExecRow[];
    const now = Date.now();
    return rows.map((r) => summaryFromRow(r, now));
  }

  async getIdempotent(executionId: string, key: string): Promise<C.IdempotentLookup> {
    this.assertOpen();
    const row = this.st.getIdem.get(executionId, key) as IdempotencyColumns | undefined;
    return row ? { hit: true, result: fromColumns.idempotency(row).result } : { hit: false };
  }

  async putIdempotent(executionId: string, key: string, result: Json | null): Promise<IdempotencyEntry> {
    this.assertOpen();
    checkIdempotencyKey(executionId, key);
    checkJson('idempotent result', result);
    const entry = this.db
      .transaction(() => {
        const e: IdempotencyEntry = { executionId, key, result, createdAt: canonicalTime() };
        if (this.st.insertIdem.run(toColumns.idempotency(e)).changes === 1) {
          this.queue(idempotencyRecorded(e));
          return e;
        }
        return fromColumns.idempotency(this.st.getIdem.get(executionId, key) as IdempotencyColumns);
      })
      .immediate();
    this.afterCommit(executionId, written(null), 'store.idempotency.afterCommit');
    return entry;
  }

  async listIdempotent(executionId: string): Promise<IdempotencyEntry[]> {
    this.assertOpen();
    return (this.st.listIdem.all(executionId) as IdempotencyColumns[]).map(fromColumns.idempotency);
  }

  async deleteExecution(executionId: string): Promise<C.DeleteResult> {
    this.assertOpen();
    const out = this.db
      .transaction(() => {
        // events never sent are moot once the execution is gone; the deletion itself is sent
        this.dropOutbox(executionId, true);
        const checkpoints = this.st.deleteCheckpoints.run(executionId).changes;
        const pending = this.st.deletePending.run(executionId).changes;
        const idempotency = this.st.deleteIdem.run(executionId).changes;
        const had = this.st.deleteExec.run(executionId).changes;
        this.st.deleteLease.run(executionId);
        decisions.dropDecisions(this.db, executionId);
        if (had || checkpoints || idempotency) this.queue(executionDeleted(executionId));
        return { checkpoints, pending, idempotency };
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
        .transaction(() => {
          for (const id of walk.take(this.st.prunable.all(walk.cutoff, walk.after) as PruneCandidate[])) {
            this.dropOutbox(id, false);
            const checkpoints = this.st.deleteCheckpoints.run(id).changes;
            const idempotency = this.st.deleteIdem.run(id).changes;
            this.st.deleteExec.run(id);
            this.st.deleteLease.run(id);
            decisions.dropDecisions(this.db, id);
            this.cursors.drop(id);
            walk.deleted({ checkpoints, idempotency });
          }
        })
        .immediate();
    }
    return walk.result;
  }

  async fetchUnsynced(options: { limit: number; maxBytes: number }): Promise<C.OutboxEntry[]> {
    this.assertOpen();
    const rows = this.st.unsynced.all(Math.max(1, options.limit)) as OutboxJoinRow[];
    return takeByBytes(rows.map(entryFromJoin), options.maxBytes);
  }

  async applyResults(results: { synced?: string[]; quarantined?: Record<string, string> }): Promise<void> {
    this.assertOpen();
    this.db
      .transaction(() => {
        for (const id of results.synced ?? []) this.st.markSynced.run(id);
        for (const [id, reason] of Object.entries(results.quarantined ?? {})) this.st.markQuarantined.run(reason, id);
      })
      .immediate();
  }

  async outboxStats(): Promise<C.OutboxStats> {
    this.assertOpen();
    const p = this.st.pendingStats.get() as { n: number; bytes: number; oldest: string | null };
    const q = this.st.quarantinedCount.get() as { n: number };
    const last = this.st.lastQuarantined.get() as { sync_error: string } | undefined;
    return outboxStatsOf(p, q.n, last?.sync_error ?? null);
  }

  async listQuarantined(options: { afterId?: string; limit?: number } = {}): Promise<C.QuarantinedEntry[]> {
    this.assertOpen();
    const after = options.afterId ? ((this.st.outboxSeq.get(options.afterId) as { seq: number } | undefined)?.seq ?? 0) : 0;
    const rows = this.variant(
      `SELECT id, kind, execution_id, sync_error, created_at FROM outbox
       WHERE sync_error IS NOT NULL AND seq > ? ORDER BY seq ${options.limit ? 'LIMIT ?' : ''}`,
    ).all(...[after, ...(options.limit ? [options.limit] : [])]) as QuarantinedColumns[];
    return rows.map(quarantinedFromColumns);
  }

  async importRows(bundle: C.RestoreBundle): Promise<C.ImportResult> {
    this.assertOpen();
    const { checkpoints, pending, idempotency: idem } = checkBundle(bundle);
    return this.db
      .transaction(() => {
        const plan = planImport(checkpoints, {
          idAt: (e, seq) => (this.st.getBySeq.get(e, seq) as { id: string } | undefined)?.id ?? null,
          find: (id) => {
            const r = this.st.getById.get(id) as CheckpointColumns | undefined;
            return r ? { executionId: r.execution_id, seq: Number(r.seq) } : null;
          },
        });
        const res = importResultOf(plan);
        for (const c of plan.insert) {
          this.st.insertCheckpoint.run(toColumns.checkpoint(c));
          this.st.upsertExec.run(toColumns.execution(c));
          this.cursors.drop(c.executionId);
          res.inserted++;
        }
        const executions = new Set(checkpoints.map((c) => c.executionId));
        if (pending) executions.add(pending.executionId);
        for (const e of [...executions].sort()) {
          // a pause is open only while its checkpoint is the newest row: one that is not is stale
          const open = this.st.getPending.get(e) as PendingColumns | undefined;
          const latest = this.st.latest.get(e) as CheckpointColumns | undefined;
          if (open && open.checkpoint_id !== latest?.id) {
            this.st.deletePending.run(e);
            res.stalePendingRemoved.push({ executionId: e, checkpointId: open.checkpoint_id });
          }
        }
        if (pending) {
          const latest = this.st.latest.get(pending.executionId) as CheckpointColumns | undefined;
          if (latest?.id === pending.checkpointId && !this.st.getPending.get(pending.executionId)) {
            this.st.insertPending.run(toColumns.pending(pending));
            res.pendingImported = true;
          }
        }
        for (const e of idem) res.idempotencyInserted += this.st.insertIdem.run(toColumns.idempotency(e)).changes;
        return res;
      })
      .immediate();
  }

  async getMeta(key: string): Promise<string | null> {
    this.assertOpen();
    const row = this.st.getMeta.get(`note:${key}`) as { value: string } | undefined;
    return row?.value ?? null;
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.assertOpen();
    this.st.setMeta.run(`note:${key}`, value);
  }

  /** How the puts were grouped so far: commits run, puts they held, the largest batch (for benches and tests). */
  get groupCommitStats(): { batches: number; writes: number; largest: number } {
    return { ...this.puts.stats };
  }

  /** `PRAGMA integrity_check` result ('ok' when healthy). */
  integrityCheck(): string {
    this.puts.settle();
    return this.db.pragma('integrity_check', { simple: true }) as string;
  }

  /** The underlying connection, for tools and tests. */
  get connection(): Database.Database {
    // raw reads see every put made before them, as the contract's reads do
    if (this.db.open) this.puts.settle();
    return this.db;
  }

  async close(): Promise<void> {
    // puts queued before the close are committed first, as they would have been before it
    // (a write listener may put while the queue commits: settle until nothing is left)
    while (this.db.open && this.puts.pending > 0) this.puts.settle();
    if (this.markClosed()) this.db.close();
  }
}
