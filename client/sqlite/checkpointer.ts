/**
 * SQLite adapter of the store contract (better-sqlite3).
 *
 * Durability settings: WAL journal, `busy_timeout`, and `synchronous=FULL` by
 * default: a committed row survives a process crash and a power loss.
 * `synchronous=NORMAL` survives a process crash (SIGKILL included) but may lose
 * the last commits on power loss or an OS crash. Every transaction that reads
 * then writes is `BEGIN IMMEDIATE`, so several processes may share one file
 * and a claim is atomic across them.
 */
import Database from 'better-sqlite3';
import { uuidv7 } from '../../shared/ids.js';
import { utf8Bytes } from '../../shared/json.js';
import type { Json } from '../../shared/json.js';
import { decodeChain, chainBase, stateOfCursor, type ChainRow, type CodecCursor, type State } from '../../shared/codec.js';
import {
  Checkpoint as CheckpointSchema,
  IdempotencyEntry as IdempotencySchema,
  PendingInterrupt as PendingSchema,
  type Checkpoint,
  type IdempotencyEntry,
  type OutboxEvent,
  type OutboxKind,
  type PendingInterrupt,
} from '../../shared/rows.js';
import type {
  CheckpointInput,
  Checkpointer,
  CancelOptions,
  CancelResult,
  ClaimResult,
  DeleteResult,
  ExecutionState,
  ExecutionSummary,
  IdempotentLookup,
  Lease,
  LeaseInfo,
  LeaseRequest,
  WriteOptions,
  ImportResult,
  ListOptions,
  OutboxEntry,
  OutboxStats,
  PauseRef,
  PruneOptions,
  PruneResult,
  QuarantinedEntry,
  RestoreBundle,
} from '../checkpointer.js';
import { PlaneGuardSlot } from '../checkpointer.js';
import { AlreadyFinished, DuplicateIdError, ExecutionGoneError, PauseExistsError, RunInProgress } from '../errors.js';
import { checkLease, fencedWriteError, isHeld, isoOf, leaseInfoOf, leaseLost, type LeaseColumns } from '../store/lease.js';
import { cancelMarker, checkCancel, isCancelMarker, notFound, runCancelled } from '../store/cancel.js';
import { noFaults, type FaultHook } from '../faults.js';
import {
  buildRow,
  canonicalTime,
  checkBundleRows,
  checkIdempotencyKey,
  checkInput,
  checkJson,
  chainRowFromColumns,
  executionExists,
  CursorCache,
  idempotencyFromColumns,
  pendingFor,
  pendingFromColumns,
  rowFromColumns,
  WriteSignal,
  type ChainColumns,
  type CheckpointColumns,
  type IdempotencyColumns,
  type PendingColumns,
  type RowText,
} from '../store/rows.js';
import { stateCondition, summaryFromRow, type ExecRow } from '../store/summary.js';
import { importResultOf, planImport } from '../store/import.js';
import { entryFromJoin, takeByBytes, type OutboxJoinRow } from '../store/outbox.js';
import { SQLITE_MIGRATIONS } from './migrations.js';

export type SqliteSynchronous = 'FULL' | 'NORMAL' | 'EXTRA';

export interface SqliteCheckpointerOptions {
  /** File path, or ':memory:' (one process only). */
  path: string;
  /** Default FULL. NORMAL trades the last commits on power loss for speed. */
  synchronous?: SqliteSynchronous;
  /** How long a writer waits for another process's lock. Default 10 s. */
  busyTimeoutMs?: number;
  /** This store's writer id; persisted on first open when absent. */
  writerId?: string;
  /** Queue outbox events for a plane. Default true. */
  outbox?: boolean;
  /** Named fault points for crash tests. */
  faults?: FaultHook;
}

const PRUNE_CHUNK = 500;

export class SqliteCheckpointer implements Checkpointer {
  readonly writerId: string;
  readonly path: string;
  readonly planeGuard = new PlaneGuardSlot();
  private readonly db: Database.Database;
  private readonly cursors = new CursorCache();
  private readonly signal = new WriteSignal();
  private readonly outbox: boolean;
  private readonly fault: FaultHook;
  private closed = false;
  private readonly st: ReturnType<SqliteCheckpointer['prepare']>;

