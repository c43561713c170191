/**
 * The store contract: what the runtime and the drain need from a durable
 * store. Two adapters implement it (`SqliteCheckpointer`,
 * `PostgresCheckpointer`); one conformance suite (`runStoreSuite` in
 * `waymark/testing`, client/testing/store/) holds both to every guarantee below.
 *
 * Glossary
 * - execution: one run, keyed by `executionId`; its rows are ordered by `seq`
 *   (0, 1, 2… assigned inside the write transaction; never by a clock).
 * - checkpoint: one boundary row (see shared/rows.ts).
 * - pause: an `interrupted` checkpoint plus the execution's one pending row.
 * - outbox: one event per change that must reach the plane, appended in the
 *   same transaction as the change; `synced` once acked or quarantined; a
 *   row restored from a plane gets one already `synced` (the plane holds it).
 * - lease: who may write an execution now. One row per execution: a holder
 *   (writer id + per-process instance + nonce), an expiry and an epoch that
 *   grows by one at every acquisition. A runner acquires it before its first
 *   write; each of its writes names the lease and is fenced by it: the write
 *   checks holder and epoch in its own transaction (and renews the expiry), so
 *   a runner whose lease another runner took writes nothing (`LeaseLost`).
 *   Expiry is judged by the store's clock (the database server's for Postgres).
 */
import type { Json } from '../shared/json.js';
import type { DivergedExecution } from './store/import.js';
import type { State } from '../shared/codec.js';
import type { OutboxStats } from '../support/outbox-stats.js';
import type {
  Checkpoint,
  Decision,
  IdempotencyEntry,
  OutboxEvent,
  OutboxKind,
  PendingInterrupt,
  Status,
  Step,
} from '../shared/rows.js';
import type { DecisionState } from '../shared/protocol.js';
import type { UsageTotal } from '../shared/usage.js';

/** What a writer supplies for a checkpoint; the store assigns `seq`, `writerId` and encodes `state`. */
export interface CheckpointInput {
  /** UUIDv7; minted by the store when absent. Reusing one is an error. */
  id?: string;
  executionId: string;
  /**
   * The id of a row of this execution that this write follows (the newest row
   * the writer knows of), or null for the first row of a fresh run. When
   * given, the write is refused if that row is gone (`ExecutionGoneError`,
   * EXECUTION_GONE: the execution was deleted or pruned meanwhile) or, for
   * null, if the execution already has rows (EXECUTION_EXISTS). Absent: no
   * check. Not stored.
   */
  prevId?: string | null;
  nodeId: string;
  turn: number;
  step: Step;
  status: Status;
  agentPath: string;
  parentId?: string | null;
  /** The full logical state at this boundary; the store encodes it (full or delta). */
  state: State;
  nodeInput?: Json | null;
  nodeOutput?: Json | null;
  interruptReason?: string | null;
  interruptContext?: Json | null;
  createdAt?: string;
}

/** Options of `list`: a cursor, a step filter, a page size and an order. */
export interface ListOptions {
  /** Only rows with seq > afterSeq (ascending cursor). */
  afterSeq?: number;
  /** Only rows with seq < beforeSeq (descending cursor). */
  beforeSeq?: number;
  /** Only rows of this step (a run's pauses: 'hitl_pause'); the database filters the run's rows, only these are returned. */
  step?: Step;
  /** Page size; absent means every matching row. */
  limit?: number;
  /** Row order by seq (default `'asc'`). */
  order?: 'asc' | 'desc';
}

/** A run's state in a store, derived from its newest row and its open pause. */
export type ExecutionState = 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';

/** Asks for an execution's lease: who, and for how long. */
export interface LeaseRequest {
  holder: string;
  /** Milliseconds until the lease expires unless renewed (by `renewLease`, and by fenced writes; see `WriteOptions.lease`). */
  ttlMs: number;
}

/** A held lease: what a runner passes to each write so the store can fence it. */
export interface Lease extends LeaseRequest {
  executionId: string;
  /** Grows by one at every acquisition of this execution's lease. */
  epoch: number;
  /** When it expires unless renewed, by the store's clock (ISO 8601). */
  expiresAt: string;
}

