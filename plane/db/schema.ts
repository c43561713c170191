/**
 * The plane's database (drizzle, Postgres; PGlite in embedded mode). Every
 * table is keyed by project: no query reads across projects.
 *
 * Every table but `projects`, `api_keys` and `sessions` holds one project's
 * data per row and can be distributed (or hash-partitioned) by `project_id`:
 * each of its primary keys and unique indexes includes `project_id`, and a
 * statement names its project as a constant for every such table it reads
 * (`x.project_id = $project`, not only through a correlation or a join), so
 * it is routed to that project's shard or partition alone
 * (test/plane/shard-routing.test.ts checks both).
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

const now = () => timestamp({ withTimezone: true, mode: 'date' }).notNull().defaultNow();

export const projects = pgTable('projects', {
  id: text().primaryKey(),
  name: text().notNull().unique(),
  createdAt: now(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    /** The public part of the key (`wm_<id>_<secret>`). */
    id: text().primaryKey(),
    projectId: text()
      .notNull()
      .references(() => projects.id),
    name: text().notNull(),
    /** sha256 of the secret, hex. The secret itself is never stored. */
    hash: text().notNull(),
    scopes: text().array().notNull(),
    createdAt: now(),
    revokedAt: timestamp({ withTimezone: true, mode: 'date' }),
  },
  (t) => [index('api_keys_project').on(t.projectId)],
);

export const writers = pgTable(
  'writers',
  {
    projectId: text().notNull(),
    writerId: text().notNull(),
    firstSeen: now(),
    lastSeen: now(),
    rowsAcked: bigint({ mode: 'number' }).notNull().default(0),
    rowsRejected: bigint({ mode: 'number' }).notNull().default(0),
    backlogRows: bigint({ mode: 'number' }),
    backlogBytes: bigint({ mode: 'number' }),
    oldestPendingAt: text(),
    /** The API key the writer's newest batch came with: the inspector names the writer by the key's name. */
    keyId: text(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.writerId] })],
);

export const executions = pgTable(
  'executions',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    /** running | paused | completed | failed | cancelled */
    status: text().notNull(),
    rowCount: integer().notNull().default(0),
    lastSeq: integer().notNull().default(-1),
    lastNodeId: text(),
    lastStep: text(),
    lastStatus: text(),
    writerId: text(),
    /** The agent path of the run's first row (lowest seq the plane holds): the run list's agent column. */
    agent: text(),
    /** Rows of this execution the plane refused (see `holes`): more than 0 means its copy is incomplete. */
    holeCount: integer().notNull().default(0),
    createdAt: now(),
    updatedAt: now(),
    /**
     * The change feed's order (GET /v1/changes): drawn from the project's
     * `changes` clock each time the summary is refreshed, as the
     * transaction's last step (plane/changes.ts), so seqs commit in order.
     * A placeholder (negative: plane/clocks.ts placeholderFrom) only inside
     * the transaction that inserts the row, until it stamps it. NOT NULL: a
     * writer that gives none (an older plane, whose sequence is gone) fails.
     */
    changeSeq: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.executionId] }),
    index('executions_recent').on(t.projectId, t.updatedAt.desc(), t.executionId.desc()),
    index('executions_status_recent').on(t.projectId, t.status, t.updatedAt.desc(), t.executionId.desc()),
    uniqueIndex('executions_changes').on(t.projectId, t.changeSeq),
  ],
);

/**
 * A run its owner deleted (an `execution_deleted` event), for the change
 * feed: the summary row is gone, this says so at a change seq drawn from
 * the project's `changes` clock, as `executions.change_seq` is. A run started again under the same id
 * gets a newer seq in `executions`; the feed shows the deletion, then the run.
 */
export const executionTombstones = pgTable(
  'execution_tombstones',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    changeSeq: bigint({ mode: 'number' }).notNull(),
    /** The writer whose batch carried the deletion. */
    writerId: text().notNull(),
    deletedAt: now(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.executionId] }),
    uniqueIndex('execution_tombstones_changes').on(t.projectId, t.changeSeq),
  ],
);

export const checkpoints = pgTable(
  'checkpoints',
  {
    projectId: text().notNull(),
    id: text().notNull(),
    executionId: text().notNull(),
    seq: integer().notNull(),
    nodeId: text().notNull(),
    step: text().notNull(),
    status: text().notNull(),
    agentPath: text().notNull(),
    writerId: text().notNull(),
    createdAt: text().notNull(),
    /** The wire row exactly as validated. */
    row: jsonb().notNull(),
    /** sha256 of the row's canonical JSON: same id + other hash = conflict. */
    hash: text().notNull(),
    receivedAt: now(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.id] }),
    uniqueIndex('checkpoints_execution_seq').on(t.projectId, t.executionId, t.seq),
  ],
);