  constructor(options: SqliteCheckpointerOptions) {
    this.path = options.path;
    this.outbox = options.outbox ?? true;
    this.fault = options.faults ?? noFaults;
    this.db = new Database(options.path);
    this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`);
    if (options.path !== ':memory:') this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    this.db.pragma('foreign_keys = ON');
    this.migrate();
    this.writerId = this.resolveWriterId(options.writerId);
    this.st = this.prepare();
  }

  private migrate(): void {
    const run = this.db.transaction(() => {
      const version = this.db.pragma('user_version', { simple: true }) as number;
      for (let v = version; v < SQLITE_MIGRATIONS.length; v++) {
        this.db.exec(SQLITE_MIGRATIONS[v]);
        this.db.pragma(`user_version = ${v + 1}`);
      }
    });
    run.immediate();
  }

  private resolveWriterId(given?: string): string {
    const tx = this.db.transaction(() => {
      const row = this.db.prepare(`SELECT value FROM waymark_meta WHERE key = 'writer_id'`).get() as
        | { value: string }
        | undefined;
      if (row) return row.value;
      const id = given ?? `sqlite-${uuidv7()}`;
      this.db.prepare(`INSERT INTO waymark_meta (key, value) VALUES ('writer_id', ?)`).run(id);
      return id;
    });
    const stored = tx.immediate();
    return given ?? stored;
  }

  private prepare() {
    const db = this.db;
    return {
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
      insertOutbox: db.prepare(
        `INSERT INTO outbox (id, kind, execution_id, payload, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
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
        `INSERT INTO idempotency (execution_id, key, result, created_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (execution_id, key) DO NOTHING`,
      ),
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
      lastOf: db.prepare(`SELECT last_step, last_status FROM executions WHERE execution_id = ?`),
    };
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('SqliteCheckpointer is closed');
  }

  async setup(): Promise<void> {
    this.assertOpen();
    this.migrate();
  }

  private queue(id: string, kind: OutboxKind, executionId: string, payload: string | null, bytes: number): void {
    if (!this.outbox) return;
    this.st.insertOutbox.run(id, kind, executionId, payload, bytes, canonicalTime());
  }

  /**
   * Delete an execution's outbox events (only the unsent ones with `pendingOnly`),
   * before its checkpoints: checkpoint events are found through the checkpoints'
   * index, the other kinds through their own partial index.
   */
  private dropOutbox(executionId: string, pendingOnly: boolean): void {
    const only = pendingOnly ? 'AND synced = 0' : '';
    this.db.prepare(`DELETE FROM outbox WHERE id IN (SELECT id FROM checkpoints WHERE execution_id = ?) ${only}`).run(executionId);
    this.db.prepare(`DELETE FROM outbox WHERE execution_id = ? AND kind <> 'checkpoint' ${only}`).run(executionId);
  }

  /** The codec cursor of row `seq` of an execution, from the cache or decoded from its chain. */
  private cursorAt(executionId: string, seq: number, id: string): CodecCursor {
    const cached = this.cursors.get(executionId, seq, id);
    if (cached) return cached;
    const [last] = this.chain(executionId, seq, seq);
    return decodeChain(this.chain(executionId, chainBase(last), seq)).cursor;
  }

  /** Rows base..seq of an execution, as the codec needs them (id, seq, state only). */
  private chain(executionId: string, base: number, seq: number): ChainRow[] {
    return (this.st.chain.all(executionId, base, seq) as ChainColumns[]).map(chainRowFromColumns);
  }

  /** Write one checkpoint inside the caller's IMMEDIATE transaction. */
  private writeCheckpoint(input: CheckpointInput): RowText {
    const ex = this.st.getExec.get(input.executionId) as { next_seq: number; last_id: string } | undefined;
    this.checkPrev(input, ex ?? null);
    const seq = ex ? ex.next_seq : 0;
    const prev = ex && seq > 0 ? this.cursorAt(input.executionId, seq - 1, ex.last_id) : null;
    const rt = buildRow(input, seq, prev, this.writerId);
    const r = rt.row;
    try {
      this.st.insertCheckpoint.run({
        id: r.id,
        execution_id: r.executionId,
        seq,
        node_id: r.nodeId,
        turn: r.turn,
        step: r.step,
        status: r.status,
        agent_path: r.agentPath,
        parent_id: r.parentId,
        state: rt.stateText,
        node_input: rt.nodeInput,
        node_output: rt.nodeOutput,
        interrupt_reason: r.interruptReason,
        interrupt_context: rt.interruptContext,
        created_at: r.createdAt,
        writer_id: r.writerId,
      });
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw new DuplicateIdError(r.id);
      throw e;
    }
    this.st.upsertExec.run({
      execution_id: r.executionId,
      next_seq: seq + 1,
      last_id: r.id,
      last_node_id: r.nodeId,
      last_step: r.step,
      last_status: r.status,
      updated_at: r.createdAt,
    });
    this.queue(r.id, 'checkpoint', r.executionId, null, rt.bytes);
    return rt;
  }

  /** Refuse a write whose `prevId` is gone (or, for null, an execution that has rows). */
  private checkPrev(input: CheckpointInput, ex: { next_seq: number; last_id: string } | null): void {
    if (input.prevId === undefined) return;
    const has = ex !== null && ex.next_seq > 0;
    if (input.prevId === null) {
      if (has) throw executionExists(input.executionId);
      return;
    }
    if (has && ex.last_id === input.prevId) return;
    const row = this.st.getById.get(input.prevId) as { execution_id: string } | undefined;
    if (!row || row.execution_id !== input.executionId) throw new ExecutionGoneError(input.executionId, input.prevId);
  }

  private committed(rt: RowText | null): void {
    if (rt) this.cursors.set(rt.row.executionId, rt.cursor);
    if (this.outbox) this.signal.emit();
  }

  private leaseInfo(executionId: string): LeaseInfo | null {
    const row = this.st.getLease.get(executionId) as LeaseColumns | undefined;
    return row ? leaseInfoOf(row, Date.now()) : null;
  }

  /** The cancel marker when the execution's newest row is one (inside the caller's transaction). */
  private cancelledMarker(executionId: string): Checkpoint | null {
    const last = this.st.lastOf.get(executionId) as { last_step: string; last_status: string } | undefined;
    if (!last || !isCancelMarker({ step: last.last_step as Checkpoint['step'], status: last.last_status as Checkpoint['status'] })) return null;
    return rowFromColumns(this.st.latest.get(executionId) as CheckpointColumns);
  }

  /** Inside the caller's IMMEDIATE transaction: take the lease if free or expired, else RunInProgress (RunCancelled for a cancelled run). */
  private takeLease(executionId: string, request: LeaseRequest): Lease {
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
  private fence(lease: Lease, release: boolean): Lease {
    const now = Date.now();
    const info = release
      ? this.st.releaseLease.run(lease.executionId, lease.holder, lease.epoch)
      : this.st.renewLease.run(now + lease.ttlMs, lease.executionId, lease.holder, lease.epoch);
    if (info.changes !== 1) {
      // a cancel clears the holder: the runner is told why it must stop
      const marker = this.cancelledMarker(lease.executionId);
      throw marker ? runCancelled(marker) : leaseLost(lease, this.leaseInfo(lease.executionId));
    }
    return { ...lease, expiresAt: isoOf(release ? now : now + lease.ttlMs) };
  }

  async acquireLease(executionId: string, request: LeaseRequest): Promise<Lease> {
    this.assertOpen();
    checkLease(executionId, request);
    return this.db.transaction(() => this.takeLease(executionId, request)).immediate();
  }

  async renewLease(lease: Lease): Promise<Lease> {
    this.assertOpen();
    checkLease(lease?.executionId, lease);
    return this.db.transaction(() => this.fence(lease, false)).immediate();
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.assertOpen();
    checkLease(lease?.executionId, lease);
    this.st.releaseLease.run(lease.executionId, lease.holder, lease.epoch);
  }

  async getLease(executionId: string): Promise<LeaseInfo | null> {
    this.assertOpen();
    return this.leaseInfo(executionId);
  }

  async cancel(executionId: string, options?: CancelOptions): Promise<CancelResult> {
    this.assertOpen();
    const reason = checkCancel(executionId, options);
    let out: { rt: RowText | null; marker: Checkpoint; closed: PendingInterrupt | null };
    try {
      out = this.db
        .transaction(() => {
          const cols = this.st.latest.get(executionId) as CheckpointColumns | undefined;
          if (!cols) throw notFound(executionId);
          const last = rowFromColumns(cols);
          if (isCancelMarker(last)) return { rt: null, marker: last, closed: null };
          if (last.step === 'run_end' && last.status === 'completed') throw new AlreadyFinished(executionId, last.id);
          const open = this.st.getPending.get(executionId) as PendingColumns | undefined;
          let closed: PendingInterrupt | null = null;
          if (open) {
            closed = pendingFromColumns(open);
            this.db.prepare(`DELETE FROM pending_interrupts WHERE execution_id = ?`).run(executionId);
            const event: OutboxEvent = {
              kind: 'interrupt_closed',
              id: uuidv7(),
              executionId,
              checkpointId: closed.checkpointId,
              writerId: this.writerId,
              closedAt: canonicalTime(),
            };
            const text = JSON.stringify(event);
            this.queue(event.id, 'interrupt_closed', executionId, text, utf8Bytes(text));
          }
          // every runner is fenced out: its next write or renewal finds the holder cleared and the marker
          this.st.clearLease.run(executionId);
          const state = stateOfCursor(this.cursorAt(executionId, last.seq, last.id));
          const rt = this.writeCheckpoint(cancelMarker(last, state, reason));
          return { rt, marker: rt.row, closed };
        })
        .immediate();
    } catch (e) {
      this.cursors.drop(executionId);
      throw e;
    }
    this.committed(out.rt);
    this.fault('store.cancel.afterCommit');
    return { checkpoint: out.marker, closedPause: out.closed, alreadyCancelled: out.rt === null };
  }

  async put(input: CheckpointInput, options: WriteOptions = {}): Promise<Checkpoint> {
    this.assertOpen();
    checkInput(input);
    const lease = options.lease;
    if (lease) checkLease(input.executionId, lease);
    let rt: RowText;
    try {
      rt = this.db
        .transaction(() => {
          if (lease) this.fence(lease, input.step === 'run_end');
          return this.writeCheckpoint(input);
        })
        .immediate();
    } catch (e) {
      this.cursors.drop(input.executionId);
      throw fencedWriteError(e, input);
    }
    this.committed(rt);
    this.fault('store.put.afterCommit');
    return rt.row;
  }

  async recordInterrupt(
    input: CheckpointInput,
    pause: { reason: string; context: Json | null },
    options: WriteOptions = {},
  ): Promise<{ checkpoint: Checkpoint; pending: PendingInterrupt }> {
    this.assertOpen();
    checkInput(input);
    const lease = options.lease;
    if (lease) checkLease(input.executionId, lease);
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
            this.st.insertPending.run({
              execution_id: pending.executionId,
              checkpoint_id: pending.checkpointId,
              node_id: pending.nodeId,
              reason: pending.reason,
              context: pending.context === null ? null : JSON.stringify(pending.context),
              agent_path: pending.agentPath,
              created_at: pending.createdAt,
            });
          } catch (e) {
            if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
              throw new PauseExistsError(pending.executionId);
            }
            throw e;
          }
          const event: OutboxEvent = { kind: 'interrupt_opened', id: uuidv7(), row: pending };
          const text = JSON.stringify(event);
          this.queue(event.id, 'interrupt_opened', pending.executionId, text, utf8Bytes(text));
          return { rt, pending };
        })
        .immediate();
    } catch (e) {
      this.cursors.drop(input.executionId);
      throw fencedWriteError(e, input);
    }
    this.committed(out.rt);
    this.fault('store.recordInterrupt.afterCommit');
    return { checkpoint: out.rt.row, pending: out.pending };
  }

  async claimInterrupt(pause: PauseRef, options?: { next?: CheckpointInput; lease?: LeaseRequest | Lease }): Promise<ClaimResult | null> {
    this.assertOpen();
    const { executionId, checkpointId } = pause;
    if (options?.next) checkInput(options.next);
    const ask = options?.lease;
    if (ask) checkLease(executionId, ask);
    let out: { pending: PendingInterrupt; rt: RowText | null; lease: Lease | null } | null;
    try {
      out = this.db
        .transaction(() => {
          const row = this.st.claimPending.get(executionId, checkpointId) as PendingColumns | undefined;
          if (!row) return null;
          // the claim and the lease are one decision: refused lease, nothing claimed (the transaction rolls back)
          const lease = ask ? (isHeld(ask) ? this.fence(ask, false) : this.takeLease(executionId, ask)) : null;
          const pending = pendingFromColumns(row);
          const event: OutboxEvent = {
            kind: 'interrupt_claimed',
            id: uuidv7(),
            executionId,
            checkpointId: pending.checkpointId,
            writerId: this.writerId,
            claimedAt: canonicalTime(),
          };
          const text = JSON.stringify(event);
          this.queue(event.id, 'interrupt_claimed', executionId, text, utf8Bytes(text));
          const rt = options?.next ? this.writeCheckpoint(options.next) : null;
          return { pending, rt, lease };
        })
        .immediate();
    } catch (e) {
      this.cursors.drop(executionId);
      throw e;
    }
    if (!out) return null;
    this.committed(out.rt);
    this.fault('store.claim.afterCommit');
    return { pending: out.pending, checkpoint: out.rt?.row ?? null, lease: out.lease };
  }

  async getPendingInterrupt(executionId: string): Promise<PendingInterrupt | null> {
    this.assertOpen();
    const row = this.st.getPending.get(executionId) as PendingColumns | undefined;
    return row ? pendingFromColumns(row) : null;
  }

  async listPendingInterrupts(options: { afterExecutionId?: string; limit?: number } = {}): Promise<PendingInterrupt[]> {
    this.assertOpen();
    const rows = this.db
      .prepare(
        `SELECT * FROM pending_interrupts WHERE execution_id > ? ORDER BY execution_id ${options.limit ? 'LIMIT ?' : ''}`,
      )
      .all(...[options.afterExecutionId ?? '', ...(options.limit ? [options.limit] : [])]) as PendingColumns[];
    return rows.map(pendingFromColumns);
  }

  async latest(executionId: string): Promise<Checkpoint | null> {
    this.assertOpen();
    const row = this.st.latest.get(executionId) as CheckpointColumns | undefined;
    return row ? rowFromColumns(row) : null;
  }

  async getById(id: string): Promise<Checkpoint | null> {
    this.assertOpen();
    const row = this.st.getById.get(id) as CheckpointColumns | undefined;
    return row ? rowFromColumns(row) : null;
  }

  async list(executionId: string, options: ListOptions = {}): Promise<Checkpoint[]> {
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
    return (this.db.prepare(sql).all(...args) as CheckpointColumns[]).map(rowFromColumns);
  }

  async readState(row: Checkpoint): Promise<State> {
    this.assertOpen();
    const cached = this.cursors.peek(row.executionId, row.seq, row.id);
    if (cached) return stateOfCursor(cached);
    const { state, cursor } = decodeChain(this.chain(row.executionId, chainBase(row), row.seq));
    this.cursors.offer(row.executionId, cursor);
    return state;
  }

  async listExecutions(options: { afterExecutionId?: string; limit?: number; state?: ExecutionState } = {}): Promise<ExecutionSummary[]> {
    this.assertOpen();
    const rows = this.db
      .prepare(
        `SELECT e.*, p.execution_id IS NOT NULL AS paused,
                l.holder AS lease_holder, l.epoch AS lease_epoch, l.expires_at AS lease_expires_at
         FROM executions e
         LEFT JOIN pending_interrupts p ON p.execution_id = e.execution_id
         LEFT JOIN leases l ON l.execution_id = e.execution_id
         WHERE e.execution_id > ? ${options.state ? `AND ${stateCondition(options.state)}` : ''}
         ORDER BY e.execution_id ${options.limit ? 'LIMIT ?' : ''}`,
      )
      .all(...[options.afterExecutionId ?? '', ...(options.limit ? [options.limit] : [])]) as ExecRow[];
    const now = Date.now();
    return rows.map((r) => summaryFromRow(r, now));
  }

  async getIdempotent(executionId: string, key: string): Promise<IdempotentLookup> {
    this.assertOpen();
    const row = this.st.getIdem.get(executionId, key) as IdempotencyColumns | undefined;
    return row ? { hit: true, result: idempotencyFromColumns(row).result } : { hit: false };
  }

  async putIdempotent(executionId: string, key: string, result: Json | null): Promise<IdempotencyEntry> {
    this.assertOpen();
    checkIdempotencyKey(executionId, key);
    checkJson('idempotent result', result);
    const entry = this.db
      .transaction(() => {
        const createdAt = canonicalTime();
        const text = result === null ? null : JSON.stringify(result);
        const info = this.st.insertIdem.run(executionId, key, text, createdAt);
        if (info.changes === 1) {
          const e: IdempotencyEntry = { executionId, key, result, createdAt };
          const event: OutboxEvent = { kind: 'idempotency', id: uuidv7(), row: e };
          const t = JSON.stringify(event);
          this.queue(event.id, 'idempotency', executionId, t, utf8Bytes(t));
          return e;
        }
        return idempotencyFromColumns(this.st.getIdem.get(executionId, key) as IdempotencyColumns);
      })
      .immediate();
    this.committed(null);
    this.fault('store.idempotency.afterCommit');
    return entry;
  }

  async listIdempotent(executionId: string): Promise<IdempotencyEntry[]> {
    this.assertOpen();
    const rows = this.db
      .prepare(`SELECT * FROM idempotency WHERE execution_id = ? ORDER BY created_at, key`)
      .all(executionId) as IdempotencyColumns[];
    return rows.map(idempotencyFromColumns);
  }

  async deleteExecution(executionId: string): Promise<DeleteResult> {
    this.assertOpen();
    const out = this.db
      .transaction(() => {
        // events never sent are moot once the execution is gone; the deletion itself is sent
        this.dropOutbox(executionId, true);
        const checkpoints = this.db.prepare(`DELETE FROM checkpoints WHERE execution_id = ?`).run(executionId).changes;
        const pending = this.db.prepare(`DELETE FROM pending_interrupts WHERE execution_id = ?`).run(executionId).changes;
        const idempotency = this.db.prepare(`DELETE FROM idempotency WHERE execution_id = ?`).run(executionId).changes;
        const had = this.db.prepare(`DELETE FROM executions WHERE execution_id = ?`).run(executionId).changes;
        this.db.prepare(`DELETE FROM leases WHERE execution_id = ?`).run(executionId);
        if (had || checkpoints || idempotency) {
          const event: OutboxEvent = { kind: 'execution_deleted', id: uuidv7(), executionId, deletedAt: canonicalTime() };
          const t = JSON.stringify(event);
          this.queue(event.id, 'execution_deleted', executionId, t, utf8Bytes(t));
        }
        return { checkpoints, pending, idempotency };
      })
      .immediate();
    this.cursors.drop(executionId);
    this.committed(null);
    return out;
  }

  async prune(options: PruneOptions): Promise<PruneResult> {
    this.assertOpen();
    const cutoff = canonicalTime(options.olderThan);
    const result: PruneResult = { executions: 0, checkpoints: 0, idempotency: 0, keptUnsynced: 0 };
    const pick = this.db.prepare(
      `SELECT e.execution_id,
              (EXISTS (SELECT 1 FROM checkpoints c JOIN outbox o ON o.id = c.id AND o.synced = 0 WHERE c.execution_id = e.execution_id)
               OR EXISTS (SELECT 1 FROM outbox o WHERE o.execution_id = e.execution_id AND o.kind <> 'checkpoint' AND o.synced = 0)) AS unsynced
       FROM executions e
       WHERE e.last_step = 'run_end' AND e.last_status IN ('completed', 'failed', 'cancelled') AND e.updated_at < ?
         AND NOT EXISTS (SELECT 1 FROM pending_interrupts p WHERE p.execution_id = e.execution_id)
         AND e.execution_id > ?
       ORDER BY e.execution_id LIMIT ${PRUNE_CHUNK}`,
    );
    let after = '';
    for (;;) {
      const done = this.db
        .transaction(() => {
          const batch = pick.all(cutoff, after) as { execution_id: string; unsynced: number }[];
          for (const b of batch) {
            after = b.execution_id;
            if (b.unsynced && !options.includeUnsynced) {
              result.keptUnsynced++;
              continue;
            }
            this.dropOutbox(b.execution_id, false);
            result.checkpoints += this.db.prepare(`DELETE FROM checkpoints WHERE execution_id = ?`).run(b.execution_id).changes;
            result.idempotency += this.db.prepare(`DELETE FROM idempotency WHERE execution_id = ?`).run(b.execution_id).changes;
            this.db.prepare(`DELETE FROM executions WHERE execution_id = ?`).run(b.execution_id);
            this.db.prepare(`DELETE FROM leases WHERE execution_id = ?`).run(b.execution_id);
            this.cursors.drop(b.execution_id);
            result.executions++;
          }
          return batch.length < PRUNE_CHUNK;
        })
        .immediate();
      if (done) break;
    }
    return result;
  }

  async fetchUnsynced(options: { limit: number; maxBytes: number }): Promise<OutboxEntry[]> {
    this.assertOpen();
    const rows = this.db
      .prepare(
        `SELECT o.seq AS o_seq, o.id AS o_id, o.kind AS o_kind, o.execution_id AS o_execution_id,
                o.payload AS o_payload, o.bytes AS o_bytes, o.created_at AS o_created_at, c.*
         FROM outbox o LEFT JOIN checkpoints c ON o.kind = 'checkpoint' AND c.id = o.id
         WHERE o.synced = 0 ORDER BY o.seq LIMIT ?`,
      )
      .all(Math.max(1, options.limit)) as OutboxJoinRow[];
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

  markSynced(ids: string[]): Promise<void> {
    return this.applyResults({ synced: ids });
  }

  markQuarantined(reasons: Record<string, string>): Promise<void> {
    return this.applyResults({ quarantined: reasons });
  }

  async outboxStats(): Promise<OutboxStats> {
    this.assertOpen();
    const p = this.db
      .prepare(`SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes, min(created_at) AS oldest FROM outbox WHERE synced = 0`)
      .get() as { n: number; bytes: number; oldest: string | null };
    const q = this.db.prepare(`SELECT count(*) AS n FROM outbox WHERE sync_error IS NOT NULL`).get() as { n: number };
    const last = this.db
      .prepare(`SELECT sync_error FROM outbox WHERE sync_error IS NOT NULL ORDER BY seq DESC LIMIT 1`)
      .get() as { sync_error: string } | undefined;
    return {
      pendingCount: p.n,
      pendingBytes: p.bytes,
      oldestPendingAt: p.oldest,
      oldestPendingAgeMs: p.oldest ? Math.max(0, Date.now() - Date.parse(p.oldest)) : null,
      quarantinedCount: q.n,
      lastQuarantineReason: last?.sync_error ?? null,
    };
  }

  async listQuarantined(options: { afterId?: string; limit?: number } = {}): Promise<QuarantinedEntry[]> {
    this.assertOpen();
    const after = options.afterId
      ? ((this.db.prepare(`SELECT seq FROM outbox WHERE id = ?`).get(options.afterId) as { seq: number } | undefined)?.seq ?? 0)
      : 0;
    const rows = this.db
      .prepare(
        `SELECT id, kind, execution_id, sync_error, created_at FROM outbox
         WHERE sync_error IS NOT NULL AND seq > ? ORDER BY seq ${options.limit ? 'LIMIT ?' : ''}`,
      )
      .all(...[after, ...(options.limit ? [options.limit] : [])]) as {
      id: string;
      kind: OutboxKind;
      execution_id: string;
      sync_error: string;
      created_at: string;
    }[];
    return rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      executionId: r.execution_id,
      reason: r.sync_error,
      createdAt: r.created_at,
    }));
  }

  async importRows(bundle: RestoreBundle): Promise<ImportResult> {
    this.assertOpen();
    const checkpoints = checkBundleRows(CheckpointSchema, bundle.checkpoints, 'checkpoint');
    const pending = bundle.pending ? checkBundleRows(PendingSchema, [bundle.pending], 'pending interrupt')[0] : null;
    const idem = checkBundleRows(IdempotencySchema, bundle.idempotency, 'idempotency entry');
    const out = this.db
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
          this.st.insertCheckpoint.run({
            id: c.id,
            execution_id: c.executionId,
            seq: c.seq,
            node_id: c.nodeId,
            turn: c.turn,
            step: c.step,
            status: c.status,
            agent_path: c.agentPath,
            parent_id: c.parentId,
            state: JSON.stringify(c.state),
            node_input: c.nodeInput === null ? null : JSON.stringify(c.nodeInput),
            node_output: c.nodeOutput === null ? null : JSON.stringify(c.nodeOutput),
            interrupt_reason: c.interruptReason,
            interrupt_context: c.interruptContext === null ? null : JSON.stringify(c.interruptContext),
            created_at: c.createdAt,
            writer_id: c.writerId,
          });
          this.st.upsertExec.run({
            execution_id: c.executionId,
            next_seq: c.seq + 1,
            last_id: c.id,
            last_node_id: c.nodeId,
            last_step: c.step,
            last_status: c.status,
            updated_at: c.createdAt,
          });
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
            this.db.prepare(`DELETE FROM pending_interrupts WHERE execution_id = ?`).run(e);
            res.stalePendingRemoved.push({ executionId: e, checkpointId: open.checkpoint_id });
          }
        }
        if (pending) {
          const latest = this.st.latest.get(pending.executionId) as CheckpointColumns | undefined;
          if (latest?.id === pending.checkpointId && !this.st.getPending.get(pending.executionId)) {
            this.st.insertPending.run({
              execution_id: pending.executionId,
              checkpoint_id: pending.checkpointId,
              node_id: pending.nodeId,
              reason: pending.reason,
              context: pending.context === null ? null : JSON.stringify(pending.context),
              agent_path: pending.agentPath,
              created_at: pending.createdAt,
            });
            res.pendingImported = true;
          }
        }
        for (const e of idem) {
          const info = this.st.insertIdem.run(e.executionId, e.key, e.result === null ? null : JSON.stringify(e.result), e.createdAt);
          res.idempotencyInserted += info.changes;
        }
        return res;
      })
      .immediate();
    return out;
  }

  async getMeta(key: string): Promise<string | null> {
    this.assertOpen();
    const row = this.db.prepare(`SELECT value FROM waymark_meta WHERE key = ?`).get(`note:${key}`) as { value: string } | undefined;
    return row?.value ?? null;
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.assertOpen();
    this.db
      .prepare(`INSERT INTO waymark_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
      .run(`note:${key}`, value);
  }

  onWrite(listener: () => void): () => void {
    return this.signal.on(listener);
  }

  /** `PRAGMA integrity_check` result ('ok' when healthy). */
  integrityCheck(): string {
    return this.db.pragma('integrity_check', { simple: true }) as string;
  }

  /** The underlying connection, for tools and tests. */
  get connection(): Database.Database {
    return this.db;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}
