/**
 * The HTTP protocol between a store's drain and the plane. Rows inside an
 * ingest body are validated one by one (a bad row is refused, not the batch),
 * so the envelope types them as unknown.
 */
import { z } from 'zod';
import {
  Checkpoint,
  Decision,
  ExecutionId,
  IdempotencyEntry,
  IsoTime,
  JsonObject,
  PendingInterrupt,
  storable,
  Uuidv7,
  WriterId,
} from './rows.js';
import { LIMITS } from './limits.js';

/** The protocol version an ingest request carries (`protocol`); the plane refuses another. */
export const PROTOCOL_VERSION = 1;

/** What a writer still holds unsent: rows, bytes and the oldest waiting event's time. */
export const Backlog = z
  .object({
    rows: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    bytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    oldestPendingAt: IsoTime.nullable(),
  })
  .strict();
export type Backlog = z.infer<typeof Backlog>;

/** POST /v1/ingest: one batch of a writer's outbox events (validated row by row by the plane). */
export const IngestRequest = z
  .object({
    protocol: z.literal(PROTOCOL_VERSION),
    writerId: WriterId,
    /** What the writer still holds after this batch (shown per writer on the plane). */
    backlog: Backlog.optional(),
    rows: z.array(z.unknown()).min(1),
  })
  .strict();
export type IngestRequest = z.infer<typeof IngestRequest>;

/**
 * Why a row was refused. Payload reasons are quarantined on both sides.
 * `taken_over`: another writer took the run over at the plane (this writer's
 * lease had expired by the plane's clock); this writer's later rows of it are refused.
 */
export const RejectCode = z.enum(['invalid', 'too_large', 'conflict', 'seq_conflict', 'taken_over']);
export type RejectCode = z.infer<typeof RejectCode>;

/** What the plane did with one ingested row: accepted, a duplicate of one it holds, or rejected with a code and reason. */
export const RowResult = z.discriminatedUnion('status', [
  z.object({ id: z.string().nullable(), status: z.literal('accepted') }),
  z.object({ id: z.string().nullable(), status: z.literal('duplicate') }),
  z.object({
    id: z.string().nullable(),
    status: z.literal('rejected'),
    code: RejectCode,
    reason: z.string(),
    /** With `taken_over`: the run was cancelled (its owner is nobody now), not taken by another writer. */
    cancelled: z.boolean().optional(),
  }),
]);
export type RowResult = z.infer<typeof RowResult>;

/** The answer to an ingest: each row's result, in the batch's order, and the counts. */
export const IngestResponse = z.object({
  results: z.array(RowResult),
  accepted: z.number().int(),
  duplicate: z.number().int(),
  rejected: z.number().int(),
});
export type IngestResponse = z.infer<typeof IngestResponse>;

/**
 * Who asks to own a run at the plane (a claim, a takeover, a renewal): the
 * acquisition's lease holder (unique per acquisition), the store instance (a
 * copy of a store file is another instance under the same writer id), and how
 * long the ownership lasts without a renewal.
 */
const OwnerFields = {
  /** The lease holder of this acquisition (`<writer>#<process>/<n>`). Absent from older clients: the writer id stands for it. */
  holder: z.string().min(1).max(512).optional(),
  /** The store instance (a copied store file gets a new one on open): two instances under one writer id are refused (WRITER_COPY). */
  instance: z.string().min(1).max(128).optional(),
  /** How long the plane keeps this writer the owner without a renewal, ms. Default: the plane's takeover delay. */
  ttlMs: z
    .number()
    .int()
    .min(1)
    .max(2 ** 31)
    .optional(),
};

/** POST /v1/executions/:id/claim: claim a run's open pause at the plane (one claimant wins). */
export const ClaimRequest = z
  .object({
    checkpointId: Uuidv7,
    writerId: WriterId,
    /** The decision this claim applies (a decision worker's resume); recorded on the claim, so the decision shows applied. */
    decisionId: Uuidv7.optional(),
    ...OwnerFields,
  })
  .strict();