/** Non-checkpoint events (pause opened/claimed, idempotency, deletion), for dedupe by id. */
export const events = pgTable(
  'events',
  {
    projectId: text().notNull(),
    id: text().notNull(),
    kind: text().notNull(),
    executionId: text().notNull(),
    writerId: text().notNull(),
    hash: text().notNull(),
    /** An idempotency event's key: which side effects each writer recorded (two writers after an offline double claim). */
    key: text(),
    receivedAt: now(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.id] }), index('events_execution').on(t.projectId, t.executionId)],
);

export const pendingInterrupts = pgTable(
  'pending_interrupts',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    checkpointId: text().notNull(),
    /** The wire PendingInterrupt. */
    row: jsonb().notNull(),
    /** open | claimed */
    state: text().notNull(),
    claimedBy: text(),
    claimedAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** Order of opening (the project's `pauses` clock, drawn again when the run's next pause replaces the row): the approvals inbox is oldest first by it. Drawn in commit order per project (ingest-events.ts stampOpenedPauses): the inbox pages by it. 0 only inside the transaction that opens the pause, until it stamps it. */
    openedSeq: bigint({ mode: 'number' }).notNull(),
  },
  // the inbox's open pauses in order, without walking every pause ever answered;
  // a pause event's owner check finds a pause by its checkpoint (ingest-events.ts) without walking the project's pauses
  (t) => [
    primaryKey({ columns: [t.projectId, t.executionId] }),
    index('pending_interrupts_open').on(t.projectId, t.openedSeq).where(sql`state = 'open'`),
    index('pending_interrupts_checkpoint').on(t.projectId, t.checkpointId),
  ],
);

/**
 * One row per claimed pause: the primary key makes exactly one writer win.
 * A claim is `held` until the holder's own `interrupt_claimed` event arrives
 * (its local claim applied), then `applied`. A held claim can be released by
 * its holder, or taken over by another writer once it is older than the
 * plane's claim release delay: a holder that crashed between the two claims
 * does not keep the pause forever.
 */
export const claims = pgTable(
  'claims',
  {
    projectId: text().notNull(),
    checkpointId: text().notNull(),
    executionId: text().notNull(),
    writerId: text().notNull(),
    /** api (claimed before resuming) | ingest (claimed offline, reported later) | cancel (closed by a cancel of its run) */
    source: text().notNull(),
    claimedAt: now(),
    /** When the holder's local claim was reported (its interrupt_claimed event); null while only held. */
    appliedAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** The decision this claim applies (ClaimRequest.decisionId, interrupt_claimed.decisionId); null: a resume from code, a cancel, a deletion. */
    decisionId: text(),
    /** The store instance that claimed (ClaimRequest.instance); null from an older client or by ingest. */
    instance: text(),
  },
  // held claims (made at the plane, not yet applied): few at any time, listed by the inbox
  (t) => [
    primaryKey({ columns: [t.projectId, t.checkpointId] }),
    index('claims_held').on(t.projectId).where(sql`applied_at IS NULL`),
    // a run's claims (retention deletes them run by run; a cancel closes them)
    index('claims_execution').on(t.projectId, t.executionId),
  ],
);

/**
 * Decisions: a person's answer to one pause (a Resume value), recorded on the
 * plane (POST …/decision, the inspector's form) or in a local store and
 * ingested (`decision_recorded`). At most one per pause: the primary key. The
 * decision itself never changes; where it stands (pending, claimed, applied,
 * superseded) is derived from the pause's claim, never stored. `feed_seq` is
 * the order of recording (GET /v1/decisions pages by it), assigned under a
 * per-project lock so it is also the order of commit.
 */
export const decisions = pgTable(
  'decisions',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    checkpointId: text().notNull(),
    decisionId: text().notNull(),
    approved: boolean().notNull(),
    metadata: jsonb().notNull(),
    decidedBy: text().notNull(),
    /** plane | local */
    source: text().notNull(),
    /** The wire time as recorded (the deciding machine's clock): informational, never an order. */
    decidedAt: text().notNull(),
    /** The writer that sent a local decision; null for one recorded on the plane. */
    writerId: text(),
    /** The project's `decisions` clock, drawn under its row lock taken first in the transaction (plane/clocks.ts). */
    feedSeq: bigint({ mode: 'number' }).notNull(),
    receivedAt: now(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.checkpointId] }),
    uniqueIndex('decisions_decision_id').on(t.projectId, t.decisionId),
    uniqueIndex('decisions_feed').on(t.projectId, t.feedSeq),
    index('decisions_execution').on(t.projectId, t.executionId),
  ],
);