/** An execution's lease as stored: `holder` null once released. */
export interface LeaseInfo {
  executionId: string;
  holder: string | null;
  epoch: number;
  expiresAt: string | null;
  /** Held and not expired, by the store's clock at the time of the read. */
  live: boolean;
}

/** Options of a fenced write. */
/** `putIdempotent`'s options: the writer's lease, and the checkpoint it holds the run by. */
export interface IdempotentWriteOptions extends WriteOptions {
  /** A checkpoint of the run the writer wrote (its tool call's row): with a lease no longer the writer's, the entry is kept only while this row is the run's. */
  anchorId?: string;
}

/** Options of a write (`put`, `recordInterrupt`). */
export interface WriteOptions {
  /**
   * The writer's lease. The write commits only while the lease is still this
   * one (same holder and epoch), and throws `LeaseLost` writing nothing
   * otherwise. It also renews the lease to `ttlMs` from now once a third of
   * `ttlMs` has passed since this store last renewed it (acquired, renewed,
   * or renewed by a write); before that it only checks it, so a run writing
   * many steps renews about three times a ttl, not at every step, and its
   * lease is never less than two thirds of `ttlMs` from expiring when it
   * writes. A run-end marker releases it in the same transaction. Absent:
   * the write is not fenced.
   */
  lease?: Lease;
}

/** One execution as `listExecutions` lists it: its state and its newest row. */
export interface ExecutionSummary {
  executionId: string;
  /** `running` means no marker and no pause: still running, or crashed. */
  state: ExecutionState;
  rowCount: number;
  lastSeq: number;
  lastNodeId: string;
  lastStep: Step;
  lastStatus: Status;
  updatedAt: string;
  /** The execution's lease (null when none was ever taken). */
  lease: LeaseInfo | null;
}

/** What `getIdempotent` found: the recorded result (`hit`), or nothing. */
export type IdempotentLookup = { hit: true; result: Json | null } | { hit: false };

/** Options of `prune`. */
export interface PruneOptions {
  /** Finished runs whose end marker is older than this are deleted. */
  olderThan: Date;
  /** Also prune runs with events not yet acked by the plane (default: keep them). */
  includeUnsynced?: boolean;
}

/** How many runs and rows `prune` deleted, and the finished runs it kept unsynced. */
export interface PruneResult {
  executions: number;
  checkpoints: number;
  idempotency: number;
  /** Finished runs kept because some of their events have not reached the plane. */
  keptUnsynced: number;
}

/** How `deleteExecution` deletes: everywhere (the default: the plane hears of it), or this store's copy only. */
export interface DeleteOptions {
  /** Delete this store's copy only: nothing is queued for the plane, whose copy stays. Default false. */
  localOnly?: boolean;
}

/** How many rows `deleteExecution` deleted, by table. */
export interface DeleteResult {
  checkpoints: number;
  pending: number;
  idempotency: number;
}

/** Options of `fetchUnsynced`: how many events, and how many bytes of them, at the most (at least one is returned if any wait). */
export interface FetchUnsyncedOptions {
  /** The most events. */
  limit: number;
  /** The most bytes of payload. */
  maxBytes: number;
}

/** One event waiting in the outbox. */
export interface OutboxEntry {
  /** The event's dedupe id (a checkpoint event carries the checkpoint id). */
  id: string;
  kind: OutboxKind;
  executionId: string;
  bytes: number;
  createdAt: string;
  /** The event to send, or null when `problem` says why it cannot be built. */
  event: OutboxEvent | null;
  problem?: string;
}

export type { OutboxStats };

/** An outbox event set aside because the plane refused it, with the plane's reason. */
export interface QuarantinedEntry {
  id: string;
  kind: OutboxKind;
  executionId: string;
  reason: string;
  createdAt: string;
}

/** Everything a machine needs to continue a run: what restore writes. */
export interface RestoreBundle {
  checkpoints: Checkpoint[];
  pending: PendingInterrupt | null;
  idempotency: IdempotencyEntry[];
}

/** What `importRows` (a restore) wrote, skipped and withheld. */
export interface ImportResult {
  inserted: number;
  /** Rows already here (same id at the same execution and seq). */
  skipped: number;
  /**
   * Executions whose history here differs from the bundle's: the import of
   * each stopped at its first row that does not extend the local history
   * (see client/store/import.ts). Local rows are kept; nothing is grafted.
   */
  diverged: DivergedExecution[];
  /** Bundle rows of diverged executions that were not written. */
  withheld: number;
  pendingImported: boolean;
  /** Local pending rows removed because their checkpoint was no longer the execution's newest row. */
  stalePendingRemoved: { executionId: string; checkpointId: string }[];
  idempotencyInserted: number;
}