export type ClaimRequest = z.infer<typeof ClaimRequest>;
/** The answer to a claim the writer won. */
export const ClaimResponse = z.object({
  executionId: ExecutionId,
  checkpointId: Uuidv7,
  writerId: WriterId,
  claimedAt: IsoTime,
  /** The run's owner epoch this claim made (the fencing token: it grows at every change of owner). */
  epoch: z.number().int().optional(),
});
export type ClaimResponse = z.infer<typeof ClaimResponse>;

/** POST /v1/executions/:id/takeover: take over a run that is not paused, whose copy here ends at `seq`. */
export const TakeoverRequest = z
  .object({
    writerId: WriterId,
    seq: z.number().int().nonnegative(),
    /** The id of this copy's newest row (at `seq`): a copy whose newest row is the plane's is the plane's copy, whoever wrote it. */
    lastId: Uuidv7.optional(),
    ...OwnerFields,
    /**
     * The run's idempotency keys this copy holds: a plane holding one more
     * refuses the takeover (STALE_COPY, details.missingKeys), so an effect it
     * recorded is never run again. Absent: not checked (an older client, or a
     * run with more keys than a request carries, whose taker restored the
     * plane's copy first).
     */
    idempotencyKeys: z.array(z.string().min(1).max(LIMITS.idempotencyKeyLength)).max(LIMITS.takeoverKeys).optional(),
  })
  .strict();
export type TakeoverRequest = z.infer<typeof TakeoverRequest>;
/** The answer to a takeover the writer won. */
export const TakeoverResponse = z.object({
  executionId: ExecutionId,
  writerId: WriterId,
  /** The run's newest seq on the plane at the takeover. */
  fromSeq: z.number().int(),
  /** The writer it was taken from (null: the run was already this writer's). */
  takenFrom: z.string().nullable(),
  /** The run's owner epoch this takeover made. */
  epoch: z.number().int().optional(),
});

/**
 * POST /v1/executions/:id/lease: the owner renews its hold on a run while it
 * works (a heartbeat), or gives it up (`release`). Refused LEASE_LOST once
 * another holder owns the run, RUN_CANCELLED once it was cancelled.
 */
export const LeaseRequest = z
  .object({
    writerId: WriterId,
    holder: z.string().min(1).max(512),
    instance: OwnerFields.instance,
    ttlMs: z
      .number()
      .int()
      .min(1)
      .max(2 ** 31),
    release: z.boolean().optional(),
    /**
     * The key of the `idempotent` effect the holder is about to start: the
     * plane answers with its record of that effect when it holds one (a runner
     * that lost the run recorded it after this holder's takeover), so the
     * holder returns that result instead of running the effect again.
     */
    effectKey: z.string().min(1).max(LIMITS.idempotencyKeyLength).optional(),
  })
  .strict();
export type LeaseRequest = z.infer<typeof LeaseRequest>;
/** The answer to a lease renewal or release. */
export const LeaseResponse = z.object({
  executionId: ExecutionId,
  /** The owner epoch the holder holds (null: released, or nothing to hold). */
  epoch: z.number().int().nullable(),
  expiresAt: IsoTime.nullable(),
  released: z.boolean(),
  /** The plane's record of the request's `effectKey` (null: none; absent: not asked). A plane without it refuses `effectKey` (400), and the client asks again without it. */
  recorded: IdempotencyEntry.nullable().optional(),
});
export type LeaseResponse = z.infer<typeof LeaseResponse>;

/**
 * The reason a body gives (a cancel's, a run request's), as the plane records it: trimmed, and a blank one (or
 * none) is no reason (null).
 */
export const givenReason = (reason: string | undefined): string | null => reason?.trim() || null;

/** POST /v1/executions/:id/cancel: cancel a run the plane holds (the cancel scope). */
export const CancelRequest = z
  .object({
    reason: storable(LIMITS.reasonLength).optional(),
  })
  .strict();
export type CancelRequest = z.infer<typeof CancelRequest>;
/** The answer to a cancel: the plane's cancel marker, and what it closed and took. */
export const CancelResponse = z.object({
  executionId: ExecutionId,
  /** The cancel marker's id and seq on the plane. */
  checkpointId: Uuidv7,
  seq: z.number().int(),
  alreadyCancelled: z.boolean(),
  /** The pause the cancel closed, if the run was paused. */
  closedPause: z.string().nullable(),
  /** The owner the run was taken from (null: nobody held it). */
  takenFrom: z.string().nullable(),
});
export type CancelResponse = z.infer<typeof CancelResponse>;
export type TakeoverResponse = z.infer<typeof TakeoverResponse>;