export const claimConflicts = pgTable(
  'claim_conflicts',
  {
    /** The project's `conflicts` clock, drawn as the ingest's last step (the listing's order). Unique within the project (the key includes `project_id`, as every key of a table of a project does). */
    id: bigint({ mode: 'number' }).notNull(),
    projectId: text().notNull(),
    executionId: text().notNull(),
    checkpointId: text().notNull(),
    winnerWriterId: text().notNull(),
    loserWriterId: text().notNull(),
    source: text().notNull(),
    at: now(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.id] }),
    index('claim_conflicts_execution').on(t.projectId, t.executionId),
  ],
);

export const idempotency = pgTable(
  'idempotency',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    key: text().notNull(),
    row: jsonb().notNull(),
    hash: text().notNull(),
    writerId: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.executionId, t.key] })],
);

export const quarantine = pgTable(
  'quarantine',
  {
    /** The project's `quarantine` clock, drawn in commit order (ingest.ts stampQuarantine): the quarantine listing pages by it. Unique within the project; negative only inside the transaction that inserts the record, until it stamps it. */
    id: bigint({ mode: 'number' }).notNull(),
    projectId: text().notNull(),
    writerId: text().notNull(),
    rowId: text(),
    kind: text(),
    executionId: text(),
    code: text().notNull(),
    reason: text().notNull(),
    /** The refused payload, truncated to LIMITS.quarantinePayloadBytes. */
    payload: text().notNull(),
    truncated: boolean().notNull().default(false),
    /** sha256 of the reason code and the whole refused text (before truncation): a batch sent again (its answer lost) adds no second record. NULL on records older than this column. */
    payloadHash: text(),
    receivedAt: now(),
  },
  (t) => [
    // the listing's order too: a page is a range of this key
    primaryKey({ columns: [t.projectId, t.id] }),
    index('quarantine_execution').on(t.projectId, t.executionId).where(sql`execution_id IS NOT NULL`),
    uniqueIndex('quarantine_once').on(t.projectId, t.writerId, t.payloadHash),
  ],
);

/**
 * A seq of an execution whose row the plane refused (too large, invalid, a
 * seq or id conflict): the rows after it are deltas on a row the plane does
 * not hold, so the plane's copy of that execution is incomplete. The first
 * refusal at a seq is kept; a deletion of the execution removes its holes.
 */
export const holes = pgTable(
  'holes',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    seq: integer().notNull(),
    /** The refusal code (`too_large`, `invalid`, `seq_conflict`, `conflict`). */
    code: text().notNull(),
    reason: text().notNull(),
    writerId: text().notNull(),
    rowId: text(),
    at: now(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.executionId, t.seq] })],
);

/** Inspector sessions: an API key with read scope exchanged for an HttpOnly cookie; the token is stored hashed. */
export const sessions = pgTable(
  'sessions',
  {
    /** sha256 of the cookie token, hex. */
    hash: text().primaryKey(),
    keyId: text()
      .notNull()
      .references(() => apiKeys.id),
    projectId: text().notNull(),
    createdAt: now(),
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('sessions_expiry').on(t.expiresAt)],
);

/**
 * The plane's view of who is running a run that is not paused: the last time
 * (the plane's clock) each writer delivered an event of each execution. A
 * takeover (POST /v1/executions/:id/takeover) is refused while the writer of
 * the run's newest row was heard from within the takeover delay.
 */
export const runContacts = pgTable(
  'run_contacts',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    writerId: text().notNull(),
    lastContactAt: now(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.executionId, t.writerId] })],
);

/**
 * The fences of a run (owners.ts): one row per writer that lost the run at a
 * seq (taken over, cancelled, or its branch refused). The loser has its later
 * rows of the run refused at ingest (`taken_over`) until it acquires the run
 * again (its fences are then removed).
 */
export const runTakeovers = pgTable(
  'run_takeovers',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    /** The run's newest seq on the plane when it was taken over: the loser's rows after it are refused. */
    fromSeq: integer().notNull(),
    winnerWriterId: text().notNull(),
    loserWriterId: text().notNull(),
    /** The loser's last contact with the plane for this run, when it was taken over. */
    loserLastContactAt: timestamp({ withTimezone: true, mode: 'date' }),
    at: now(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.executionId, t.fromSeq, t.loserWriterId] }),
    index('run_takeovers_loser').on(t.projectId, t.loserWriterId, t.executionId),
  ],
);

