/**
 * Postgres adapter of the store contract (postgres.js). Many processes and
 * machines may share one database. Seq is assigned under the execution row's
 * lock; a claim is `DELETE … RETURNING` at READ COMMITTED, so exactly one of
 * any number of concurrent claimers gets the row.
 */
import postgres from 'postgres';
import { uuidv7 } from '../../shared/ids.js';
import { utf8Bytes } from '../../shared/json.js';
import { ErrorCode, hasCode } from '../../shared/errors.js';
import type { Json } from '../../shared/json.js';
import { chainBase, decodeChain, stateOfCursor, type ChainRow, type CodecCursor, type State } from '../../shared/codec.js';
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
  CancelOptions,
  CancelResult,
  CheckpointInput,
  Checkpointer,
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
import { AlreadyFinished, DuplicateIdError, ExecutionGoneError, LeaseLost, PauseExistsError, RunInProgress } from '../errors.js';
import { cancelMarker, checkCancel, isCancelMarker, notFound, runCancelled } from '../store/cancel.js';
import { checkLease, fencedWriteError, isHeld, isoOf, leaseInfoOf, leaseLost, type LeaseColumns } from '../store/lease.js';
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
import { isTransient, POSTGRES_MIGRATIONS, SQLSTATE } from './migrations.js';

type Sql = postgres.Sql<Record<string, never>>;
type Tx = postgres.TransactionSql<Record<string, never>>;

export interface PostgresCheckpointerOptions {
  /** Connection string; or pass `sql`. */
  url?: string;
  /** An existing postgres.js client (not closed by `close()`). */
  sql?: postgres.Sql<any>;
  /** Schema holding the tables. Default `waymark`. */
  schema?: string;
  /** Pool size when the adapter makes its own client. Default 10. */
  max?: number;
  writerId?: string;
  outbox?: boolean;
  faults?: FaultHook;
}

const PRUNE_CHUNK = 500;

function pgCode(e: unknown): string | undefined {
  return (e as { code?: string })?.code;
}

function constraintOf(e: unknown): string | undefined {
  return (e as { constraint_name?: string })?.constraint_name;
}

export class PostgresCheckpointer implements Checkpointer {
  readonly planeGuard = new PlaneGuardSlot();
  private readonly sql: Sql;
  private readonly ownsSql: boolean;
  readonly schema: string;
  private readonly outbox: boolean;
  private readonly fault: FaultHook;
  private readonly cursors = new CursorCache();
  private readonly signal = new WriteSignal();
  private readonly givenWriterId?: string;
  private resolvedWriterId: string | null = null;
  private ready: Promise<void> | null = null;
  private closed = false;
  private readonly t: Record<'meta' | 'executions' | 'checkpoints' | 'pending' | 'idempotency' | 'outbox' | 'leases', postgres.Helper<string>>;