/** GET /v1/whoami: what the presented key is (a cheap authenticated call to check a connection). */
export const WhoAmI = z.object({
  project: z.string(),
  keyId: z.string(),
  scopes: z.array(z.string()),
  serverTime: IsoTime,
});
export type WhoAmI = z.infer<typeof WhoAmI>;

/** A run's status: running, paused, or ended (completed, failed, cancelled). */
export const ExecutionStatus = z.enum(['running', 'paused', 'completed', 'failed', 'cancelled']);
/** What a run is shown as (support/run-words.ts `runState` says which): its status, or `stale`. */
export const RunState = z.enum(['running', 'stale', 'paused', 'completed', 'failed', 'cancelled']);
export type RunState = z.infer<typeof RunState>;
/** One run as the plane's read API lists it (GET /v1/executions). */
export const ExecutionView = z.object({
  executionId: ExecutionId,
  status: ExecutionStatus,
  /**
   * What the inspector shows the run as: its `status`, but `stale` for a running run whose holder's hold
   * expired without an end (its runner crashed or stalled; recoverable) and `paused` for a LangGraph thread
   * waiting at `interrupt()` (its status says running: a thread never ends with a marker).
   */
  state: RunState,
  rowCount: z.number().int(),
  lastSeq: z.number().int(),
  lastNodeId: z.string().nullable(),
  lastStep: z.string().nullable(),
  /** The agent path of the run's first row (the run's top agent); null until that row arrives. */
  agent: z.string().nullable(),
  writerId: z.string().nullable(),
  /** False when the plane refused a row of this execution, or a seq below its newest never arrived: its copy has holes (see `HoleView`). */
  complete: z.boolean(),
  /** Rows the plane refused (holes of `HoleView` code other than `missing`); seqs never received make `complete` false without counting here. */
  holeCount: z.number().int(),
  createdAt: IsoTime,
  updatedAt: IsoTime,
  /** Why a failed run failed (from its run-end marker); null otherwise. */
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  /** The run's first row's time by its writer's clock (null while seq 0 is not on the plane). */
  startedAt: IsoTime.nullable(),
  /** The run's newest row's time by its writer's clock. */
  lastWriteAt: IsoTime.nullable(),
  /** Claim conflicts recorded for this run (two writers answered one pause). */
  claimConflicts: z.number().int(),
});
export type ExecutionView = z.infer<typeof ExecutionView>;

/** A seq of an execution whose row the plane refused, and why, or (code `missing`) the first of seqs that never arrived: the rows after it cannot be decoded from the plane's copy. */
export const HoleView = z.object({
  seq: z.number().int(),
  code: z.string(),
  reason: z.string(),
  writerId: z.string(),
  rowId: z.string().nullable(),
  at: IsoTime,
});
export type HoleView = z.infer<typeof HoleView>;

/** A page of a listing: its items, and the cursor of the next page (null: the last). */
export const Page = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), nextCursor: z.string().nullable() });

/** Two writers that both claimed one pause, as the plane recorded it (the operator's view of a split). */
export const ClaimConflictView = z.object({
  executionId: ExecutionId,
  checkpointId: z.string(),
  winnerWriterId: z.string(),
  loserWriterId: z.string(),
  source: z.string(),
  at: IsoTime,
  /** Idempotent side effects (keys) both writers recorded: each may have run the effect (charged twice). */
  sideEffects: z.array(z.string()),
});

/** One page of a restore: rows by seq up to `upTo`; the pause and idempotency entries come with the first page, read with `upTo`. */
export const RestorePage = z.object({
  executionId: ExecutionId,
  /** Rows of the snapshot: seq 0..upTo on a complete run. */
  totalRows: z.number().int(),
  /** The snapshot's newest seq, fixed by the first page: no page serves a row beyond it (-1: no rows). */
  upTo: z.number().int(),
  rows: z.array(Checkpoint),
  nextCursor: z.string().nullable(),
  pending: PendingInterrupt.nullable(),
  /** The decision recorded for `pending`, if any (first page only, like `pending`). */
  decision: Decision.nullable().default(null),
  idempotency: z.array(IdempotencyEntry),
});
export type RestorePage = z.infer<typeof RestorePage>;

