/**
 * What both store adapters hold alike, below their dialect's transactions:
 * the codec-cursor cache, the write signal the drain listens to, the fault
 * hook, the closed state, and the work after each commit. An adapter extends
 * `StoreBase` and writes only its transaction bodies (better-sqlite3's are
 * synchronous, postgres.js's asynchronous; they do not share an orchestration).
 *
 * Glossary:
 * - cursor: the codec's state after one row (`CodecCursor`); the newest row's
 *   cursor per execution is cached so the next write encodes a delta without
 *   reading the chain back.
 * - outcome: what a write transaction committed: the row this attempt wrote,
 *   or (Postgres, after a lost answer) the row found stored by the lost attempt.
 */
import { ErrorCode, issueProblems, WaymarkError } from '../../shared/errors.js';
import { booleanProblem, functionProblem, optionNames, optionsProblems, refuse } from '../../support/validate.js';
import {
  chainBase,
  decodeChain,
  stateOfCursor,
  type ChainRow,
  type CodecCursor,
  type State,
} from '../../shared/codec.js';
import { WriterId, type Checkpoint } from '../../shared/rows.js';
import { PlaneGuardSlot, type CheckpointInput, type Lease, type WriteOptions } from '../checkpointer.js';
import { noFaults, type FaultHook, type FaultPoint } from '../faults.js';
import { checkLease, Renewals } from './lease.js';
import { checkInput, type RowText } from './rows.js';

/**
 * What a write transaction committed. `written`: this attempt wrote `rt` (null
 * when it wrote no checkpoint), whose cursor is known. `landed`: an attempt
 * whose answer was lost had committed, and its row was found stored; which
 * cursor the cache should hold is not known here.
 */
export type Outcome<R extends RowText | null = RowText> =
  | { kind: 'written'; rt: R }
  | { kind: 'landed'; row: Checkpoint };

export const written = <R extends RowText | null>(rt: R): { kind: 'written'; rt: R } => ({ kind: 'written', rt });

/** The checkpoint an outcome committed, if any. */
export const rowOf = (o: Outcome<RowText | null>): Checkpoint | null =>
  o.kind === 'written' ? (o.rt?.row ?? null) : o.row;

/** Every method of a closed store refuses with this (code STORE_CLOSED); `close()` itself may be called again. */
export function storeClosed(store: string): WaymarkError {
  return new WaymarkError(ErrorCode.STORE_CLOSED, `${store} is closed`, { details: { store } });
}

type MaybePromise<T> = T | Promise<T>;
const then = <A, B>(v: MaybePromise<A>, f: (a: A) => MaybePromise<B>): MaybePromise<B> =>
  v instanceof Promise ? v.then(f) : f(v);

/** Reads rows base..seq of one execution (id, seq, state only), as the codec needs them. */
export type ChainReader<R extends MaybePromise<ChainRow[]>> = (base: number, seq: number) => R;

export interface StoreBaseOptions {
  /** Queue outbox events for a plane. Default true. A restore still marks its rows as held by the plane, queued or not. */
  outbox?: boolean;
  /** Named fault points for crash tests. */
  faults?: FaultHook;
}

/** What is wrong with a store's `writerId` (absent is fine: the store makes one). */
export function writerIdProblems(writerId: unknown): string[] {
  if (writerId === undefined) return [];
  const r = WriterId.safeParse(writerId);
  return r.success ? [] : issueProblems(r.error, 'writerId');
}

/** The option names every store takes (each store adds its own). */
export const STORE_BASE_OPTIONS = optionNames<StoreBaseOptions>({ outbox: true, faults: true });

export abstract class StoreBase {
  /** The plane guard a connected replica installs (see `PlaneGuardSlot`); empty until then. */
  readonly planeGuard = new PlaneGuardSlot();
  protected readonly cursors = new CursorCache();
  /** When this store last extended each lease a write was fenced with (see `Renewals`). */
  protected readonly renewals = new Renewals();
  protected readonly outbox: boolean;
  protected readonly fault: FaultHook;
  private readonly signal = new WriteSignal();
  private closed = false;

  /**
   * `known`: the store's option names; `problems`: what else is wrong with its
   * own options. Checked before the store opens anything: INVALID_OPTIONS
   * names every problem (a misspelled `path` opened a temporary database, a
   * misspelled `outbox: false` kept the outbox).
   */
  constructor(
    private readonly storeName: string,
    options: StoreBaseOptions,
    known: readonly string[],
    problems: (o: Record<string, unknown>) => string[],
  ) {
    const all = options === undefined ? ['options: required'] : optionsProblems(options, known);
    if (typeof options === 'object' && options !== null && !Array.isArray(options)) {
      for (const p of [booleanProblem('outbox', options.outbox), functionProblem('faults', options.faults)])
        if (p) all.push(p);
      all.push(...problems(options as unknown as Record<string, unknown>));
    }
    refuse(storeName, all, 'nothing was opened');
    this.outbox = options.outbox ?? true;
    this.fault = options.faults ?? noFaults;
  }

  /**
   * Throws STORE_CLOSED once `close()` was called, then settles the writes
   * queued for a group commit; every contract method but the queued writes
   * themselves (`put`, and `acquireLease` on SQLite) calls it first, so the
   * store applies calls in the order they were made.
   */
  protected assertOpen(): void {
    this.assertNotClosed();
    this.settle();
  }

  /** Commits the writes queued for a group commit, synchronously (an adapter that queues none has nothing to do). */
  protected settle(): void {}

