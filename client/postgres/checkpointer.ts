/**
 * Postgres adapter of the store contract (postgres.js). Many processes and
 * machines may share one database. Seq is assigned under the execution row's
 * lock; a claim is `DELETE … RETURNING` at READ COMMITTED, so exactly one of
 * any number of concurrent claimers gets the row.
 *
 * This file holds the class: connection, setup, the write and read retries,
 * and the writes that decide under the execution row's lock (put, pause,
 * claim, cancel, idempotency). Statements it runs live beside it, as
 * functions taking the sql handle, file for file as the SQLite store's (the
 * pairing is in index.ts).
 *
 * What the `waymark/postgres` entry exports (its index.ts loads this file once the
 * optional peer `postgres` is found): the API reference documents the entry from here.
 *
 * @module waymark/postgres
 */
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { uuidv7 } from '../../shared/ids.js';
import { ErrorCode, hasCode } from '../../shared/errors.js';
import type { Json } from '../../shared/json.js';
import { stateOfCursor, type ChainRow, type CodecCursor } from '../../shared/codec.js';
import type { Checkpoint, Decision, IdempotencyEntry, PendingInterrupt } from '../../shared/rows.js';
// the store contract's types, named `C.Lease`, `C.CancelResult`, …
import type * as C from '../checkpointer.js';
import { DuplicateIdError, LeaseLost, PauseExistsError, RunInProgress } from '../errors.js';
import {
  rowOf,
  STORE_BASE_OPTIONS,
  StoreBase,
  writerIdProblems,
  written,
  type Outcome,
  type StoreBaseOptions,
} from '../store/base.js';
import { integerProblem, optionNames, shown } from '../../support/validate.js';
import { alreadyCancelled, cancelMarker, checkCancel, notFound } from '../store/cancel.js';
import {
  fromColumns,
  toColumns,
  type CheckpointColumns,
  type IdempotencyColumns,
  type PendingColumns,
} from '../store/columns.js';
import {
  checkpointWritten,
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
import { migratedWriterId, migratePostgres } from './migrations.js';
import { connectionFailed, SQLSTATE } from '../../support/db-errors.js';
import { fence, heldLease, leaseInfo, takeLease } from './leases.js';
import { commitOnce } from './commit-once.js';
import { tablesOf, type Sql, type Tables, type Tx } from './tables.js';
import * as decisions from './decisions.js';
import { checkClaimDecisionId, checkDecision } from '../store/decisions.js';
import { ADVANCE, constraintOf, lockExecution, pgCode } from './executions.js';
import { CursorPutBatch } from './put-batch.js';
import { putManyOnCursor, type CursorPutResult } from './put-on-cursor.js';
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
import { deleteRows, pruneChunk } from './delete.js';
import { importInto } from './import.js';
import { usageTotalsOf } from '../store/usage.js';
import type { UsageTotal } from '../../shared/usage.js';

/** How long `close` waits for puts issued before it, and then for the queries in flight as the pool ends. */
const CLOSE_WAIT_MS = 5_000;

const isRowText = (r: CursorPutResult): r is RowText => r !== null && !('error' in r);

/** Options of `new PostgresCheckpointer(...)`: the connection, the schema, and the store options every backend takes. */
export interface PostgresCheckpointerOptions extends StoreBaseOptions {
  /** Connection string; or pass `sql`. */
  url?: string;
  /** An existing postgres.js client (not closed by `close()`). */
  // biome-ignore lint/suspicious/noExplicitAny: a caller may hand in a client with any custom types; the store sends none of them
  sql?: postgres.Sql<any>;
  /** Schema holding the tables. Default `waymark`. */
  schema?: string;
  /** Pool size when the adapter makes its own client. Default 10. */
  max?: number;
  /** This store's writer id; persisted on first setup when absent. */
  writerId?: string;
}

/** Thrown inside a claim's transaction when the pause is closed already: rolls back what the claim took (its lease, a placeholder row). */
const NOT_CLAIMED = new Error('waymark: pause not claimed');

/** A lease decision refused: held by another, lost, or the run cancelled. */
const leaseRefused = (e: unknown) =>
  hasCode(e, ErrorCode.RUN_IN_PROGRESS) || hasCode(e, ErrorCode.LEASE_LOST) || hasCode(e, ErrorCode.RUN_CANCELLED);

const POSTGRES_OPTIONS = [
  ...STORE_BASE_OPTIONS,
  ...optionNames<Omit<PostgresCheckpointerOptions, keyof StoreBaseOptions>>({
    url: true,
    sql: true,
    schema: true,
    max: true,
    writerId: true,
  }),
];
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The Postgres store's own options. */
function postgresProblems(o: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (o.sql === undefined && o.url === undefined)
    problems.push('give url (a postgres:// URL) or sql (a postgres.js client)');
  if (o.sql !== undefined && o.url !== undefined) problems.push('give url or sql, not both');
  if (o.url !== undefined && (typeof o.url !== 'string' || o.url === ''))
    problems.push(`url: must be a postgres:// URL (got ${shown(o.url)})`);
  if (o.sql !== undefined && typeof o.sql !== 'function')
    problems.push(`sql: must be a postgres.js client (got ${shown(o.sql)})`);
  if (o.schema !== undefined && (typeof o.schema !== 'string' || !SCHEMA_NAME.test(o.schema)))
    problems.push(
      `schema: must be a lower-case SQL name (a-z, 0-9, _; at most 63, not starting with a digit) (got ${shown(o.schema)})`,
    );
  const max = integerProblem('max', o.max, 1);
  if (max) problems.push(max);
  problems.push(...writerIdProblems(o.writerId));
  return problems;
}

export class PostgresCheckpointer extends StoreBase implements C.Checkpointer {
  private readonly sql: Sql;
  private readonly ownsSql: boolean;
  readonly schema: string;
  private readonly givenWriterId?: string;
  private resolvedWriterId: string | null = null;
  private ready: Promise<void> | null = null;
  private readonly t: Tables;

  constructor(options: PostgresCheckpointerOptions) {
    super('PostgresCheckpointer', options, POSTGRES_OPTIONS, postgresProblems);
    this.ownsSql = !options.sql;
    this.sql = (options.sql ??
      // fetch_types off: postgres.js 3.4.9 leaks an unhandled rejection (which exits Node) when a
      // backend dies during its startup type query (porsager/postgres#1192, #1223); we send no array params
      postgres(options.url!, { max: options.max ?? 10, onnotice: () => {}, fetch_types: false })) as unknown as Sql;
    this.schema = options.schema ?? 'waymark';
    this.givenWriterId = options.writerId;
    this.t = tablesOf(this.sql, this.schema);
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
    try {
      this.assertOpen();
    } catch (e) {
      return Promise.reject(e);
    }
    if (!this.ready) {
      this.ready = this.migrate().catch((e) => {
        this.ready = null;
        throw e;
      });
    }
    return this.ready;
  }

  /** Whether this schema holds a waymark store already (its meta table), without creating or migrating anything. */
  async exists(): Promise<boolean> {
    const [row] = await this.sql<
      { found: string | null }[]
    >`SELECT to_regclass(${`${this.schema}.waymark_meta`})::text AS found`;
    return row.found !== null;
  }

  private async migrate(): Promise<void> {
    const persisted = await migratedWriterId(this.sql, this.schema);
    if (persisted !== null) {
      this.resolvedWriterId = this.givenWriterId ?? persisted;
      return;
    }
    const schemaId = this.sql(this.schema);
    await this.sql.begin(async (tx: Tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext(${'waymark.client:' + this.schema}))`;
      await tx`CREATE SCHEMA IF NOT EXISTS ${schemaId}`;
      await migratePostgres(tx, this.schema);
      const id = this.givenWriterId ?? `pg-${uuidv7()}`;
      await tx`INSERT INTO ${this.t.meta} (key, value) VALUES ('writer_id', ${id}) ON CONFLICT (key) DO NOTHING`;
      const [row] = await tx<{ value: string }[]>`SELECT value FROM ${this.t.meta} WHERE key = 'writer_id'`;
      this.resolvedWriterId = this.givenWriterId ?? row.value;
    });
  }

  /** A transaction; `underway`: part of a put issued before `close`, which waits for it (see `close`). */
  private async begin<T>(fn: (tx: Tx) => Promise<T>, underway = false): Promise<T> {
    return (await (await this.q(underway)).begin(fn)) as T;
  }

  /**
   * Run a write transaction, trying again (up to 3 times) when the connection
   * was lost under it. Every write is identifiable, so before trying again
   * `landed` asks whether the lost attempt committed after all (a checkpoint
   * with our pre-minted id exists, …) and returns its result if so
   * (`commitOnce`; the last attempt's loss is the caller's error). Without
   * `landed`, only writes that are idempotent by construction are retried.
   * `lostBefore`: an earlier attempt by another path was lost (its commit may
   * become visible only now), so even the first attempt may meet its own row;
   * `underway`: see `begin`.
   */
  private async write<T>(
    fn: (tx: Tx) => Promise<T>,
    landed?: () => Promise<T | null>,
    o: { lostBefore?: boolean; underway?: boolean } = {},
  ): Promise<T> {
    const lostBefore = o.lostBefore ?? false;
    for (let attempt = 1; ; attempt++) {
      try {
        return await commitOnce(() => this.begin(fn, o.underway), attempt < 3 ? landed : undefined);
      } catch (e) {
        // a retried write whose lost attempt committed meets its own row (a duplicate id, rows in a
        // "fresh" run), its own release (LeaseLost, after a marker or a pause), its own lease (RunInProgress),
        // or a cancel that came after it (RunCancelled)
        if (
          (attempt > 1 || lostBefore) &&
          landed &&
          (e instanceof DuplicateIdError ||
            hasCode(e, ErrorCode.EXECUTION_EXISTS) ||
            hasCode(e, ErrorCode.RUN_CANCELLED) ||
            e instanceof LeaseLost ||
            e instanceof RunInProgress)
        ) {
          const r = await landed();
          if (r) return r;
        }
        if (!connectionFailed(e) || attempt >= 3) throw e;
      }
    }
  }

  /** The stored row with this id if it is the one `input` describes (a lost attempt that committed). */
  private async landedRow(id: string, input: C.CheckpointInput): Promise<{ kind: 'landed'; row: Checkpoint } | null> {
    const row = await this.getById(id);
    return row && row.executionId === input.executionId && row.nodeId === input.nodeId && row.step === input.step
      ? { kind: 'landed', row }
      : null;
  }

  /** The pool once the schema is set up; `underway`: a put issued before `close` may still use it (close waits for puts). */
  private async q(underway = false): Promise<Sql> {
    await (underway && this.ready ? this.ready : this.setup());
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
        if (attempt >= 3 || !connectionFailed(e)) throw e;
      }
    }
  }

  private queueEvent(tx: Tx, e: QueuedEvent) {
    if (!this.outbox) return null;
    return tx`INSERT INTO ${this.t.outbox} (id, kind, execution_id, payload, bytes, created_at)
              VALUES (${e.id}, ${e.kind}, ${e.executionId}, ${e.payload}, ${e.bytes}, ${canonicalTime()})`;
  }

  /** The cursor of row `seq` of an execution, read inside the caller's transaction when not cached. */
  private async txCursorAt(tx: Tx, executionId: string, seq: number, id: string): Promise<CodecCursor> {
    return this.cursorAt(executionId, seq, id, (base, upTo) => readChain(tx, this.t, executionId, base, upTo));
  }

  protected readChain(executionId: string, base: number, seq: number): Promise<ChainRow[]> {
    return this.read((sql) => readChain(sql, this.t, executionId, base, seq));
  }

  /*
   * Lock order. Every transaction that touches an execution's lease row, its
   * execution row and its pending row takes them in this one order, skipping
   * those it does not need: lease → execution → pending; after them only rows
   * of its own (a new checkpoint, claim, outbox event), for which no other
   * writer waits. It is the hot path's order: a fenced put renews (or
   * row-locks) the lease and then advances the execution (putManyOnCursor's
   * one statement, or `fence` then `writeCheckpoint`), and a pause inserts its
   * pending row last. So:
   * - the puts of several runs in one statement (putManyOnCursor) lock every
   *   lease row, then every execution row, in byte order of their ids, as prune and import do;
   * - cancel clears the lease first, then locks the execution, then closes the pause;
   * - a claim takes (or renews) the lease first, then locks the execution when
   *   it writes a row, then deletes the pending row; a claim that finds the
   *   pause closed rolls back the lease it took (NOT_CLAIMED);
   * - delete and prune lock the lease before the execution (prune: a chunk's
   *   leases, then its executions, each in id order; see delete.ts);
   * - a lease alone (acquire, renew, release), a decision (its advisory lock,
   *   then the pending row alone) and an import (executions in id order, then
   *   pending rows, no lease) fit it as they are.
   * So no transaction waits for a lock held by one that waits for its own: no
   * deadlock (40P01, found only after deadlock_timeout), and none is retried.
   */

  /** Write one checkpoint inside the caller's transaction, under the execution row's lock (`locked`: taken already, its position). */
  private async writeCheckpoint(
    tx: Tx,
    input: C.CheckpointInput,
    locked?: { next_seq: number; last_id: string },
  ): Promise<RowText> {
    const ex = locked ?? (await lockExecution(tx, this.t, input.executionId));
    if (checkPrev(input, ex) === 'lookup') {
      const [row] = await tx<
        { execution_id: string }[]
      >`SELECT execution_id FROM ${this.t.checkpoints} WHERE id = ${input.prevId!}`;
      checkPrevOwner(input, row?.execution_id);
    }
    const seq = ex.next_seq;
    const prev = seq > 0 ? await this.txCursorAt(tx, input.executionId, seq - 1, ex.last_id) : null;
    const rt = buildRow(input, seq, prev, this.writerId);
    const r = rt.row;
    try {
      await Promise.all([
        tx`INSERT INTO ${this.t.checkpoints} ${tx(toColumns.checkpoint(r, rt))}`,
        tx`UPDATE ${this.t.executions} SET ${tx(toColumns.execution(r), ...ADVANCE)} WHERE execution_id = ${r.executionId}`,
        this.queueEvent(tx, checkpointWritten(rt)),
      ]);
    } catch (e) {
      if (pgCode(e) === SQLSTATE.uniqueViolation && constraintOf(e) === 'checkpoints_pkey') {
        throw new DuplicateIdError(r.id);
      }
      throw e;
    }
    return rt;
  }

  async cancel(executionId: string, options?: C.CancelOptions): Promise<C.CancelResult> {
    this.assertOpen();
    const reason = checkCancel(executionId, options);
    let out: { rt: RowText | null; marker: Checkpoint; closed: PendingInterrupt | null };
    try {
      // a retried attempt whose lost one committed finds its own marker: reported as alreadyCancelled
      out = await this.write(async (tx) => {
        // lease → execution → pending (see "Lock order"). Every runner is fenced out: its next write or
        // renewal finds the holder cleared and the marker. Already cancelled, the holder is clear already;
        // a refusal (not found, finished) rolls this back
        await tx`UPDATE ${this.t.leases} SET holder = NULL, expires_at = 0 WHERE execution_id = ${executionId}`;
        // the execution row's lock orders this cancel with every write of the run
        const [ex] = await tx<{ last_id: string }[]>`
          SELECT last_id FROM ${this.t.executions} WHERE execution_id = ${executionId} FOR UPDATE`;
        if (!ex?.last_id) throw notFound(executionId);
        const [cols] = await tx<CheckpointColumns[]>`SELECT * FROM ${this.t.checkpoints} WHERE id = ${ex.last_id}`;
        if (!cols) throw notFound(executionId);
        const last = fromColumns.checkpoint(cols);
        if (alreadyCancelled(last)) return { rt: null, marker: last, closed: null };
        const [open] = await tx<
          PendingColumns[]
        >`DELETE FROM ${this.t.pending} WHERE execution_id = ${executionId} RETURNING *`;
        const closed = open ? fromColumns.pending(open) : null;
        if (closed) await this.queueEvent(tx, interruptClosed(closed, this.writerId));
        const state = stateOfCursor(await this.txCursorAt(tx, executionId, last.seq, last.id));
        const rt = await this.writeCheckpoint(tx, cancelMarker(last, state, reason));
        return { rt, marker: rt.row, closed };
      });
    } catch (e) {
      this.cursors.drop(executionId);
      throw e;
    }
    this.afterCommit(executionId, written(out.rt), 'store.cancel.afterCommit');
    return { checkpoint: out.marker, closedPause: out.closed, alreadyCancelled: out.rt === null };
  }

  async acquireLease(executionId: string, request: C.LeaseRequest): Promise<C.Lease> {
    this.assertOpen();
    checkLease(executionId, request);
    // an acquisition whose answer was lost is recognised by its holder, unique per acquisition
    const landed = async () => heldLease(executionId, await leaseInfo(await this.q(), this.t, executionId), request);
    const sentAt = Date.now();
    const lease = await this.write((tx) => takeLease(tx, this.t, executionId, request), landed);
    this.renewals.noted(lease, sentAt);
    return lease;
  }

  async renewLease(lease: C.Lease): Promise<C.Lease> {
    this.assertOpen();
    checkLease(lease?.executionId, lease);
    const sentAt = Date.now();
    const renewed = await this.begin((tx) => fence(tx, this.t, lease, false));
    this.renewals.noted(renewed, sentAt);
    return renewed;
  }

  async releaseLease(lease: C.Lease): Promise<void> {
    this.assertOpen();
    checkLease(lease?.executionId, lease);
    await this.begin(async (tx) => {
      await tx`UPDATE ${this.t.leases} SET holder = NULL, expires_at = 0
        WHERE execution_id = ${lease.executionId} AND holder = ${lease.holder} AND epoch = ${lease.epoch}`;
    });
  }

  async getLease(executionId: string): Promise<C.LeaseInfo | null> {
    this.assertOpen();
    return this.read((sql) => leaseInfo(sql, this.t, executionId));
  }

  /**
   * Puts on a cached cursor of concurrent runs, sent together while one is in
   * flight. A cached cursor means the schema was set up (a row was written or
   * read), so a put issued before `close` and sent after it still goes.
   */
  private readonly onCursor = new CursorPutBatch(async (queued) => {
    // judged as the statement is sent (a put may have waited for the one before): a lease this store renewed
    // less than a third of its ttl ago is only checked
    const sentAt = Date.now();
    const puts = queued.map((p) => ({ ...p, renew: !!p.lease && !this.renewals.fresh(p.lease, sentAt) }));
    const out = await putManyOnCursor(this.sql, this.t, { writerId: this.writerId, outbox: this.outbox }, puts);
    for (const [k, p] of puts.entries())
      if (p.lease && p.renew && isRowText(out[k])) this.renewals.noted(p.lease, sentAt);
    return out;
  });

  /**
   * How the puts on a cached cursor were grouped so far: sends, the puts they
   * held, the largest, and the puts the fast path wrote (the others took the
   * locked path or failed) (for benches and tests).
   */
  get groupCommitStats(): { batches: number; writes: number; largest: number; written: number } {
    return { ...this.onCursor.stats };
  }

  /** The newest put of each execution still in flight: a put waits for the one issued before it (see `put`). */
  private readonly putTails = new Map<string, Promise<unknown>>();

  /**
   * Puts of one execution run one after another, in the order they were
   * issued (on a pool, two puts issued at once would otherwise race for the
   * next seq on two connections); puts of different executions run at once.
   */
  async put(input: C.CheckpointInput, options: C.WriteOptions = {}): Promise<Checkpoint> {
    const lease = this.checkWrite(input, options);
    const prev = this.putTails.get(input.executionId);
    const run = prev ? prev.then(() => this.putNow(input, lease)) : this.putNow(input, lease);
    const tail = run.then(
      () => {},
      () => {},
    );
    this.putTails.set(input.executionId, tail);
    void tail.then(() => {
      if (this.putTails.get(input.executionId) === tail) this.putTails.delete(input.executionId);
    });
    return run;
  }

  private async putNow(input: C.CheckpointInput, lease: C.Lease | undefined): Promise<Checkpoint> {
    // a run-end marker releases the lease: only on the locked path, where release and row are one decision
    const release = input.step === 'run_end';
    const minted = { ...input, id: input.id ?? uuidv7() };
    // a fresh run's first write (prevId null) takes the locked path, which refuses an execution that has rows
    const cursor = input.prevId === null || (lease && release) ? null : this.cursors.newest(input.executionId);
    let lost = false;
    if (cursor) {
      try {
        // the statement may have committed before the connection was lost: its row is found by its id
        const out = await commitOnce<Outcome | null>(
          async () => {
            const rt = await this.onCursor.submit({ input: minted, prev: cursor, lease });
            return rt ? written(rt) : null;
          },
          () => this.landedRow(minted.id, minted),
        );
        if (out) {
          this.afterCommit(input.executionId, out, 'store.put.afterCommit');
          return rowOf(out)!;
        }
      } catch (e) {
        this.cursors.drop(input.executionId);
        // lost and not landed: the locked path writes it
        if (!connectionFailed(e)) throw e;
        lost = true;
      }
    }
    let out: Outcome;
    const sentAt = Date.now();
    try {
      out = await this.write<Outcome>(
        async (tx) => {
          if (lease) await fence(tx, this.t, lease, release);
          return written(await this.writeCheckpoint(tx, minted));
        },
        () => this.landedRow(minted.id, minted),
        { lostBefore: lost, underway: true },
      );
    } catch (e) {
      this.cursors.drop(input.executionId);
      throw fencedWriteError(e, input);
    }
    if (lease && !release && out.kind === 'written') this.renewals.noted(lease, sentAt);
    this.afterCommit(input.executionId, out, 'store.put.afterCommit');
    return rowOf(out)!;
  }

  async recordInterrupt(
    input: C.CheckpointInput,
    pause: { reason: string; context: Json | null },
    options: C.WriteOptions = {},
  ): Promise<{ checkpoint: Checkpoint; pending: PendingInterrupt }> {
    const lease = this.checkWrite(input, options);
    input = { ...input, id: input.id ?? uuidv7() };
    type Recorded = Outcome & { pending: PendingInterrupt };
    const landed = async (): Promise<Recorded | null> => {
      const found = await this.landedRow(input.id!, input);
      const pending = found ? await this.getPendingInterrupt(found.row.executionId) : null;
      return found && pending?.checkpointId === found.row.id ? { ...found, pending } : null;
    };
    let out: Recorded;
    try {
      out = await this.write(async (tx) => {
        // a pause ends this runner's hold: the resumer that claims it takes the lease anew
        if (lease) await fence(tx, this.t, lease, true);
        const rt = await this.writeCheckpoint(tx, input);
        const pending = pendingFor(rt.row, pause.reason, pause.context);
        this.fault('store.recordInterrupt.betweenRows');
        try {
          await tx`INSERT INTO ${this.t.pending} ${tx(toColumns.pending(pending))}`;
        } catch (e) {
          if (pgCode(e) === SQLSTATE.uniqueViolation) throw new PauseExistsError(pending.executionId);
          throw e;
        }
        await this.queueEvent(tx, interruptOpened(pending));
        return { ...written(rt), pending };
      }, landed);
    } catch (e) {
      this.cursors.drop(input.executionId);
      throw fencedWriteError(e, input);
    }
    this.afterCommit(input.executionId, out, 'store.recordInterrupt.afterCommit');
    return { checkpoint: rowOf(out)!, pending: out.pending };
  }

  async claimInterrupt(pause: C.PauseRef, options?: C.ClaimOptions): Promise<C.ClaimResult | null> {
    this.assertOpen();
    const { executionId, checkpointId } = pause;
    const decisionId = checkClaimDecisionId(options?.decisionId);
    const next = options?.next ? { ...options.next, id: options.next.id ?? uuidv7() } : undefined;
    if (next) checkInput(next);
    const ask = options?.lease;
    if (ask) checkLease(executionId, ask);
    const open = next ? await this.getPendingInterrupt(executionId) : null;
    const before = open?.checkpointId === checkpointId ? open : null;
    type Claimed = Outcome<RowText | null> & { pending: PendingInterrupt; lease: C.Lease | null };
    // with a `next` row, a lost attempt that committed is recognisable by that row's id
    const landed = next
      ? async (): Promise<Claimed | null> => {
          const found = await this.landedRow(next.id, next);
          if (!found || !before) return null;
          // the lost attempt took the lease with the claim: it is ours if its holder is still us
          const lease = ask ? heldLease(executionId, await this.getLease(executionId), ask) : null;
          if (ask && !lease) return null;
          return { ...found, pending: before, lease };
        }
      : undefined;
    let out: Claimed | null;
    try {
      out = await this.write(async (tx) => {
        // lease → execution → pending (see "Lock order"). The claim and the lease are one decision: a refused
        // lease rolls the claim back, and a claim that finds the pause closed rolls the lease back (NOT_CLAIMED)
        let lease: C.Lease | null = null;
        if (ask) {
          try {
            lease = isHeld(ask) ? await fence(tx, this.t, ask, false) : await takeLease(tx, this.t, executionId, ask);
          } catch (e) {
            // refused because another claimer (or a cancel) closed the pause first: not claimed, as when it is seen closed
            if (
              leaseRefused(e) &&
              !(
                await tx`SELECT 1 AS one FROM ${this.t.pending} WHERE execution_id = ${executionId} AND checkpoint_id = ${checkpointId}`
              ).length
            )
              throw NOT_CLAIMED;
            throw e;
          }
        }
        const ex = next ? await lockExecution(tx, this.t, executionId) : undefined;
        const [row] = await tx<PendingColumns[]>`
          DELETE FROM ${this.t.pending} WHERE execution_id = ${executionId} AND checkpoint_id = ${checkpointId} RETURNING *`;
        if (!row) throw NOT_CLAIMED;
        const pending = fromColumns.pending(row);
        const claimedAt = canonicalTime();
        await decisions.recordClaim(tx, this.t, {
          checkpoint_id: checkpointId,
          execution_id: executionId,
          writer_id: this.writerId,
          decision_id: decisionId,
          claimed_at: claimedAt,
        });
        await this.queueEvent(tx, interruptClaimed(pending, this.writerId, decisionId, claimedAt));
        const rt = next ? await this.writeCheckpoint(tx, next, ex) : null;
        return { ...written(rt), pending, lease };
      }, landed);
    } catch (e) {
      if (e === NOT_CLAIMED) return null;
      this.cursors.drop(executionId);
      throw e;
    }
    if (!out) return null;
    this.afterCommit(executionId, out, 'store.claim.afterCommit');
    return { pending: out.pending, checkpoint: rowOf(out), lease: out.lease };
  }

  async recordDecision(decision: Decision): Promise<C.RecordDecisionResult> {
    this.assertOpen();
    const d = checkDecision(decision);
    // a lost answer whose attempt committed: the decision is found under its id
    const landed = async (): Promise<C.RecordDecisionResult | null> =>
      (await decisions.existingDecision(await this.q(), this.t, d))?.decisionId === d.decisionId
        ? { recorded: true }
        : null;
    const out = await this.write(
      (tx) =>
        decisions.insertDecision(tx, this.t, decisions.decisionsLockKey(this.schema), d, (t, e) =>
          this.queueEvent(t, e),
        ),
      landed,
    );
    if (out.recorded) this.committed(null);
    return out;
  }

  async listDecisions(options: C.ListDecisionsOptions = {}): Promise<C.DecisionPage> {
    this.assertOpen();
    return this.read((sql) => decisions.listDecisions(sql, this.t, options));
  }

  async getDecision(executionId: string, checkpointId: string): Promise<C.StoredDecision | null> {
    this.assertOpen();
    return this.read((sql) => decisions.getDecision(sql, this.t, executionId, checkpointId));
  }

  async forgetUnheldDecisions(executionId: string, keepCheckpointId: string | null, upToSeq: number): Promise<number> {
    this.assertOpen();
    // one autocommitted DELETE, no transaction around it; idempotent: a retry after a lost answer deletes what is left
    return this.read((sql) => decisions.forgetUnheldDecisions(sql, this.t, executionId, keepCheckpointId, upToSeq));
  }

  async decisionSeq(): Promise<number> {
    this.assertOpen();
    return this.read((sql) => decisions.decisionSeq(sql, this.t, decisions.decisionsLockKey(this.schema)));
  }

  async getPendingInterrupt(executionId: string): Promise<PendingInterrupt | null> {
    this.assertOpen();
    return this.read((sql) => readPending(sql, this.t, executionId));
  }

  async listPendingInterrupts(options: C.PendingListOptions = {}): Promise<PendingInterrupt[]> {
    this.assertOpen();
    return this.read((sql) => listPending(sql, this.t, options));
  }

  async latest(executionId: string): Promise<Checkpoint | null> {
    this.assertOpen();
    return this.read((sql) => readLatest(sql, this.t, executionId));
  }

  async getById(id: string): Promise<Checkpoint | null> {
    this.assertOpen();
    return this.read((sql) => readById(sql, this.t, id));
  }

  async list(executionId: string, options: C.ListOptions = {}): Promise<Checkpoint[]> {
    this.assertOpen();
    checkListOptions(options);
    return this.read((sql) => listRows(sql, this.t, executionId, options));
  }

  async usageTotals(executionIds: readonly string[]): Promise<Map<string, UsageTotal>> {
    this.assertOpen();
    if (!executionIds.length) return new Map();
    return usageTotalsOf(executionIds, await this.read((sql) => listUsageRows(sql, this.t, executionIds)));
  }

  async listExecutions(options: C.ExecutionListOptions = {}): Promise<C.ExecutionSummary[]> {
    this.assertOpen();
    return this.read((sql) => listExecutionSummaries(sql, this.t, options));
  }

  async getIdempotent(executionId: string, key: string): Promise<C.IdempotentLookup> {
    this.assertOpen();
    return this.read((sql) => readIdempotent(sql, this.t, executionId, key));
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
    // INSERT … ON CONFLICT DO NOTHING: a retry after a lost commit finds the stored entry
    const { entry, lost } = await this.write(async (tx) => {
      let lost: unknown = null;
      if (options.lease) {
        try {
          await fence(tx, this.t, options.lease, false);
        } catch (error) {
          // the same run, taken over or cancelled (its holder's row is still there): the effect is recorded; a run deleted
          // (and perhaps started again under its id) lost that row: nothing may outlive it. The lease row's lock first, as
          // delete takes it ("Lock order"): a delete in flight commits before the row is looked for
          await tx`SELECT 1 AS one FROM ${this.t.leases} WHERE execution_id = ${executionId} FOR UPDATE`;
          const [anchor] =
            await tx`SELECT 1 AS one FROM ${this.t.checkpoints} WHERE id = ${options.anchorId ?? ''} AND execution_id = ${executionId}`;
          if (!anchor) throw error;
          lost = error;
        }
      }
      const inserted = await tx<IdempotencyColumns[]>`
        INSERT INTO ${this.t.idempotency} ${tx(toColumns.idempotency(e))}
        ON CONFLICT (execution_id, key) DO NOTHING RETURNING *`;
      if (inserted.length === 1) {
        await this.queueEvent(tx, event);
        return { entry: e, lost };
      }
      const [row] = await tx<IdempotencyColumns[]>`
        SELECT * FROM ${this.t.idempotency} WHERE execution_id = ${executionId} AND key = ${key}`;
      return { entry: fromColumns.idempotency(row), lost };
    });
    this.afterCommit(executionId, written(null), 'store.idempotency.afterCommit');
    if (lost) throw lost;
    return entry;
  }

  async listIdempotent(executionId: string): Promise<IdempotencyEntry[]> {
    this.assertOpen();
    return this.read((sql) => listIdempotency(sql, this.t, executionId));
  }

  async deleteExecution(executionId: string, options: C.DeleteOptions = {}): Promise<C.DeleteResult> {
    this.assertOpen();
    const out = await this.begin((tx) =>
      deleteRows(tx, this.t, executionId, (e) => this.queueEvent(tx, e), options.localOnly),
    );
    this.afterDelete(executionId);
    return out;
  }

  async prune(options: C.PruneOptions): Promise<C.PruneResult> {
    this.assertOpen();
    const walk = new PruneWalk(options);
    while (!walk.done) {
      await this.begin((tx) => pruneChunk(tx, this.t, walk, (id) => this.cursors.drop(id)));
    }
    return walk.result;
  }

  async fetchUnsynced(options: C.FetchUnsyncedOptions): Promise<C.OutboxEntry[]> {
    this.assertOpen();
    return this.read((sql) => fetchUnsynced(sql, this.t, options));
  }

  async applyResults(results: { synced?: string[]; quarantined?: Record<string, string> }): Promise<void> {
    this.assertOpen();
    const synced = results.synced ?? [];
    const q = Object.entries(results.quarantined ?? {});
    if (!synced.length && !q.length) return;
    await this.write((tx) => applyResults(tx, this.t, synced, q));
  }

  async outboxStats(): Promise<C.OutboxStats> {
    this.assertOpen();
    return this.read((sql) => outboxStats(sql, this.t));
  }

  async listQuarantined(options: C.QuarantineListOptions = {}): Promise<C.QuarantinedEntry[]> {
    this.assertOpen();
    return this.read((sql) => listQuarantined(sql, this.t, options));
  }

  async heldByPlane(executionId: string): Promise<boolean> {
    this.assertOpen();
    return this.read((sql) => heldByPlane(sql, this.t, executionId));
  }

  async noteSending(executionIds: readonly string[]): Promise<void> {
    this.assertOpen();
    await noteSending(await this.q(), this.t, executionIds);
  }

  async importRows(bundle: C.RestoreBundle): Promise<C.ImportResult> {
    this.assertOpen();
    const checked = checkBundle(bundle);
    return this.write((tx) => importInto(tx, this.t, checked, (id) => this.cursors.drop(id)));
  }

  async getMeta(key: string): Promise<string | null> {
    this.assertOpen();
    return this.read((sql) => readNote(sql, this.t, key));
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.assertOpen();
    const sql = await this.q();
    await sql`INSERT INTO ${this.t.meta} (key, value) VALUES (${`note:${key}`}, ${value})
      ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
  }

  async close(): Promise<void> {
    if (!this.markClosed()) return;
    // puts issued before the close finish first (one waiting to be sent, one behind its run's earlier put, one on
    // the locked path), for as long as the pool's end would wait for a query in flight
    // (no put is issued after `markClosed`, so the tails now are all there will be)
    await Promise.race([Promise.all(this.putTails.values()), sleep(CLOSE_WAIT_MS, undefined, { ref: false })]);
    if (this.ownsSql) await this.sql.end({ timeout: CLOSE_WAIT_MS / 1000 });
  }
}