/** What a won `claimInterrupt` took and wrote: the pause, and the checkpoint and lease of the same transaction. */
export interface ClaimResult {
  pending: PendingInterrupt;
  /** The checkpoint written in the same transaction as the claim, if one was given. */
  checkpoint: Checkpoint | null;
  /** The lease acquired in the claim's transaction, when one was asked for. */
  lease: Lease | null;
}

/** Options of `cancel`. */
export interface CancelOptions {
  /** Why (shown in the marker's `nodeOutput.reason`, the CLI and the inspector); at most LIMITS.reasonLength. */
  reason?: string | null;
}

/** What `cancel` did: the marker, the pause it closed, and whether the run was cancelled before. */
export interface CancelResult {
  /** The `run_end` marker with status `cancelled`: written now, or the earlier one when `alreadyCancelled`. */
  checkpoint: Checkpoint;
  /** The open pause this cancel closed (its pending row removed in the same transaction), if the run was paused. */
  closedPause: PendingInterrupt | null;
  /** The run was cancelled before: nothing was written (a retried cancel is harmless). */
  alreadyCancelled: boolean;
}

/** Names one pause: its execution and the id of its `interrupted` checkpoint. */
export interface PauseRef {
  executionId: string;
  checkpointId: string;
}

/** Called before a local claim of a pause; throws to refuse it (a connected replica's plane claim). `decisionId`: the decision the claim applies. */
export type ClaimGuard = (pause: {
  executionId: string;
  checkpointId: string;
  decisionId?: string;
  holder?: string;
  ttlMs?: number;
}) => Promise<void>;

/** Options of `claimInterrupt`. */
export interface ClaimOptions {
  /** A checkpoint to write in the claim's transaction (the resumed run's first row). */
  next?: CheckpointInput;
  /** A lease to acquire in the claim's transaction (a `LeaseRequest`), or a held one to fence it with (a `Lease`). */
  lease?: LeaseRequest | Lease;
  /** The decision this claim applies (a decision worker's resume): recorded on the local claim and in its `interrupt_claimed` event. */
  decisionId?: string;
}

/**
 * A decision as a store holds it, with its state derived from the pause's
 * local claim, the open pause and the run's rows (client/store/decisions.ts):
 * never `claimed` here (a plane-side state).
 */
export interface StoredDecision extends Decision {
  state: DecisionState;
  /** The writer whose local claim took the pause (with this decision: it applied it), when claimed. */
  appliedBy: string | null;
  appliedAt: string | null;
  /** This store holds the pause's row (false: a decision from the plane for a run restore may bring). */
  held: boolean;
  /** Local order of recording (the listing's cursor). */
  seq: number;
}

/**
 * What `recordDecision` did: recorded (`replaced`: the local decision the
 * plane's first one took the place of), or the pause already had a decision
 * (`existing`, kept).
 */
export type RecordDecisionResult = { recorded: true; replaced?: Decision } | { recorded: false; existing: Decision };

/** Options of `listDecisions`: a state or execution filter, a cursor and a page size. */
export interface ListDecisionsOptions {
  /** Only decisions in this derived state. */
  state?: DecisionState;
  /** Only the decisions of this execution (through its index: a run page reads its own decisions, not its rows). */
  executionId?: string;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /** Page size; absent means every matching decision. */
  limit?: number;
}

/** A page of decisions in recording order. */
export interface DecisionPage {
  items: StoredDecision[];
  /** Null once the listing is done. */
  nextCursor: string | null;
}

/**
 * Called before `resume` (without a value) takes over a run that is not
 * paused; throws to refuse it (a connected replica: the plane arbitrates
 * takeovers across machines). `seq` is the newest row here.
 */
export type TakeoverGuard = (run: {
  executionId: string;
  seq: number;
  holder?: string;
  ttlMs?: number;
}) => Promise<void>;