  constructor(options: PostgresCheckpointerOptions) {
    if (!options.sql && !options.url) throw new Error('PostgresCheckpointer needs `url` or `sql`');
    this.ownsSql = !options.sql;
    this.sql = (options.sql ??
      // fetch_types off: postgres.js 3.4.9 leaks an unhandled rejection (which exits Node) when a
      // backend dies during its startup type query (porsager/postgres#1192, #1223); we send no array params
      postgres(options.url!, { max: options.max ?? 10, onnotice: () => {}, fetch_types: false })) as unknown as Sql;
    this.schema = options.schema ?? 'waymark';
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(this.schema)) throw new Error(`invalid schema name: ${this.schema}`);
    this.outbox = options.outbox ?? true;
    this.fault = options.faults ?? noFaults;
    this.givenWriterId = options.writerId;
    const id = (name: string) => this.sql(`${this.schema}.${name}`);
    this.t = {
      meta: id('waymark_meta'),
      executions: id('executions'),
      checkpoints: id('checkpoints'),
      pending: id('pending_interrupts'),
      idempotency: id('idempotency'),
      outbox: id('outbox'),
      leases: id('leases'),
    };
  }

  get writerId(): string {
    if (this.resolvedWriterId === null) {
      if (this.givenWriterId) return this.givenWriterId;
      throw new Error('PostgresCheckpointer: call setup() before reading writerId');
    }
    return this.resolvedWriterId;
  }

  /** Create or migrate the schema under an advisory lock: safe for concurrent callers. */
  setup(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('PostgresCheckpointer is closed'));
    if (!this.ready) {
      this.ready = this.migrate().catch((e) => {
        this.ready = null;
        throw e;
      });
    }
    return this.ready;
  }

  private async migrate(): Promise<void> {
    const schemaId = this.sql(this.schema);
    await this.sql.begin(async (tx: Tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext(${'waymark.client:' + this.schema}))`;
      await tx`CREATE SCHEMA IF NOT EXISTS ${schemaId}`;
      await tx`CREATE TABLE IF NOT EXISTS ${this.sql(`${this.schema}.waymark_migrations`)} (
        version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
      const [{ v }] = await tx<{ v: number | null }[]>`
        SELECT max(version) AS v FROM ${this.sql(`${this.schema}.waymark_migrations`)}`;
      for (let i = v ?? 0; i < POSTGRES_MIGRATIONS.length; i++) {
        await tx.unsafe(POSTGRES_MIGRATIONS[i].replaceAll('S.', `"${this.schema}".`));
        await tx`INSERT INTO ${this.sql(`${this.schema}.waymark_migrations`)} (version) VALUES (${i + 1})`;
      }
      const id = this.givenWriterId ?? `pg-${uuidv7()}`;
      await tx`INSERT INTO ${this.t.meta} (key, value) VALUES ('writer_id', ${id}) ON CONFLICT (key) DO NOTHING`;
      const [row] = await tx<{ value: string }[]>`SELECT value FROM ${this.t.meta} WHERE key = 'writer_id'`;
      this.resolvedWriterId = this.givenWriterId ?? row.value;
    });
  }

  private async begin<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    await this.setup();
    return (await this.sql.begin(fn)) as T;
  }

  /**
   * Run a write transaction, trying again (up to 3 times) when the connection
   * was lost under it. Every write is identifiable, so before trying again
   * `landed` asks whether the lost attempt committed after all (a checkpoint
   * with our pre-minted id exists, …) and returns its result if so. Without
   * `landed`, only writes that are idempotent by construction are retried.
   */
  private async write<T>(fn: (tx: Tx) => Promise<T>, landed?: () => Promise<T | null>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.begin(fn);
      } catch (e) {
        const lost = isTransient(e);
        // a retried write whose lost attempt committed meets its own row (a duplicate id, rows in a
        // "fresh" run), its own release (LeaseLost, after a marker or a pause) or its own lease (RunInProgress)
        if (
          attempt > 1 &&
          landed &&
          (e instanceof DuplicateIdError || hasCode(e, ErrorCode.EXECUTION_EXISTS) || e instanceof LeaseLost || e instanceof RunInProgress)
        ) {
          const r = await landed();
          if (r) return r;
        }
        if (!lost || attempt >= 3) throw e;
        if (landed) {
          const r = await landed().catch(() => null);
          if (r) return r;
        }
      }
    }
  }

  /** The stored row with this id if it is the one `input` describes (a lost attempt that committed). */
  private async landedRow(id: string, input: CheckpointInput): Promise<Checkpoint | null> {
    const row = await this.getById(id);
    return row && row.executionId === input.executionId && row.nodeId === input.nodeId && row.step === input.step ? row : null;
  }

  private async q(): Promise<Sql> {
    await this.setup();
    return this.sql;
  }

  /**
   * Run a read, trying again (up to 3 times) when the connection was lost under
   * it: a terminated backend surfaces on the next query of its pooled
   * connection. Writes are never retried here: their commit may have landed.
   */
  private async read<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn(await this.q());
      } catch (e) {
        if (attempt >= 3 || !isTransient(e)) throw e;
      }
    }
  }

  /**
   * `(SELECT …)` over a list of strings sent as one text parameter: with
   * fetch_types off, postgres.js cannot send array parameters.
   */
  private textList(sql: Sql | Tx, values: string[]) {
    return sql`(SELECT jsonb_array_elements_text((${JSON.stringify(values)}::text)::jsonb))`;
  }

  private queueEvent(tx: Tx, id: string, kind: OutboxKind, executionId: string, payload: string | null, bytes: number) {
    if (!this.outbox) return null;
    return tx`INSERT INTO ${this.t.outbox} (id, kind, execution_id, payload, bytes, created_at)
              VALUES (${id}, ${kind}, ${executionId}, ${payload}, ${bytes}, ${canonicalTime()})`;
  }

  private async cursorAt(tx: Tx, executionId: string, seq: number, id: string): Promise<CodecCursor> {
    const cached = this.cursors.get(executionId, seq, id);
    if (cached) return cached;
    const [last] = await this.chain(tx, executionId, seq, seq);
    return decodeChain(await this.chain(tx, executionId, chainBase(last), seq)).cursor;
  }

  /** Rows base..seq of an execution, as the codec needs them (id, seq, state only). */
  private async chain(sql: Sql | Tx, executionId: string, base: number, seq: number): Promise<ChainRow[]> {
    const rows = await sql<ChainColumns[]>`
      SELECT id, seq, state FROM ${this.t.checkpoints}
      WHERE execution_id = ${executionId} AND seq >= ${base} AND seq <= ${seq} ORDER BY seq`;
    return rows.map(chainRowFromColumns);
  }

  /** Write one checkpoint inside the caller's transaction, under the execution row's lock. */
  private async writeCheckpoint(tx: Tx, input: CheckpointInput): Promise<RowText> {
    const [ex] = await tx<{ next_seq: number; last_id: string }[]>`
      INSERT INTO ${this.t.executions} (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at)
      VALUES (${input.executionId}, 0, '', '', '', '', '')
      ON CONFLICT (execution_id) DO UPDATE SET execution_id = excluded.execution_id
      RETURNING next_seq, last_id`;
    await this.checkPrev(tx, input, ex);
    const seq = ex.next_seq;
    const prev = seq > 0 ? await this.cursorAt(tx, input.executionId, seq - 1, ex.last_id) : null;
    const rt = buildRow(input, seq, prev, this.writerId);
    const r = rt.row;
    try {
      await Promise.all([
        tx`INSERT INTO ${this.t.checkpoints} (id, execution_id, seq, node_id, turn, step, status, agent_path, parent_id,
             state, node_input, node_output, interrupt_reason, interrupt_context, created_at, writer_id)
           VALUES (${r.id}, ${r.executionId}, ${seq}, ${r.nodeId}, ${r.turn}, ${r.step}, ${r.status}, ${r.agentPath},
             ${r.parentId}, ${rt.stateText}, ${rt.nodeInput}, ${rt.nodeOutput}, ${r.interruptReason},
             ${rt.interruptContext}, ${r.createdAt}, ${r.writerId})`,
        tx`UPDATE ${this.t.executions} SET next_seq = ${seq + 1}, last_id = ${r.id}, last_node_id = ${r.nodeId},
             last_step = ${r.step}, last_status = ${r.status}, updated_at = ${r.createdAt}
           WHERE execution_id = ${r.executionId}`,
        this.queueEvent(tx, r.id, 'checkpoint', r.executionId, null, rt.bytes),
      ]);
    } catch (e) {
      if (pgCode(e) === SQLSTATE.uniqueViolation && constraintOf(e) === 'checkpoints_pkey') {
        throw new DuplicateIdError(r.id);
      }
      throw e;
    }
    return rt;
  }

  /** Refuse a write whose `prevId` is gone (or, for null, an execution that has rows); under the execution row's lock. */
  private async checkPrev(tx: Tx, input: CheckpointInput, ex: { next_seq: number; last_id: string }): Promise<void> {
    if (input.prevId === undefined) return;
    const has = Number(ex.next_seq) > 0;
    if (input.prevId === null) {
      if (has) throw executionExists(input.executionId);
      return;
    }
    if (has && ex.last_id === input.prevId) return;
    const [row] = await tx<{ execution_id: string }[]>`SELECT execution_id FROM ${this.t.checkpoints} WHERE id = ${input.prevId}`;
    if (!row || row.execution_id !== input.executionId) throw new ExecutionGoneError(input.executionId, input.prevId);
  }

  private committed(rt: RowText | null): void {
    if (rt) this.cursors.set(rt.row.executionId, rt.cursor);
    if (this.outbox) this.signal.emit();
  }

  private async leaseInfo(sql: Sql | Tx, executionId: string): Promise<LeaseInfo | null> {
    const [row] = await sql<(LeaseColumns & { now_ms: string })[]>`
      SELECT *, (extract(epoch from clock_timestamp()) * 1000)::bigint AS now_ms FROM ${this.t.leases}
      WHERE execution_id = ${executionId}`;
    return row ? leaseInfoOf(row, Number(row.now_ms)) : null;
  }

  /**
   * Inside the caller's transaction: take the lease if free or expired (by the
   * server's clock), else RunInProgress. The upsert locks the lease row and
   * judges the newest version of it, so of concurrent takers one wins.
   */
  private async takeLease(tx: Tx, executionId: string, request: LeaseRequest): Promise<Lease> {
    const marker = await this.cancelledMarker(tx, executionId);
    if (marker) throw runCancelled(marker);
    for (;;) {
      const [won] = await tx<{ epoch: string; expires_at: string }[]>`
        INSERT INTO ${this.t.leases} AS l (execution_id, holder, epoch, expires_at)
        VALUES (${executionId}, ${request.holder}, 1, (extract(epoch from clock_timestamp()) * 1000)::bigint + ${request.ttlMs})
        ON CONFLICT (execution_id) DO UPDATE SET holder = excluded.holder, epoch = l.epoch + 1, expires_at = excluded.expires_at
        WHERE l.holder IS NULL OR l.expires_at <= (extract(epoch from clock_timestamp()) * 1000)::bigint
        RETURNING epoch, expires_at`;
      if (won) {
        return { executionId, holder: request.holder, ttlMs: request.ttlMs, epoch: Number(won.epoch), expiresAt: isoOf(Number(won.expires_at)) };
      }
      const current = await this.leaseInfo(tx, executionId);
      if (current?.live) throw new RunInProgress(executionId, current.holder!, current.expiresAt!);
      // released or expired between the two statements: judge again
    }
  }

  /** Inside the caller's transaction: the lease is still this one; renew (or release) it, else LeaseLost. */
  private async fence(tx: Tx, lease: Lease, release: boolean): Promise<Lease> {
    const [row] = release
      ? await tx<{ expires_at: string }[]>`
          UPDATE ${this.t.leases} SET holder = NULL, expires_at = 0
          WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
          RETURNING (extract(epoch from clock_timestamp()) * 1000)::bigint AS expires_at`
      : await tx<{ expires_at: string }[]>`
          UPDATE ${this.t.leases} SET expires_at = (extract(epoch from clock_timestamp()) * 1000)::bigint + ${lease.ttlMs}
          WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
          RETURNING expires_at`;
    if (!row) {
      // a cancel clears the holder: the runner is told why it must stop
      const marker = await this.cancelledMarker(tx, lease.executionId);
      throw marker ? runCancelled(marker) : leaseLost(lease, await this.leaseInfo(tx, lease.executionId));
    }
    return { ...lease, expiresAt: isoOf(Number(row.expires_at)) };
  }

  /** The cancel marker when the execution's newest row is one. */
  private async cancelledMarker(tx: Tx, executionId: string): Promise<Checkpoint | null> {
    const [row] = await tx<CheckpointColumns[]>`
      SELECT c.* FROM ${this.t.executions} e JOIN ${this.t.checkpoints} c ON c.id = e.last_id
      WHERE e.execution_id = ${executionId} AND e.last_step = 'run_end' AND e.last_status = 'cancelled'`;
    return row ? rowFromColumns(row) : null;
  }

  async cancel(executionId: string, options?: CancelOptions): Promise<CancelResult> {
    const reason = checkCancel(executionId, options);
    let out: { rt: RowText | null; marker: Checkpoint; closed: PendingInterrupt | null };
    try {
      // a retried attempt whose lost one committed finds its own marker: reported as alreadyCancelled
      out = await this.write(async (tx) => {
        // the execution row's lock orders this cancel with every write of the run
        const [ex] = await tx<{ last_id: string }[]>`
          SELECT last_id FROM ${this.t.executions} WHERE execution_id = ${executionId} FOR UPDATE`;
        if (!ex || !ex.last_id) throw notFound(executionId);
        const [cols] = await tx<CheckpointColumns[]>`SELECT * FROM ${this.t.checkpoints} WHERE id = ${ex.last_id}`;
        if (!cols) throw notFound(executionId);
        const last = rowFromColumns(cols);
        if (isCancelMarker(last)) return { rt: null, marker: last, closed: null };
        if (last.step === 'run_end' && last.status === 'completed') throw new AlreadyFinished(executionId, last.id);
        const [open] = await tx<PendingColumns[]>`DELETE FROM ${this.t.pending} WHERE execution_id = ${executionId} RETURNING *`;
        const closed = open ? pendingFromColumns(open) : null;
        if (closed) {
          const event: OutboxEvent = {
            kind: 'interrupt_closed',
            id: uuidv7(),
            executionId,
            checkpointId: closed.checkpointId,
            writerId: this.writerId,
            closedAt: canonicalTime(),
          };
          const text = JSON.stringify(event);
          await this.queueEvent(tx, event.id, 'interrupt_closed', executionId, text, utf8Bytes(text));
        }
        // every runner is fenced out: its next write or renewal finds the holder cleared and the marker
        await tx`UPDATE ${this.t.leases} SET holder = NULL, expires_at = 0 WHERE execution_id = ${executionId}`;
        const state = stateOfCursor(await this.cursorAt(tx, executionId, last.seq, last.id));
        const rt = await this.writeCheckpoint(tx, cancelMarker(last, state, reason));
        return { rt, marker: rt.row, closed };
      });
    } catch (e) {
      this.cursors.drop(executionId);
      throw e;
    }
    this.committed(out.rt);
    this.fault('store.cancel.afterCommit');
    return { checkpoint: out.marker, closedPause: out.closed, alreadyCancelled: out.rt === null };
  }

  async acquireLease(executionId: string, request: LeaseRequest): Promise<Lease> {
    checkLease(executionId, request);
    // an acquisition whose answer was lost is recognised by its holder, unique per acquisition
    const landed = async (): Promise<Lease | null> => {
      const l = await this.leaseInfo(await this.q(), executionId);
      return l && l.holder === request.holder && l.expiresAt
        ? { executionId, holder: request.holder, ttlMs: request.ttlMs, epoch: l.epoch, expiresAt: l.expiresAt }
        : null;
    };
    return this.write((tx) => this.takeLease(tx, executionId, request), landed);
  }

  async renewLease(lease: Lease): Promise<Lease> {
    checkLease(lease?.executionId, lease);
    return this.begin((tx) => this.fence(tx, lease, false));
  }

  async releaseLease(lease: Lease): Promise<void> {
    checkLease(lease?.executionId, lease);
    await this.begin(async (tx) => {
      await tx`UPDATE ${this.t.leases} SET holder = NULL, expires_at = 0
        WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}`;
    });
  }

  async getLease(executionId: string): Promise<LeaseInfo | null> {
    return this.read((sql) => this.leaseInfo(sql, executionId));
  }

  /**
   * One round trip instead of four (BEGIN, lock, writes, COMMIT) when this
   * store wrote the execution's newest row itself: the row is built from the
   * cached cursor and written by one statement that advances the execution
   * only if it is still at that row (compare-and-set under the row lock), and
   * inserts the checkpoint and its outbox event only then. Returns null when
   * another writer got there first; the caller takes the locked path.
   */
  private async putOnCursor(input: CheckpointInput & { id: string }, prev: CodecCursor, lease?: Lease): Promise<RowText | null> {
    const seq = prev.seq + 1;
    const rt = buildRow(input, seq, prev, this.writerId);
    const r = rt.row;
    const sql = await this.q();
    try {
      // fenced: the lease is renewed and the row written only while the lease is this one; a lost lease
      // writes nothing here and the locked path names it (a renewal without the row, on a stale cursor, is harmless)
      const done = await sql<{ n: number }[]>`
        WITH ${
          lease
            ? sql`l AS (
          UPDATE ${this.t.leases} SET expires_at = (extract(epoch from clock_timestamp()) * 1000)::bigint + ${lease.ttlMs}
          WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}
          RETURNING 1
        ), `
            : sql``
        }ex AS (
          UPDATE ${this.t.executions} SET next_seq = ${seq + 1}, last_id = ${r.id}, last_node_id = ${r.nodeId},
            last_step = ${r.step}, last_status = ${r.status}, updated_at = ${r.createdAt}
          WHERE execution_id = ${r.executionId} AND next_seq = ${seq} AND last_id = ${prev.id}
            ${lease ? sql`AND EXISTS (SELECT 1 FROM l)` : sql``}
          ${
            typeof input.prevId === 'string' && input.prevId !== prev.id
              ? sql`AND EXISTS (SELECT 1 FROM ${this.t.checkpoints} WHERE id = ${input.prevId} AND execution_id = ${r.executionId})`
              : sql``
          }
          RETURNING 1
        ), c AS (
          INSERT INTO ${this.t.checkpoints} (id, execution_id, seq, node_id, turn, step, status, agent_path, parent_id,
            state, node_input, node_output, interrupt_reason, interrupt_context, created_at, writer_id)
          SELECT ${r.id}, ${r.executionId}, ${seq}, ${r.nodeId}, ${r.turn}, ${r.step}, ${r.status}, ${r.agentPath},
            ${r.parentId}, ${rt.stateText}, ${rt.nodeInput}, ${rt.nodeOutput}, ${r.interruptReason},
            ${rt.interruptContext}, ${r.createdAt}, ${r.writerId}
          FROM ex
          RETURNING id
        )${
          this.outbox
            ? sql`, o AS (
          INSERT INTO ${this.t.outbox} (id, kind, execution_id, payload, bytes, created_at)
          SELECT id, 'checkpoint', ${r.executionId}, NULL, ${rt.bytes}, ${canonicalTime()} FROM c
          RETURNING 1
        )`
            : sql``
        }
        SELECT count(*)::int AS n FROM c`;
      return done[0].n === 1 ? rt : null;
    } catch (e) {
      if (pgCode(e) === SQLSTATE.uniqueViolation && constraintOf(e) === 'checkpoints_pkey') throw new DuplicateIdError(r.id);
      throw e;
    }
  }

  async put(input: CheckpointInput, options: WriteOptions = {}): Promise<Checkpoint> {
    checkInput(input);
    const lease = options.lease;
    if (lease) checkLease(input.executionId, lease);
    // a run-end marker releases the lease: only on the locked path, where release and row are one decision
    const release = input.step === 'run_end';
    const minted = { ...input, id: input.id ?? uuidv7() };
    // a fresh run's first write (prevId null) takes the locked path, which refuses an execution that has rows
    const cursor = input.prevId === null || (lease && release) ? null : this.cursors.newest(input.executionId);
    if (cursor) {
      try {
        const rt = await this.putOnCursor(minted, cursor, lease);
        if (rt) {
          this.committed(rt);
          this.fault('store.put.afterCommit');
          return rt.row;
        }
      } catch (e) {
        this.cursors.drop(input.executionId);
        if (!isTransient(e)) throw e;
        // the statement may have committed before the connection was lost
        const row = await this.landedRow(minted.id, minted).catch(() => null);
        if (row) {
          this.committed(null);
          this.fault('store.put.afterCommit');
          return row;
        }
      }
    }
    let row: Checkpoint;
    try {
      const out = await this.write<RowText | Checkpoint>(
        async (tx) => {
          if (lease) await this.fence(tx, lease, release);
          return this.writeCheckpoint(tx, minted);
        },
        () => this.landedRow(minted.id, minted),
      );
      if ('cursor' in out) {
        this.committed(out);
        row = out.row;
      } else {
        this.cursors.drop(input.executionId);
        this.committed(null);
        row = out;
      }
    } catch (e) {
      this.cursors.drop(input.executionId);
      throw fencedWriteError(e, input);
    }
    this.fault('store.put.afterCommit');
    return row;
  }

  async recordInterrupt(
    input: CheckpointInput,
    pause: { reason: string; context: Json | null },
    options: WriteOptions = {},
  ): Promise<{ checkpoint: Checkpoint; pending: PendingInterrupt }> {
    checkInput(input);
    const lease = options.lease;
    if (lease) checkLease(input.executionId, lease);
    input = { ...input, id: input.id ?? uuidv7() };
    const landed = async () => {
      const row = await this.landedRow(input.id!, input);
      const pending = row ? await this.getPendingInterrupt(row.executionId) : null;
      return row && pending?.checkpointId === row.id ? { rt: { row } as RowText, pending, landed: true } : null;
    };
    let out: { rt: RowText; pending: PendingInterrupt; landed?: boolean };
    try {
      out = await this.write(async (tx) => {
        // a pause ends this runner's hold: the resumer that claims it takes the lease anew
        if (lease) await this.fence(tx, lease, true);
        const rt = await this.writeCheckpoint(tx, input);
        const pending = pendingFor(rt.row, pause.reason, pause.context);
        this.fault('store.recordInterrupt.betweenRows');
        try {
          await tx`INSERT INTO ${this.t.pending} (execution_id, checkpoint_id, node_id, reason, context, agent_path, created_at)
            VALUES (${pending.executionId}, ${pending.checkpointId}, ${pending.nodeId}, ${pending.reason},
              ${pending.context === null ? null : JSON.stringify(pending.context)}, ${pending.agentPath}, ${pending.createdAt})`;
        } catch (e) {
          if (pgCode(e) === SQLSTATE.uniqueViolation) throw new PauseExistsError(pending.executionId);
          throw e;
        }
        const event: OutboxEvent = { kind: 'interrupt_opened', id: uuidv7(), row: pending };
        const text = JSON.stringify(event);
        await this.queueEvent(tx, event.id, 'interrupt_opened', pending.executionId, text, utf8Bytes(text));
        return { rt, pending };
      }, landed);
    } catch (e) {
      this.cursors.drop(input.executionId);
      throw fencedWriteError(e, input);
    }
    if (out.landed) {
      this.cursors.drop(input.executionId);
      this.committed(null);
    } else this.committed(out.rt);
    this.fault('store.recordInterrupt.afterCommit');
    return { checkpoint: out.rt.row, pending: out.pending };
  }

  async claimInterrupt(pause: PauseRef, options?: { next?: CheckpointInput; lease?: LeaseRequest | Lease }): Promise<ClaimResult | null> {
    const { executionId, checkpointId } = pause;
    const next = options?.next ? { ...options.next, id: options.next.id ?? uuidv7() } : undefined;
    if (next) checkInput(next);
    const ask = options?.lease;
    if (ask) checkLease(executionId, ask);
    const open = next ? await this.getPendingInterrupt(executionId) : null;
    const before = open?.checkpointId === checkpointId ? open : null;
    // with a `next` row, a lost attempt that committed is recognisable by that row's id
    const landed = next
      ? async () => {
          const row = await this.landedRow(next.id, next);
          if (!row || !before) return null;
          // the lost attempt took the lease with the claim: it is ours if its holder is still us
          const held = ask ? await this.getLease(executionId) : null;
          const lease: Lease | null =
            held && ask && held.holder === ask.holder && held.expiresAt
              ? { executionId, holder: ask.holder, ttlMs: ask.ttlMs, epoch: held.epoch, expiresAt: held.expiresAt }
              : null;
          if (ask && !lease) return null;
          return { pending: before, rt: { row } as RowText, lease, landed: true };
        }
      : undefined;
    let out: { pending: PendingInterrupt; rt: RowText | null; lease: Lease | null; landed?: boolean } | null;
    try {
      out = await this.write(async (tx) => {
        const [row] = await tx<PendingColumns[]>`
          DELETE FROM ${this.t.pending} WHERE execution_id = ${executionId} AND checkpoint_id = ${checkpointId} RETURNING *`;
        if (!row) return null;
        const pending = pendingFromColumns(row);
        // the claim and the lease are one decision: a refused lease rolls the claim back
        const lease = ask ? (isHeld(ask) ? await this.fence(tx, ask, false) : await this.takeLease(tx, executionId, ask)) : null;
        const event: OutboxEvent = {
          kind: 'interrupt_claimed',
          id: uuidv7(),
          executionId,
          checkpointId: pending.checkpointId,
          writerId: this.writerId,
          claimedAt: canonicalTime(),
        };
        const text = JSON.stringify(event);
        await this.queueEvent(tx, event.id, 'interrupt_claimed', executionId, text, utf8Bytes(text));
        const rt = next ? await this.writeCheckpoint(tx, next) : null;
        return { pending, rt, lease };
      }, landed as (() => Promise<{ pending: PendingInterrupt; rt: RowText | null; lease: Lease | null; landed?: boolean } | null>) | undefined);
    } catch (e) {
      this.cursors.drop(executionId);
      throw e;
    }
    if (!out) return null;
    if (out.landed) {
      this.cursors.drop(executionId);
      this.committed(null);
    } else this.committed(out.rt);
    this.fault('store.claim.afterCommit');
    return { pending: out.pending, checkpoint: out.rt?.row ?? null, lease: out.lease };
  }

  async getPendingInterrupt(executionId: string): Promise<PendingInterrupt | null> {
    return this.read(async (sql) => {
      const [row] = await sql<PendingColumns[]>`SELECT * FROM ${this.t.pending} WHERE execution_id = ${executionId}`;
      return row ? pendingFromColumns(row) : null;
    });
  }

  async listPendingInterrupts(options: { afterExecutionId?: string; limit?: number } = {}): Promise<PendingInterrupt[]> {
    return this.read(async (sql) => {
      const rows = await sql<PendingColumns[]>`
        SELECT * FROM ${this.t.pending} WHERE execution_id > ${options.afterExecutionId ?? ''}
        ORDER BY execution_id COLLATE "C" ${options.limit ? sql`LIMIT ${options.limit}` : sql``}`;
      return rows.map(pendingFromColumns);
    });
  }

  async latest(executionId: string): Promise<Checkpoint | null> {
    return this.read(async (sql) => {
      const [row] = await sql<CheckpointColumns[]>`
        SELECT * FROM ${this.t.checkpoints} WHERE execution_id = ${executionId} ORDER BY seq DESC LIMIT 1`;
      return row ? rowFromColumns(row) : null;
    });
  }

  async getById(id: string): Promise<Checkpoint | null> {
    return this.read(async (sql) => {
      const [row] = await sql<CheckpointColumns[]>`SELECT * FROM ${this.t.checkpoints} WHERE id = ${id}`;
      return row ? rowFromColumns(row) : null;
    });
  }

  async list(executionId: string, options: ListOptions = {}): Promise<Checkpoint[]> {
    return this.read(async (sql) => {
      const rows = await sql<CheckpointColumns[]>`
        SELECT * FROM ${this.t.checkpoints} WHERE execution_id = ${executionId}
        ${options.afterSeq !== undefined ? sql`AND seq > ${options.afterSeq}` : sql``}
        ${options.beforeSeq !== undefined ? sql`AND seq < ${options.beforeSeq}` : sql``}
        ORDER BY seq ${options.order === 'desc' ? sql`DESC` : sql`ASC`}
        ${options.limit !== undefined ? sql`LIMIT ${options.limit}` : sql``}`;
      return rows.map(rowFromColumns);
    });
  }

  async readState(row: Checkpoint): Promise<State> {
    const cached = this.cursors.peek(row.executionId, row.seq, row.id);
    if (cached) return stateOfCursor(cached);
    return this.read(async (sql) => {
      const { state, cursor } = decodeChain(await this.chain(sql, row.executionId, chainBase(row), row.seq));
      this.cursors.offer(row.executionId, cursor);
      return state;
    });
  }

  async listExecutions(options: { afterExecutionId?: string; limit?: number; state?: ExecutionState } = {}): Promise<ExecutionSummary[]> {
    return this.read(async (sql) => {
      const rows = await sql<(ExecRow & { now_ms: string })[]>`
        SELECT e.*, p.execution_id IS NOT NULL AS paused,
               l.holder AS lease_holder, l.epoch AS lease_epoch, l.expires_at AS lease_expires_at,
               (extract(epoch from clock_timestamp()) * 1000)::bigint AS now_ms
        FROM ${this.t.executions} e
        LEFT JOIN ${this.t.pending} p ON p.execution_id = e.execution_id
        LEFT JOIN ${this.t.leases} l ON l.execution_id = e.execution_id
        WHERE e.execution_id > ${options.afterExecutionId ?? ''} ${options.state ? sql.unsafe(`AND ${stateCondition(options.state)}`) : sql``}
        ORDER BY e.execution_id COLLATE "C" ${options.limit ? sql`LIMIT ${options.limit}` : sql``}`;
      return rows.map((r) => summaryFromRow(r, Number(r.now_ms)));
    });
  }

  async getIdempotent(executionId: string, key: string): Promise<IdempotentLookup> {
    return this.read(async (sql) => {
      const [row] = await sql<IdempotencyColumns[]>`
        SELECT * FROM ${this.t.idempotency} WHERE execution_id = ${executionId} AND key = ${key}`;
      return row ? { hit: true, result: idempotencyFromColumns(row).result } : { hit: false };
    });
  }

  async putIdempotent(executionId: string, key: string, result: Json | null): Promise<IdempotencyEntry> {
    checkIdempotencyKey(executionId, key);
    checkJson('idempotent result', result);
    // INSERT … ON CONFLICT DO NOTHING: a retry after a lost commit finds the stored entry
    const entry = await this.write(async (tx) => {
      const createdAt = canonicalTime();
      const text = result === null ? null : JSON.stringify(result);
      const inserted = await tx<IdempotencyColumns[]>`
        INSERT INTO ${this.t.idempotency} (execution_id, key, result, created_at)
        VALUES (${executionId}, ${key}, ${text}, ${createdAt})
        ON CONFLICT (execution_id, key) DO NOTHING RETURNING *`;
      if (inserted.length === 1) {
        const e: IdempotencyEntry = { executionId, key, result, createdAt };
        const event: OutboxEvent = { kind: 'idempotency', id: uuidv7(), row: e };
        const t = JSON.stringify(event);
        await this.queueEvent(tx, event.id, 'idempotency', executionId, t, utf8Bytes(t));
        return e;
      }
      const [row] = await tx<IdempotencyColumns[]>`
        SELECT * FROM ${this.t.idempotency} WHERE execution_id = ${executionId} AND key = ${key}`;
      return idempotencyFromColumns(row);
    });
    this.committed(null);
    this.fault('store.idempotency.afterCommit');
    return entry;
  }

  async listIdempotent(executionId: string): Promise<IdempotencyEntry[]> {
    return this.read(async (sql) => {
      const rows = await sql<IdempotencyColumns[]>`
        SELECT * FROM ${this.t.idempotency} WHERE execution_id = ${executionId} ORDER BY created_at, key`;
      return rows.map(idempotencyFromColumns);
    });
  }

  async deleteExecution(executionId: string): Promise<DeleteResult> {
    const out = await this.begin(async (tx) => {
      // the execution row first: a writer holds its lock while it checks `prevId` and inserts, so a
      // put either commits before this deletion (and its row is deleted) or runs after it (and is refused)
      const e = await tx`DELETE FROM ${this.t.executions} WHERE execution_id = ${executionId}`;
      const c = await tx`DELETE FROM ${this.t.checkpoints} WHERE execution_id = ${executionId}`;
      const p = await tx`DELETE FROM ${this.t.pending} WHERE execution_id = ${executionId}`;
      const i = await tx`DELETE FROM ${this.t.idempotency} WHERE execution_id = ${executionId}`;
      await tx`DELETE FROM ${this.t.leases} WHERE execution_id = ${executionId}`;
      await tx`DELETE FROM ${this.t.outbox} WHERE execution_id = ${executionId} AND NOT synced`;
      if (e.count || c.count || i.count) {
        const event: OutboxEvent = { kind: 'execution_deleted', id: uuidv7(), executionId, deletedAt: canonicalTime() };
        const t = JSON.stringify(event);
        await this.queueEvent(tx, event.id, 'execution_deleted', executionId, t, utf8Bytes(t));
      }
      return { checkpoints: c.count, pending: p.count, idempotency: i.count };
    });
    this.cursors.drop(executionId);
    this.committed(null);
    return out;
  }

  async prune(options: PruneOptions): Promise<PruneResult> {
    const cutoff = canonicalTime(options.olderThan);
    const result: PruneResult = { executions: 0, checkpoints: 0, idempotency: 0, keptUnsynced: 0 };
    let after = '';
    for (;;) {
      const done = await this.begin(async (tx) => {
        const batch = await tx<{ execution_id: string; unsynced: boolean }[]>`
          SELECT e.execution_id,
                 EXISTS (SELECT 1 FROM ${this.t.outbox} o WHERE o.execution_id = e.execution_id AND NOT o.synced) AS unsynced
          FROM ${this.t.executions} e
          WHERE e.last_step = 'run_end' AND e.last_status IN ('completed', 'failed', 'cancelled') AND e.updated_at < ${cutoff}
            AND NOT EXISTS (SELECT 1 FROM ${this.t.pending} p WHERE p.execution_id = e.execution_id)
            AND e.execution_id > ${after}
          ORDER BY e.execution_id COLLATE "C" LIMIT ${PRUNE_CHUNK}
          FOR UPDATE OF e`;
        for (const b of batch) {
          after = b.execution_id;
          if (b.unsynced && !options.includeUnsynced) {
            result.keptUnsynced++;
            continue;
          }
          const c = await tx`DELETE FROM ${this.t.checkpoints} WHERE execution_id = ${b.execution_id}`;
          const i = await tx`DELETE FROM ${this.t.idempotency} WHERE execution_id = ${b.execution_id}`;
          await tx`DELETE FROM ${this.t.executions} WHERE execution_id = ${b.execution_id}`;
          await tx`DELETE FROM ${this.t.leases} WHERE execution_id = ${b.execution_id}`;
          await tx`DELETE FROM ${this.t.outbox} WHERE execution_id = ${b.execution_id}`;
          this.cursors.drop(b.execution_id);
          result.checkpoints += c.count;
          result.idempotency += i.count;
          result.executions++;
        }
        return batch.length < PRUNE_CHUNK;
      });
      if (done) break;
    }
    return result;
  }

  async fetchUnsynced(options: { limit: number; maxBytes: number }): Promise<OutboxEntry[]> {
    return this.read(async (sql) => {
      const rows = await sql<OutboxJoinRow[]>`
        SELECT o.seq AS o_seq, o.id AS o_id, o.kind AS o_kind, o.execution_id AS o_execution_id,
               o.payload AS o_payload, o.bytes AS o_bytes, o.created_at AS o_created_at, c.*
        FROM ${this.t.outbox} o LEFT JOIN ${this.t.checkpoints} c ON o.kind = 'checkpoint' AND c.id = o.id
        WHERE NOT o.synced ORDER BY o.seq LIMIT ${Math.max(1, options.limit)}`;
      return takeByBytes(rows.map(entryFromJoin), options.maxBytes);
    });
  }

  async applyResults(results: { synced?: string[]; quarantined?: Record<string, string> }): Promise<void> {
    const synced = results.synced ?? [];
    const q = Object.entries(results.quarantined ?? {});
    if (!synced.length && !q.length) return;
    await this.write(async (tx) => {
      if (synced.length) {
        await tx`UPDATE ${this.t.outbox} SET synced = true
          WHERE id IN ${this.textList(tx, synced)} AND NOT synced`;
      }
      for (const [id, reason] of q) {
        await tx`UPDATE ${this.t.outbox} SET synced = true, sync_error = ${reason} WHERE id = ${id} AND NOT synced`;
      }
    });
  }

  markSynced(ids: string[]): Promise<void> {
    return this.applyResults({ synced: ids });
  }

  markQuarantined(reasons: Record<string, string>): Promise<void> {
    return this.applyResults({ quarantined: reasons });
  }

  async outboxStats(): Promise<OutboxStats> {
    return this.read(async (sql) => {
      const [p] = await sql<{ n: string; bytes: string; oldest: string | null }[]>`
        SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes, min(created_at) AS oldest
        FROM ${this.t.outbox} WHERE NOT synced`;
      const [q] = await sql<{ n: string }[]>`SELECT count(*) AS n FROM ${this.t.outbox} WHERE sync_error IS NOT NULL`;
      const [last] = await sql<{ sync_error: string }[]>`
        SELECT sync_error FROM ${this.t.outbox} WHERE sync_error IS NOT NULL ORDER BY seq DESC LIMIT 1`;
      return {
        pendingCount: Number(p.n),
        pendingBytes: Number(p.bytes),
        oldestPendingAt: p.oldest,
        oldestPendingAgeMs: p.oldest ? Math.max(0, Date.now() - Date.parse(p.oldest)) : null,
        quarantinedCount: Number(q.n),
        lastQuarantineReason: last?.sync_error ?? null,
      };
    });
  }

  async listQuarantined(options: { afterId?: string; limit?: number } = {}): Promise<QuarantinedEntry[]> {
    return this.read(async (sql) => {
      let after = '0';
      if (options.afterId) {
        const [r] = await sql<{ seq: string }[]>`SELECT seq FROM ${this.t.outbox} WHERE id = ${options.afterId}`;
        after = r?.seq ?? '0';
      }
      const rows = await sql<{ id: string; kind: OutboxKind; execution_id: string; sync_error: string; created_at: string }[]>`
        SELECT id, kind, execution_id, sync_error, created_at FROM ${this.t.outbox}
        WHERE sync_error IS NOT NULL AND seq > ${after} ORDER BY seq
        ${options.limit ? sql`LIMIT ${options.limit}` : sql``}`;
      return rows.map((r) => ({ id: r.id, kind: r.kind, executionId: r.execution_id, reason: r.sync_error, createdAt: r.created_at }));
    });
  }

  async importRows(bundle: RestoreBundle): Promise<ImportResult> {
    const checkpoints = checkBundleRows(CheckpointSchema, bundle.checkpoints, 'checkpoint');
    const pending = bundle.pending ? checkBundleRows(PendingSchema, [bundle.pending], 'pending interrupt')[0] : null;
    const idem = checkBundleRows(IdempotencySchema, bundle.idempotency, 'idempotency entry');
    return this.write(async (tx) => {
      const executionIds = [...new Set(checkpoints.map((c) => c.executionId))].sort();
      // lock each execution (a placeholder row when new) so no writer moves it while the plan is made and written
      for (const e of executionIds) {
        await tx`INSERT INTO ${this.t.executions} (execution_id, next_seq, last_id, last_node_id, last_step, last_status, updated_at)
          VALUES (${e}, 0, '', '', '', '', '') ON CONFLICT (execution_id) DO UPDATE SET execution_id = excluded.execution_id`;
      }
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
          SELECT id, seq FROM ${this.t.checkpoints} WHERE execution_id = ${e} AND seq >= ${lo} AND seq <= ${hi}`;
        for (const r of local) at.set(`${e}\u0000${Number(r.seq)}`, r.id);
      }
      const found = new Map<string, { executionId: string; seq: number }>();
      if (checkpoints.length) {
        const rows = await tx<{ id: string; execution_id: string; seq: string | number }[]>`
          SELECT id, execution_id, seq FROM ${this.t.checkpoints} WHERE id IN ${this.textList(tx, checkpoints.map((c) => c.id))}`;
        for (const r of rows) found.set(r.id, { executionId: r.execution_id, seq: Number(r.seq) });
      }
      const plan = planImport(checkpoints, {
        idAt: (e, seq) => at.get(`${e}\u0000${seq}`) ?? null,
        find: (id) => found.get(id) ?? null,
      });
      const res = importResultOf(plan);
      for (const c of plan.insert) {
        await tx`INSERT INTO ${this.t.checkpoints} (id, execution_id, seq, node_id, turn, step, status, agent_path, parent_id,
            state, node_input, node_output, interrupt_reason, interrupt_context, created_at, writer_id)
          VALUES (${c.id}, ${c.executionId}, ${c.seq}, ${c.nodeId}, ${c.turn}, ${c.step}, ${c.status}, ${c.agentPath},
            ${c.parentId}, ${JSON.stringify(c.state)}, ${c.nodeInput === null ? null : JSON.stringify(c.nodeInput)},
            ${c.nodeOutput === null ? null : JSON.stringify(c.nodeOutput)}, ${c.interruptReason},
            ${c.interruptContext === null ? null : JSON.stringify(c.interruptContext)}, ${c.createdAt}, ${c.writerId})`;
        await tx`UPDATE ${this.t.executions} SET next_seq = ${c.seq + 1}, last_id = ${c.id}, last_node_id = ${c.nodeId},
            last_step = ${c.step}, last_status = ${c.status}, updated_at = ${c.createdAt}
          WHERE execution_id = ${c.executionId} AND next_seq <= ${c.seq}`;
        this.cursors.drop(c.executionId);
        res.inserted++;
      }
      // an execution row left as a placeholder (nothing written) must not stay empty
      if (executionIds.length) {
        await tx`DELETE FROM ${this.t.executions}
          WHERE last_id = '' AND execution_id IN ${this.textList(tx, executionIds)}`;
      }
      const touched = [...new Set([...executionIds, ...(pending ? [pending.executionId] : [])])].sort();
      for (const e of touched) {
        // a pause is open only while its checkpoint is the newest row: one that is not is stale
        const [open] = await tx<{ checkpoint_id: string }[]>`
          SELECT checkpoint_id FROM ${this.t.pending} WHERE execution_id = ${e} FOR UPDATE`;
        if (!open) continue;
        const [latest] = await tx<{ id: string }[]>`
          SELECT id FROM ${this.t.checkpoints} WHERE execution_id = ${e} ORDER BY seq DESC LIMIT 1`;
        if (open.checkpoint_id !== latest?.id) {
          await tx`DELETE FROM ${this.t.pending} WHERE execution_id = ${e} AND checkpoint_id = ${open.checkpoint_id}`;
          res.stalePendingRemoved.push({ executionId: e, checkpointId: open.checkpoint_id });
        }
      }
      if (pending) {
        const [latest] = await tx<{ id: string }[]>`
          SELECT id FROM ${this.t.checkpoints} WHERE execution_id = ${pending.executionId} ORDER BY seq DESC LIMIT 1`;
        if (latest?.id === pending.checkpointId) {
          const ins = await tx`INSERT INTO ${this.t.pending} (execution_id, checkpoint_id, node_id, reason, context, agent_path, created_at)
            VALUES (${pending.executionId}, ${pending.checkpointId}, ${pending.nodeId}, ${pending.reason},
              ${pending.context === null ? null : JSON.stringify(pending.context)}, ${pending.agentPath}, ${pending.createdAt})
            ON CONFLICT (execution_id) DO NOTHING`;
          res.pendingImported = ins.count === 1;
        }
      }
      for (const e of idem) {
        const ins = await tx`INSERT INTO ${this.t.idempotency} (execution_id, key, result, created_at)
          VALUES (${e.executionId}, ${e.key}, ${e.result === null ? null : JSON.stringify(e.result)}, ${e.createdAt})
          ON CONFLICT (execution_id, key) DO NOTHING`;
        res.idempotencyInserted += ins.count;
      }
      return res;
    });
  }

  async getMeta(key: string): Promise<string | null> {
    return this.read(async (sql) => {
      const [row] = await sql<{ value: string }[]>`SELECT value FROM ${this.t.meta} WHERE key = ${`note:${key}`}`;
      return row?.value ?? null;
    });
  }

  async setMeta(key: string, value: string): Promise<void> {
    const sql = await this.q();
    await sql`INSERT INTO ${this.t.meta} (key, value) VALUES (${`note:${key}`}, ${value})
      ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
  }

  onWrite(listener: () => void): () => void {
    return this.signal.on(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsSql) await this.sql.end({ timeout: 5 });
  }
}