/**
 * The one owner of each run at the plane (DESIGN §5b): who may write its rows
 * and effects now. Acquired by the run's first row, a pause's claim or the
 * takeover of a crashed run; renewed by its holder's heartbeat and rows;
 * released at a pause; ended by the run-end marker; cancelled by a cancel.
 * `epoch` counts the changes of owner; a writer that lost the run is fenced by
 * `run_takeovers` (its later rows refused), a holder by its renewals.
 */
export const runOwners = pgTable(
  'run_owners',
  {
    projectId: text().notNull(),
    executionId: text().notNull(),
    /** The owning writer (for a released, ended or cancelled run: the last one). */
    writerId: text().notNull(),
    /** The acquisition holding it (a lease holder); null when acquired by a row (its holder unknown) or not held. */
    holder: text(),
    /** The store instance holding it; null when unknown (an older client, a row). */
    instance: text(),
    epoch: integer().notNull(),
    /** held | released (a pause: the next claim acquires it) | ended (a run-end marker) | cancelled */
    state: text().notNull(),
    /** Until when the holder keeps it without a renewal (held only). */
    expiresAt: timestamp({ withTimezone: true, mode: 'date' }),
    updatedAt: now(),
    /** A cancelled run's canceller: the name of the key that cancelled it at the plane (null: not cancelled there, or before this was kept). */
    cancelledBy: text(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.executionId] })],
);

/**
 * Run requests: a person's ask, recorded at the plane, that the application
 * act on a run: `retry` a failed run, `recover` a stale one, `fork` one from a
 * row. The plane only records them; the application's worker applies each
 * (serveDecisions) and reports how it went. `checkpoint_id` names the row the
 * request acts on (the failed marker, the stale run's newest row, the row to
 * fork from): a run that moved past it meanwhile is not acted on again.
 * `fork_execution_id` is the fork's id, chosen when recorded, so a request
 * applied twice cannot make two forks. At most one open request per run and
 * action (`run_requests_open`). `seq` orders the worker's listing.
 */
export const runRequests = pgTable(
  'run_requests',
  {
    projectId: text().notNull(),
    requestId: text().notNull(),
    executionId: text().notNull(),
    /** retry | recover | fork */
    action: text().notNull(),
    checkpointId: text().notNull(),
    checkpointSeq: integer().notNull(),
    forkExecutionId: text(),
    reason: text(),
    /** The asking key's name, and its id. */
    requestedBy: text().notNull(),
    keyId: text().notNull(),
    requestedAt: now(),
    /** open (waiting for the application) | applied | superseded (the run moved on otherwise) | refused (the application could not apply it) */
    state: text().notNull(),
    /** The writer that claimed a fork request (fork only: the claim is what makes it once); null: not claimed. */
    claimedBy: text(),
    /** The claimer's store instance (a copied store file is another under one writer id); null: an older client's claim. */
    claimedInstance: text(),
    claimedAt: timestamp({ withTimezone: true, mode: 'date' }),
    /** The writer that reported the outcome, its code (refused, superseded), message and the run's status after it (applied). */
    settledBy: text(),
    settledAt: timestamp({ withTimezone: true, mode: 'date' }),
    outcomeCode: text(),
    outcomeMessage: text(),
    runStatus: text(),
    /** The project's `requests` clock, drawn under its row lock taken first in the recording's transaction (plane/clocks.ts). */
    seq: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.projectId, t.requestId] }),
    uniqueIndex('run_requests_seq').on(t.projectId, t.seq),
    index('run_requests_execution').on(t.projectId, t.executionId),
    uniqueIndex('run_requests_open').on(t.projectId, t.executionId, t.action).where(sql`state = 'open'`),
  ],
);

/**
 * The per-project clocks the plane's feeds and listings page by (plane/clocks.ts): one row per project and clock
 * (`changes`, `decisions`, `pauses`, `quarantine`, `conflicts`, `requests`), `value` the last key drawn. Drawing
 * keys updates the row, and its row lock, held to commit, is what makes the keys commit in the order they are
 * drawn. Of one project like every table but the shared ones: distributed by `project_id` with the rest.
 */
export const projectClocks = pgTable(
  'project_clocks',
  {
    projectId: text().notNull(),
    clock: text().notNull(),
    value: bigint({ mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.clock] })],
);