/** The plane's say over a store's local claims and takeovers, while a replica is connected. */
export interface PlaneGuard {
  /** Claim the pause at the plane before it is claimed here. */
  claim: ClaimGuard;
  /** Take a non-paused run over at the plane before it is resumed here. */
  takeover: TakeoverGuard;
  /**
   * Renew the run's hold at the plane for the runner holding `lease` (its
   * heartbeat), or give it up (`release`: only once this store's rows of the
   * run reached the plane, so a taker never starts from a copy without them).
   * Throws LeaseLost, RunCancelled or WRITER_COPY when the plane says another
   * owns the run, it was cancelled, or another store instance holds it;
   * resolves when the plane cannot be reached within `timeoutMs` (a runner
   * goes on offline, unless the replica's strict mode says otherwise).
   * With `effectKey` (an `idempotent` effect about to start) the plane's
   * record of that effect, when it holds one, is imported into this store
   * first, and the answer says so (`recorded: true`). A renewal the plane
   * answered gives the run's owner epoch there (`epoch`; null otherwise).
   */
  renew?: (
    lease: Lease,
    options?: { release?: boolean; timeoutMs?: number; effectKey?: string },
  ) => Promise<PlaneRenewal | undefined>;
  /**
   * Send what this store holds unsent to the plane now, waiting up to
   * `timeoutMs`: an `idempotent` effect's record reaches the plane before the
   * effect returns, so a machine that takes the run over after this one died
   * knows the effect ran. Never throws (an unreachable plane is waited for no longer).
   */
  recorded?: (options: { timeoutMs: number }) => Promise<void>;
  /**
   * Take the plane's branch of a run in place of this store's own, keeping
   * its recorded effects (Replica.adoptPlaneBranch): `recoverRuns` calls it
   * when a takeover is refused RUN_TAKEN_OVER with `free` (this copy ran on
   * after losing the run, and nobody holds it now). False: nothing changed
   * (a runner here holds the run, or something is unsent); a throw: the
   * plane's copy could not be had, and nothing changed either.
   */
  adoptPlaneBranch?: (executionId: string) => Promise<boolean>;
  /**
   * Take the plane's branch of every run this store lost at the plane that
   * nobody holds now, finished here or not (Replica.adoptLostRuns): called by
   * `recoverRuns` before each pass, for runs of the agents it was given
   * (`serves`). Returns the ids adopted.
   */
  adoptLostRuns?: (serves?: (agentPath: string) => boolean) => Promise<string[]>;
}

/** What a renewal at the plane said: whether it held the asked effect's record, and the owner epoch it answered with. */
export interface PlaneRenewal {
  recorded: boolean;
  epoch: number | null;
}

/**
 * Where a store holds the plane guard of its connected replica. The runtime
 * reads `current` before every local claim and takeover; `connectPlane`
 * installs a guard and its replica's `stop()` removes it; nothing else in the library sets it.
 */
export class PlaneGuardSlot {
  #current: PlaneGuard | null = null;

  /** The installed guard, or null (no replica connected: local claims only). */
  get current(): PlaneGuard | null {
    return this.#current;
  }