  /** Before a write: the store is open, the input valid, its lease (if any) well-formed; returns that lease. Nothing written. */
  protected checkWrite(input: CheckpointInput, options: WriteOptions): Lease | undefined {
    this.assertOpen();
    return this.validateWrite(input, options);
  }

  /** As `checkWrite`, for a write that joins the group-commit queue: the queue is not settled first. */
  protected checkQueuedWrite(input: CheckpointInput, options: WriteOptions): Lease | undefined {
    this.assertNotClosed();
    return this.validateWrite(input, options);
  }

  /** STORE_CLOSED once `close()` was called; for a call that joins the group-commit queue (nothing is settled first). */
  protected assertNotClosed(): void {
    if (this.closed) throw storeClosed(this.storeName);
  }

  private validateWrite(input: CheckpointInput, options: WriteOptions): Lease | undefined {
    checkInput(input);
    if (options.lease) checkLease(input.executionId, options.lease);
    return options.lease;
  }

  /** Marks the store closed: true the first time (the adapter then frees its connection). */
  protected markClosed(): boolean {
    if (this.closed) return false;
    this.closed = true;
    return true;
  }

  /** After a commit: cache the written row's cursor and wake the drain (only when there is an outbox to drain). */
  protected committed(rt: RowText | null): void {
    if (rt) this.cursors.set(rt.row.executionId, rt.cursor);
    if (this.outbox) this.signal.emit();
  }

  /** After an execution's deletion committed: its cursor is forgotten, the drain woken for the deletion event. */
  protected afterDelete(executionId: string): void {
    this.cursors.drop(executionId);
    this.committed(null);
  }

  /**
   * The work after a write of `executionId` committed, then the named fault
   * point: a row this attempt wrote leaves its cursor cached; a row that
   * landed in a lost attempt drops the cache (its cursor was never seen here).
   */
  protected afterCommit(executionId: string, outcome: Outcome<RowText | null>, point: FaultPoint): void {
    if (outcome.kind === 'landed') this.cursors.drop(executionId);
    this.committed(outcome.kind === 'written' ? outcome.rt : null);
    this.fault(point);
  }

  /**
   * The codec cursor of row `seq` (with id `id`) of an execution, from the
   * cache or decoded from its chain: `chain` reads inside the caller's
   * transaction, synchronously (SQLite) or not (Postgres).
   */
  protected cursorAt(executionId: string, seq: number, id: string, chain: ChainReader<ChainRow[]>): CodecCursor;
  protected cursorAt(
    executionId: string,
    seq: number,
    id: string,
    chain: ChainReader<Promise<ChainRow[]>>,
  ): MaybePromise<CodecCursor>;
  protected cursorAt(
    executionId: string,
    seq: number,
    id: string,
    chain: ChainReader<MaybePromise<ChainRow[]>>,
  ): MaybePromise<CodecCursor> {
    const cached = this.cursors.get(executionId, seq, id);
    if (cached) return cached;
    return then(chain(seq, seq), ([last]) => then(chain(chainBase(last), seq), (rows) => decodeChain(rows).cursor));
  }

  /** Rows base..seq of an execution, read outside any write (with the adapter's retries). */
  protected abstract readChain(executionId: string, base: number, seq: number): Promise<ChainRow[]>;

  async readState(row: Checkpoint): Promise<State> {
    this.assertOpen();
    const cached = this.cursors.peek(row.executionId, row.seq, row.id);
    if (cached) return stateOfCursor(cached);
    const { state, cursor } = decodeChain(await this.readChain(row.executionId, chainBase(row), row.seq));
    this.cursors.offer(row.executionId, cursor);
    return state;
  }

  abstract applyResults(results: { synced?: string[]; quarantined?: Record<string, string> }): Promise<void>;

  markSynced(ids: string[]): Promise<void> {
    return this.applyResults({ synced: ids });
  }

  markQuarantined(reasons: Record<string, string>): Promise<void> {
    return this.applyResults({ quarantined: reasons });
  }

  onWrite(listener: () => void): () => void {
    return this.signal.on(listener);
  }
}

/** Per-store cache of the newest row's codec cursor per execution (bounded LRU). */
export class CursorCache {
  private readonly map = new Map<string, CodecCursor>();
  constructor(private readonly max = 512) {}
  get(executionId: string, seq: number, id: string | null): CodecCursor | null {
    const c = this.map.get(executionId);
    if (!c || c.seq !== seq || c.id !== id) return null;
    this.map.delete(executionId);
    this.map.set(executionId, c);
    return c;
  }
  set(executionId: string, cursor: CodecCursor): void {
    this.map.delete(executionId);
    this.map.set(executionId, cursor);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
  drop(executionId: string): void {
    this.map.delete(executionId);
  }
  /** The cached cursor of an execution's newest row written or read here, whatever its seq. */
  newest(executionId: string): CodecCursor | null {
    return this.map.get(executionId) ?? null;
  }
  /** The cursor of exactly this row, if cached (no LRU touch). */
  peek(executionId: string, seq: number, id: string): CodecCursor | null {
    const c = this.map.get(executionId);
    return c && c.seq === seq && c.id === id ? c : null;
  }
  /** Remember a decoded cursor unless a newer row of the execution is already cached. */
  offer(executionId: string, cursor: CodecCursor): void {
    const c = this.map.get(executionId);
    if (!c || c.seq < cursor.seq) this.set(executionId, cursor);
  }
}

/** Listeners kicked after a committed write (the drain subscribes here). */
export class WriteSignal {
  private readonly listeners = new Set<() => void>();
  on(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  emit(): void {
    for (const fn of this.listeners) {
      try {
        fn();
      } catch {
        // a listener's failure never fails the write that already committed
      }
    }
  }
}