/** One row the plane refused, kept for the operator with its code, reason and payload. */
export const QuarantineView = z.object({
  id: z.number().int(),
  writerId: z.string(),
  rowId: z.string().nullable(),
  kind: z.string().nullable(),
  executionId: z.string().nullable(),
  code: z.string(),
  reason: z.string(),
  payload: z.string(),
  truncated: z.boolean(),
  receivedAt: IsoTime,
});

/** One writer as the plane knows it: when it was seen, what it sent and what it still holds. */
export const WriterView = z.object({
  writerId: z.string(),
  /** The name of the API key its newest batch came with (null: none recorded, or the key has no name). */
  keyName: z.string().nullable(),
  firstSeen: IsoTime,
  lastSeen: IsoTime,
  rowsAcked: z.number().int(),
  rowsRejected: z.number().int(),
  backlogRows: z.number().int().nullable(),
  backlogBytes: z.number().int().nullable(),
  oldestPendingAt: z.string().nullable(),
  /** Executions whose copy on the plane is incomplete because a row of this writer was refused. */
  incompleteRuns: z.array(z.string()),
});

/**
 * The body that records a decision (POST /v1/executions/{id}/decision, the
 * inspector's form, the local UI): the pause it answers and a Resume value;
 * `comment` is stored in `metadata.comment`. Unknown fields are refused.
 */
export const DecisionRequest = z
  .object({
    checkpointId: Uuidv7,
    approved: z.boolean(),
    metadata: JsonObject.default({}),
    comment: z.string().max(LIMITS.decisionCommentLength).optional(),
  })
  .strict();
export type DecisionRequest = z.infer<typeof DecisionRequest>;

/**
 * Where a decision stands. `pending`: recorded, the pause still open;
 * `claimed`: a writer claimed the pause with this decision and has not yet
 * reported its local claim; `applied`: claimed with this decision and applied
 * by `appliedBy`; `superseded`: the pause was answered otherwise (a resume
 * from code, another decision) or its run was cancelled or deleted.
 */
export const DecisionState = z.enum(['pending', 'claimed', 'applied', 'superseded']);
export type DecisionState = z.infer<typeof DecisionState>;

/** A decision as the plane's read API and decision feed show it, with its state. */
export const DecisionView = Decision.extend({
  state: DecisionState,
  /** The writer that claimed the pause (with this decision or not), when claimed. */
  appliedBy: z.string().nullable(),
  appliedAt: IsoTime.nullable(),
  /** Order of recording on the plane: the feed's cursor is the last seen. */
  feedSeq: z.number().int(),
});
export type DecisionView = z.infer<typeof DecisionView>;

/** One open pause of a project, for the approvals inbox (oldest first). */
export const PauseView = PendingInterrupt.extend({
  ageMs: z.number().int(),
  state: z.enum(['open', 'claimed']),
  decision: DecisionView.nullable(),
});
export type PauseView = z.infer<typeof PauseView>;

/** GET /v1/decisions?after=&wait=: decisions recorded after the cursor, in recording order (a long poll). */
export const DecisionFeed = z.object({ items: z.array(DecisionView), nextCursor: z.string() });
export type DecisionFeed = z.infer<typeof DecisionFeed>;

/**
 * One entry of the change feed (GET /v1/changes): where a run stands on the
 * plane after its latest change, at `changeSeq` (the project's change clock: the feed's
 * order). A deleted run has `deleted: true` and null summary fields.
 */
export const ExecutionChange = z
  .object({
    executionId: ExecutionId,
    changeSeq: z.number().int().nonnegative(),
    deleted: z.boolean(),
    status: ExecutionStatus.nullable(),
    /** The plane's newest seq of the run (-1: none). */
    lastSeq: z.number().int().nullable(),
    /** The writer of the plane's newest row; for a deletion, the writer whose batch carried it. */
    lastWriterId: z.string().nullable(),
    /** The run's pause on the plane: open, or claimed (by `claimedBy`); null when none. */
    pauseState: z.enum(['open', 'claimed']).nullable(),
    pauseCheckpointId: z.string().nullable(),
    claimedBy: z.string().nullable(),
  })
  .strict();