  /**
   * Install `guard` (replacing any other) and return the function that removes
   * it again; that function does nothing once another guard replaced it.
   */
  install(guard: PlaneGuard): () => void {
    this.#current = guard;
    return () => {
      if (this.#current === guard) this.#current = null;
    };
  }
}

/** A page of open pauses (`listPendingInterrupts`), ordered by execution id. */
export interface PendingListOptions {
  /** Start after this execution id: the last one of the previous page (default: from the first). */
  afterExecutionId?: string;
  /** At most this many (default: every one). */
  limit?: number;
}

/** A page of executions (`listExecutions`), ordered by id. */
export interface ExecutionListOptions {
  /** Start after this execution id: the last one of the previous page (default: from the first). */
  afterExecutionId?: string;
  /** At most this many (default: every one). */
  limit?: number;
  /** Only runs in this state (default: every state). */
  state?: ExecutionState;
}

/** A page of quarantined outbox events (`listQuarantined`), in the order they were queued. */
export interface QuarantineListOptions {
  /** Start after this event id: the last one of the previous page (default: from the first). */
  afterId?: string;
  /** At most this many (default: every one). */
  limit?: number;
  /** Only the events with these ids (a checkpoint's event has the checkpoint's id), read by id, not by scanning the quarantine. */
  ids?: readonly string[];
}

/** The durable store contract. All methods are async; every write is one transaction. */
export interface Checkpointer {
  /** The plane guard a connected replica installed (see `PlaneGuardSlot`); a store makes its own empty slot. */
  readonly planeGuard: PlaneGuardSlot;
  /** The store's stable writer id (persisted on first setup unless given). */
  readonly writerId: string;
  /**
   * This store's instance at the plane: a copy of its file under the same
   * writer id is another instance, and the plane grants a run to one instance
   * at a time (WRITER_COPY). Absent: the plane cannot tell copies apart.
   */
  readonly instanceId?: string;
  /** Create or migrate the schema. Idempotent; safe when several processes run it at once. */
  setup(): Promise<void>;
  /**
   * Write a checkpoint with the next `seq` of its execution, and its outbox
   * event, in one transaction. A reused id throws `DuplicateIdError` and leaves
   * the stored row unchanged; an invalid row throws `InvalidRowError` and writes nothing;
   * a `prevId` that is gone throws `ExecutionGoneError` and writes nothing (so a
   * run going on while its execution is deleted never starts it again at seq 0).
   */
  put(input: CheckpointInput, options?: WriteOptions): Promise<Checkpoint>;
  /**
   * Write an `interrupted` checkpoint and the execution's pending row (and both
   * outbox events) in one transaction: both or neither. A second open pause
   * for the same execution throws `PauseExistsError` on every backend.
   * Fenced by `options.lease` like `put`; a recorded pause releases the lease.
   */
  recordInterrupt(
    input: CheckpointInput,
    pause: { reason: string; context: Json | null },
    options?: WriteOptions,
  ): Promise<{ checkpoint: Checkpoint; pending: PendingInterrupt }>;
  /**
   * Atomically take one named pause: the execution's pending row, only while
   * it is still the pause of checkpoint `pause.checkpointId` (the one the
   * caller read). Under any race (threads, processes, machines sharing the
   * store) exactly one caller gets it; the rest get null. A caller that read
   * an older pause gets null even when a later pause is open: a stale resumer
   * never takes (or answers) a pause it was not shown. `next`, when given, is
   * written in the same transaction, so a claimed resume is never lost to a crash.
   * `lease`, when given, is acquired in the same transaction (a `LeaseRequest`)
   * or fenced (a held `Lease`): a live lease of another holder throws
   * `RunInProgress`, a lost one `LeaseLost`; either way nothing is claimed.
   */
  claimInterrupt(pause: PauseRef, options?: ClaimOptions): Promise<ClaimResult | null>;
  /**
   * Record a decision for one pause, in one transaction. At most one per pause:
   * a second (any id) is not recorded and the first is returned as `existing`.
   * `source: 'local'` needs the pause open here (PAUSE_NOT_FOUND, PAUSE_CLOSED
   * otherwise; a local decision naming another run's checkpoint or decision id
   * is PAUSE_NOT_FOUND, never answered with that run's decision) and queues a
   * `decision_recorded` event; `source: 'plane'` (from
   * the plane's feed or a restore) is stored even for a run this store does not
   * hold, and queues nothing. The plane decides which decision of a pause is
   * first: a plane decision for an open pause whose decision here is another,
   * local one not applied (recorded before the plane's reached this store)
   * takes its place (`replaced`; that one's event, if sent, the plane drops).
   * An invalid decision: INVALID_DECISION naming every problem. Nothing is
   * written when refused.
   */
  recordDecision(decision: Decision): Promise<RecordDecisionResult>;
  /** Decisions in recording order with their derived state, paged by `cursor`. */
  listDecisions(options?: ListDecisionsOptions): Promise<DecisionPage>;
  /** The decision recorded for one pause, with its derived state, or null. */
  getDecision(executionId: string, checkpointId: string): Promise<StoredDecision | null>;
  /**
   * Forget the decisions of `executionId` whose pause row this store does not
   * hold (decisions from the plane for a run restore may bring), except the one
   * for `keepCheckpointId`: the replica calls it once the plane says those
   * pauses are closed. A decision whose pause row is held here is never
   * removed (its state is derived from that row). Only decisions with
   * `seq <= upToSeq` are removed: pass `decisionSeq()` read BEFORE asking the
   * plane, so a decision recorded while the plane's answer was on its way (for
   * a pause that opened after it was served) is never removed on that stale
   * answer. Queues nothing. Resolves with how many were removed.
   */
  forgetUnheldDecisions(executionId: string, keepCheckpointId: string | null, upToSeq: number): Promise<number>;
  /**
   * The newest decision's `seq` here (0 when there is none): the bound a
   * caller reads before asking the plane, then passes to forgetUnheldDecisions.
   * A decision recorded after this resolves always gets a higher seq: a seq
   * is never given twice, even once the newest decision was deleted (SQLite
   * AUTOINCREMENT, a Postgres sequence), and on Postgres the read waits for
   * recordings in flight (one that took a lower seq commits before it).
   */
  decisionSeq(): Promise<number>;
  /**
   * Take the execution's lease: free (never taken, released) or expired by the
   * store's clock. The epoch grows by one. Throws `RunInProgress` (details:
   * holder, expiresAt) when another acquisition holds it live, whoever holds
   * it: one holder may run an execution only once at a time.
   */
  acquireLease(executionId: string, request: LeaseRequest): Promise<Lease>;
  /** Extend a held lease to `ttlMs` from now; `LeaseLost` when another acquisition took it. */
  renewLease(lease: Lease): Promise<Lease>;
  /** Give a held lease up (holder cleared, epoch kept); a no-op when it was already lost. */
  releaseLease(lease: Lease): Promise<void>;
  /** The execution's lease as stored (holder, epoch, expiry), or null when it was never taken. */
  getLease(executionId: string): Promise<LeaseInfo | null>;
  /**
   * Cancel a run, in one transaction: write a `run_end` marker with status
   * `cancelled` (next seq, the newest row's state), remove an open pause's
   * pending row (an `interrupt_closed` event tells the plane), and clear the
   * lease holder. A runner holding the lease then has every fenced write and
   * renewal refused with `RunCancelled` (it writes nothing more), and a later
   * `acquireLease` or lease-taking claim is refused with `RunCancelled`.
   * A run already cancelled: nothing written, `alreadyCancelled`. A completed
   * run: `AlreadyFinished`; no rows: EXECUTION_NOT_FOUND; bad options:
   * INVALID_CANCEL naming every problem; nothing written in each case. A
   * failed run may be cancelled (it becomes final).
   */
  cancel(executionId: string, options?: CancelOptions): Promise<CancelResult>;
  /** The execution's open pause, or null. */
  getPendingInterrupt(executionId: string): Promise<PendingInterrupt | null>;
  /** Open pauses ordered by executionId; page with `afterExecutionId`. */
  listPendingInterrupts(options?: PendingListOptions): Promise<PendingInterrupt[]>;
  /** The row with the highest seq, or null. */
  latest(executionId: string): Promise<Checkpoint | null>;
  /** One row by its checkpoint id, or null. */
  getById(id: string): Promise<Checkpoint | null>;
  /** Rows of one execution ordered by seq, with cursors; no fixed limit. */
  list(executionId: string, options?: ListOptions): Promise<Checkpoint[]>;
  /**
   * Model usage of each of these runs: `sumUsage` (shared/usage.ts) over all
   * of its rows, the same total as summing `list`'s rows. One statement for
   * the whole list, whatever the runs' lengths: only the `nodeOutput.usage`
   * arrays of the rows that carry one leave the database (a run list shows
   * usage per run without reading every row). Every id asked for has an entry;
   * a run without usage, or not in this store, has a zero total.
   */
  usageTotals(executionIds: readonly string[]): Promise<Map<string, UsageTotal>>;
  /** The full state of a row, decoded from its snapshot chain. */
  readState(row: Checkpoint): Promise<State>;
  /** Executions ordered by id, each with its lease; page with `afterExecutionId`; `state` keeps only runs in that state. */
  listExecutions(options?: ExecutionListOptions): Promise<ExecutionSummary[]>;
  /** A stored `null` is a hit. */
  getIdempotent(executionId: string, key: string): Promise<IdempotentLookup>;
  /**
   * Insert if absent; the first stored result wins and is returned. An entry
   * whose event is over the row limit (`LIMITS.rowBytes`, as sent) is refused
   * (INVALID_ROW), as a checkpoint is: a plane could not hold it, and a machine
   * that restored the run would not know the effect ran. With `options.lease`
   * the write is checked against it: a holder taken over, or whose run was
   * cancelled, still records the entry (its effect happened: whoever runs the
   * run next must find it) and then throws LeaseLost, or RunCancelled, but
   * only while `options.anchorId` (a checkpoint the holder wrote) is still the
   * run's. A run deleted, and perhaps started again under its id, has lost
   * that row: nothing is recorded (LeaseLost), so no entry outlives the run to
   * be found by a new one.
   */
  putIdempotent(
    executionId: string,
    key: string,
    result: Json | null,
    options?: IdempotentWriteOptions,
  ): Promise<IdempotencyEntry>;
  /** Every recorded idempotent effect of one execution. */
  listIdempotent(executionId: string): Promise<IdempotencyEntry[]>;
  /**
   * Delete every row of one execution, and queue the deletion for the plane
   * (the plane then deletes its copy, every machine's rows of the run). With
   * `localOnly`, only this store's copy goes: the deletion is not queued, the
   * run's events not yet sent are dropped with it, and the plane's copy stays
   * (`restoreFromPlane` takes it back: how a machine whose copy diverged
   * takes the plane's branch).
   */
  deleteExecution(executionId: string, options?: DeleteOptions): Promise<DeleteResult>;
  /**
   * Delete finished runs (completed, failed or cancelled marker) older than the cutoff.
   * Never a paused run's rows, pending row or idempotency entries; never a
   * run without a marker.
   */
  prune(options: PruneOptions): Promise<PruneResult>;

  /** Oldest unsynced outbox events, bounded by count and bytes (at least one if any wait). */
  fetchUnsynced(options: FetchUnsyncedOptions): Promise<OutboxEntry[]>;
  /** Apply the plane's answers in one transaction: acked ids synced, refused ids quarantined. */
  applyResults(results: { synced?: string[]; quarantined?: Record<string, string> }): Promise<void>;
  /** Mark these outbox events acknowledged by the plane (`applyResults` with `synced` only). */
  markSynced(ids: string[]): Promise<void>;
  /** Set these outbox events aside, each with the plane's reason (`applyResults` with `quarantined` only). */
  markQuarantined(reasons: Record<string, string>): Promise<void>;
  /** Counts and sizes of the outbox: events waiting, quarantined and the oldest waiting. */
  outboxStats(): Promise<OutboxStats>;
  /** Quarantined outbox events in the order they were queued; page with `afterId`. */
  listQuarantined(options?: QuarantineListOptions): Promise<QuarantinedEntry[]>;
  /**
   * Write a restore bundle in one transaction, marked synced (never
   * re-queued). Inserts only rows that extend the local history; an execution
   * whose local history differs is reported in `diverged` and keeps its local
   * rows. A local pending row whose checkpoint is no longer the newest row is
   * removed (reported, nothing queued); the bundle's pause is written only if
   * its checkpoint is the newest row and no pause is open. Idempotency entries
   * are inserted if missing (an effect that ran on either branch stays recorded).
   */
  importRows(bundle: RestoreBundle): Promise<ImportResult>;
  /**
   * Whether a plane holds, or may hold, some of this run's checkpoints: one
   * whose outbox event a plane acknowledged (not quarantined), one restored
   * from a plane, or the run is named by the batch a drain last posted
   * (`noteSending`: the plane may have committed it though no answer came).
   * Another machine may then resume the run through that plane, so the
   * runtime refuses to resume it from this store while no plane is connected.
   */
  heldByPlane(executionId: string): Promise<boolean>;
  /** Before a drain posts a batch: the runs it names (replacing the previous batch's), for `heldByPlane`. */
  noteSending(executionIds: readonly string[]): Promise<void>;
  /** Small persistent notes kept with the store (the drain records its last error and ack here). */
  getMeta(key: string): Promise<string | null>;
  /** Set one persistent note (see `getMeta`), replacing its value. */
  setMeta(key: string, value: string): Promise<void>;
  /** Called after every committed write that queued an outbox event. */
  onWrite(listener: () => void): () => void;
  /** Close the store: queued writes commit first; a client the caller passed in (Postgres `sql`) stays open. */
  close(): Promise<void>;
}