export type ExecutionChange = z.infer<typeof ExecutionChange>;

/** A page of the change feed; pass `nextCursor` as `after` next time (the same cursor when the page is empty). */
export const ChangeFeed = z.object({ items: z.array(ExecutionChange), nextCursor: z.string() });
export type ChangeFeed = z.infer<typeof ChangeFeed>;

/** What a run request asks the application to do: retry a failed run, recover a stale one, fork one from a row. */
export const RunRequestAction = z.enum(['retry', 'recover', 'fork']);
export type RunRequestAction = z.infer<typeof RunRequestAction>;

/**
 * POST /v1/executions/{id}/requests: the action, the row a fork branches from
 * (`checkpointId`, fork only: retry and recover name the run's newest row
 * themselves), and why (kept with the request, shown on the run's page).
 */
export const RunRequestBody = z
  .object({
    action: RunRequestAction,
    checkpointId: storable(LIMITS.executionIdLength).min(1).optional(),
    reason: storable(LIMITS.reasonLength).optional(),
  })
  .strict();
export type RunRequestBody = z.infer<typeof RunRequestBody>;

/** Where a run request stands: waiting for the application, applied, superseded (the run moved on otherwise), refused by the application. */
export const RunRequestState = z.enum(['open', 'started', 'applied', 'superseded', 'refused']);

/** A run request as the plane keeps it. */
export const RunRequestView = z.object({
  requestId: Uuidv7,
  executionId: ExecutionId,
  action: RunRequestAction,
  /** The row it acts on: the failed run's run-end marker (retry), the stale run's newest row (recover), the row to fork from (fork). */
  checkpointId: z.string(),
  checkpointSeq: z.number().int(),
  /** The fork's execution id, chosen when the request was recorded (fork only). */
  forkExecutionId: ExecutionId.nullable(),
  reason: z.string().nullable(),
  /** The asking key's name. */
  requestedBy: z.string(),
  requestedAt: IsoTime,
  state: RunRequestState,
  /** The writer that claimed a fork request to apply it (null: none yet, or not a fork). */
  claimedBy: z.string().nullable(),
  /** Who settled it (a worker's writer id), when, the refusal's code and message, and the run's status after an applied request. */
  settledBy: z.string().nullable(),
  settledAt: IsoTime.nullable(),
  code: z.string().nullable(),
  message: z.string().nullable(),
  runStatus: z.string().nullable(),
  /** The listing's order: a cursor is the last one seen. */
  seq: z.number().int(),
});
export type RunRequestView = z.infer<typeof RunRequestView>;

/** GET /v1/requests: requests after the cursor, in recording order. */
export const RunRequestPage = z.object({ items: z.array(RunRequestView), nextCursor: z.string().nullable() });
export type RunRequestPage = z.infer<typeof RunRequestPage>;

/** POST /v1/requests/{requestId}/outcome: a worker says how applying a request went. */
export const RunRequestOutcome = z
  .object({
    writerId: WriterId,
    /** The reporter's store instance: a fork's `started` is taken from its claimer's instance only. */
    instance: OwnerFields.instance,
    outcome: z.enum(['started', 'applied', 'superseded', 'refused']),
    code: storable(LIMITS.errorCodeLength).optional(),
    message: storable(LIMITS.reasonLength).optional(),
    runStatus: storable(LIMITS.runStatusLength).optional(),
  })
  .strict();
export type RunRequestOutcome = z.infer<typeof RunRequestOutcome>;

/** POST /v1/requests/{requestId}/claim: a worker takes a fork request to apply it (the first writer holds it). */
export const RunRequestClaim = z
  .object({
    writerId: z.string().min(1).max(LIMITS.writerIdLength),
    /** The claimer's store instance: a copied store file under the same writer id does not share the claim. */
    instance: OwnerFields.instance,
  })
  .strict();
export type RunRequestClaim = z.infer<typeof RunRequestClaim>;
