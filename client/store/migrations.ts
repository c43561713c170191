/**
 * The store's schema, one list for both dialects: entry `i` is schema version
 * `i + 1` on SQLite (`PRAGMA user_version`) and on Postgres (the
 * `waymark_migrations` table), so both runners end at the same version, and
 * each records the entry's `name` beside its version.
 *
 * Append-only: a landed entry is never edited (its name included); a change is
 * a new entry with both dialects' text. A dialect with nothing to do gets a
 * comment saying so rather than leaving the versions apart.
 *
 * The Postgres text names the store's schema with {@link SCHEMA_TOKEN}, which
 * the runner replaces by the quoted schema name. Pure strings: no driver is
 * loaded by importing this module.
 */

/**
 * Stands for the quoted schema name in Postgres text (graphile substitutes
 * `:GRAPHILE_WORKER_SCHEMA` the same way). A colon before an upper-case word
 * is no SQL this store writes and no word of its comments, so it cannot occur
 * by accident, as `S.` could in any future statement or comment.
 */
export const SCHEMA_TOKEN = ':WAYMARK_SCHEMA';

export interface Migration {
  /** Recorded with the version; never changes once landed. */
  readonly name: string;
  /** SQLite text, run with `exec` in the migration's transaction. */
  readonly sqlite: string;
  /** Postgres text with {@link SCHEMA_TOKEN} for the schema, run in the migration's transaction. */
  readonly postgres: string;
}

export const MIGRATIONS: readonly Migration[] = [
  /** The tables of a store: executions, checkpoints, pending interrupts, idempotent results, the outbox. */
  {
    name: '0001_initial',
    sqlite: `
  CREATE TABLE waymark_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE executions (
    execution_id TEXT PRIMARY KEY,
    next_seq INTEGER NOT NULL,
    last_id TEXT NOT NULL,
    last_node_id TEXT NOT NULL,
    last_step TEXT NOT NULL,
    last_status TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE checkpoints (
    id TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    step TEXT NOT NULL,
    status TEXT NOT NULL,
    agent_path TEXT NOT NULL,
    parent_id TEXT,
    state TEXT NOT NULL,
    node_input TEXT,
    node_output TEXT,
    interrupt_reason TEXT,
    interrupt_context TEXT,
    created_at TEXT NOT NULL,
    writer_id TEXT NOT NULL,
    UNIQUE (execution_id, seq)
  );
  CREATE TABLE pending_interrupts (
    execution_id TEXT PRIMARY KEY,
    checkpoint_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    context TEXT,
    agent_path TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE TABLE idempotency (
    execution_id TEXT NOT NULL,
    key TEXT NOT NULL,
    result TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (execution_id, key)
  );
  CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    payload TEXT,
    bytes INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    synced INTEGER NOT NULL DEFAULT 0,
    sync_error TEXT
  );
  CREATE INDEX outbox_unsynced ON outbox (seq) WHERE synced = 0;
  CREATE INDEX outbox_quarantined ON outbox (seq) WHERE sync_error IS NOT NULL;
  CREATE INDEX outbox_execution ON outbox (execution_id, synced);
  CREATE INDEX executions_finished ON executions (last_step, updated_at);
  `,
    postgres: `
  CREATE TABLE :WAYMARK_SCHEMA.waymark_meta (key text PRIMARY KEY, value text NOT NULL);
  CREATE TABLE :WAYMARK_SCHEMA.executions (
    execution_id text PRIMARY KEY,
    next_seq integer NOT NULL,
    last_id text NOT NULL,
    last_node_id text NOT NULL,
    last_step text NOT NULL,
    last_status text NOT NULL,
    updated_at text NOT NULL
  );
  CREATE TABLE :WAYMARK_SCHEMA.checkpoints (
    id text PRIMARY KEY,
    execution_id text NOT NULL,
    seq integer NOT NULL,
    node_id text NOT NULL,
    turn integer NOT NULL,
    step text NOT NULL,
    status text NOT NULL,
    agent_path text NOT NULL,
    parent_id text,
    state text NOT NULL,
    node_input text,
    node_output text,
    interrupt_reason text,
    interrupt_context text,
    created_at text NOT NULL,
    writer_id text NOT NULL,
    CONSTRAINT checkpoints_execution_seq UNIQUE (execution_id, seq)
  );
  CREATE TABLE :WAYMARK_SCHEMA.pending_interrupts (
    execution_id text PRIMARY KEY,
    checkpoint_id text NOT NULL,
    node_id text NOT NULL,
    reason text NOT NULL,
    context text,
    agent_path text NOT NULL,
    created_at text NOT NULL
  );
  CREATE TABLE :WAYMARK_SCHEMA.idempotency (
    execution_id text NOT NULL,
    key text NOT NULL,
    result text,
    created_at text NOT NULL,
    PRIMARY KEY (execution_id, key)
  );
  CREATE TABLE :WAYMARK_SCHEMA.outbox (
    seq bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    kind text NOT NULL,
    execution_id text NOT NULL,
    payload text,
    bytes integer NOT NULL,
    created_at text NOT NULL,
    synced boolean NOT NULL DEFAULT false,
    sync_error text
  );
  CREATE INDEX outbox_unsynced ON :WAYMARK_SCHEMA.outbox (seq) WHERE NOT synced;
  CREATE INDEX outbox_quarantined ON :WAYMARK_SCHEMA.outbox (seq) WHERE sync_error IS NOT NULL;
  CREATE INDEX outbox_execution ON :WAYMARK_SCHEMA.outbox (execution_id, synced);
  CREATE INDEX executions_finished ON :WAYMARK_SCHEMA.executions (last_step, updated_at);
  `,
  },
  /** Writes that touch fewer pages: SQLite rebuilds the outbox (no AUTOINCREMENT, narrower indexes); Postgres drops an index that made every put a non-HOT update. */
  {
    name: '0002_cheaper_writes',
    sqlite: `
  -- Fewer B-trees touched per write (10.7 pages per checkpoint commit before, measured):
  -- no AUTOINCREMENT (its sqlite_sequence row was one more page per commit; seq only
  -- orders pending rows, and a new row still sorts after every row present);
  -- events of an execution are found through the checkpoints' own index for
  -- checkpoint events, so only the other (rare) kinds are indexed by execution;
  -- the prune index holds finished runs only, so an ordinary put does not touch it.
  CREATE TABLE outbox_v2 (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    payload TEXT,
    bytes INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    synced INTEGER NOT NULL DEFAULT 0,
    sync_error TEXT
  );
  INSERT INTO outbox_v2 (seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error)
    SELECT seq, id, kind, execution_id, payload, bytes, created_at, synced, sync_error FROM outbox;
  DROP TABLE outbox;
  ALTER TABLE outbox_v2 RENAME TO outbox;
  DELETE FROM sqlite_sequence WHERE name = 'outbox';
  CREATE INDEX outbox_unsynced ON outbox (seq) WHERE synced = 0;
  CREATE INDEX outbox_quarantined ON outbox (seq) WHERE sync_error IS NOT NULL;
  CREATE INDEX outbox_other_by_execution ON outbox (execution_id, synced) WHERE kind <> 'checkpoint';
  DROP INDEX executions_finished;
  CREATE INDEX executions_finished ON executions (updated_at) WHERE last_step = 'run_end';
  `,
    postgres: `
  -- Every put updates its execution's row; an index on columns that change
  -- (last_step, updated_at) made each update a non-HOT one, so the row's index
  -- entries piled up within a run and a put's time grew with the run's length
  -- (5× from the first to the last tenth of a 400-turn run, measured). Prune
  -- walks executions by primary key and never used this index.
  DROP INDEX :WAYMARK_SCHEMA.executions_finished;
  `,
  },
  /** One lease per execution. */
  {
    name: '0003_leases',
    sqlite: `
  -- One lease per execution (issue 15): holder NULL once released; epoch grows
  -- by one at every acquisition and is kept across releases, so a fenced write
  -- of an older acquisition never matches again. expires_at: ms since the epoch.
  CREATE TABLE leases (
    execution_id TEXT PRIMARY KEY,
    holder TEXT,
    epoch INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  );
  `,
    postgres: `
  -- One lease per execution (issue 15): holder NULL once released; epoch grows
  -- by one at every acquisition and is kept across releases, so a fenced write
  -- of an older acquisition never matches again. expires_at: ms since the epoch,
  -- by the database server's clock (one clock for every machine sharing it).
  CREATE TABLE :WAYMARK_SCHEMA.leases (
    execution_id text PRIMARY KEY,
    holder text,
    epoch bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  `,
  },
  /** Decisions for pauses and the record of each local claim. */
  {
    name: '0004_decisions',
    sqlite: `
  -- A decision answers one pause (at most one per pause: checkpoint_id unique);
  -- seq is the local order of recording (listings page by it, never by a clock).
  -- source: 'local' (recorded here, sent to the plane) or 'plane' (arrived from it).
  CREATE TABLE decisions (
    seq INTEGER PRIMARY KEY,
    checkpoint_id TEXT NOT NULL UNIQUE,
    execution_id TEXT NOT NULL,
    decision_id TEXT NOT NULL UNIQUE,
    approved INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    source TEXT NOT NULL,
    decided_at TEXT NOT NULL
  );
  CREATE INDEX decisions_execution ON decisions (execution_id);
  -- Every local claim of a pause (the pending row is deleted by the claim):
  -- who claimed it, when, and the decision it applied (NULL: a resume from code).
  -- A decision's state is derived from this row, the open pause and the run's rows.
  CREATE TABLE claims (
    checkpoint_id TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL,
    writer_id TEXT NOT NULL,
    decision_id TEXT,
    claimed_at TEXT NOT NULL
  );
  CREATE INDEX claims_execution ON claims (execution_id);
  `,
    postgres: `
  -- A decision answers one pause (at most one per pause: checkpoint_id unique);
  -- seq is the local order of recording (a sequence: listings page by it, never by a clock).
  -- source: 'local' (recorded here, sent to the plane) or 'plane' (arrived from it).
  CREATE TABLE :WAYMARK_SCHEMA.decisions (
    seq bigserial PRIMARY KEY,
    checkpoint_id text NOT NULL UNIQUE,
    execution_id text NOT NULL,
    decision_id text NOT NULL UNIQUE,
    approved boolean NOT NULL,
    metadata text NOT NULL,
    decided_by text NOT NULL,
    source text NOT NULL,
    decided_at text NOT NULL
  );
  CREATE INDEX decisions_execution ON :WAYMARK_SCHEMA.decisions (execution_id);
  -- Every local claim of a pause (the pending row is deleted by the claim):
  -- who claimed it, when, and the decision it applied (NULL: a resume from code).
  CREATE TABLE :WAYMARK_SCHEMA.claims (
    checkpoint_id text PRIMARY KEY,
    execution_id text NOT NULL,
    writer_id text NOT NULL,
    decision_id text,
    claimed_at text NOT NULL
  );
  CREATE INDEX claims_execution ON :WAYMARK_SCHEMA.claims (execution_id);
  `,
  },
  /** A decision's seq is never given twice (the bound of forgetUnheldDecisions relies on it). */
  {
    name: '0005_decision_seq_never_reused',
    sqlite: `
  -- INTEGER PRIMARY KEY without AUTOINCREMENT gives a new row max(seq) + 1, so
  -- once the newest decision is deleted its seq comes back: a decision recorded
  -- after a caller read decisionSeq() could fall under that bound and be forgotten
  -- on a stale answer. AUTOINCREMENT never gives a seq twice. Decisions are few;
  -- the extra sqlite_sequence page is written only when one is recorded. The
  -- counter starts from the newest seq present: a seq deleted before this
  -- migration can come back once, which matters only to a bound read by a
  -- process of the previous version still running during the upgrade.
  CREATE TABLE decisions_v2 (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    checkpoint_id TEXT NOT NULL UNIQUE,
    execution_id TEXT NOT NULL,
    decision_id TEXT NOT NULL UNIQUE,
    approved INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    source TEXT NOT NULL,
    decided_at TEXT NOT NULL
  );
  INSERT INTO decisions_v2 (seq, checkpoint_id, execution_id, decision_id, approved, metadata, decided_by, source, decided_at)
    SELECT seq, checkpoint_id, execution_id, decision_id, approved, metadata, decided_by, source, decided_at FROM decisions;
  DROP TABLE decisions;
  ALTER TABLE decisions_v2 RENAME TO decisions;
  CREATE INDEX decisions_execution ON decisions (execution_id);
  `,
    postgres: `
  -- Nothing to do: decisions.seq is a bigserial, whose sequence never gives a value twice.
  `,
  },
  /** Listings page by execution id in byte order on any database collation (client/postgres/reads.ts): an index in that order. */
  {
    name: '0006_byte_order_listings',
    sqlite: `
  -- Nothing to do: SQLite compares text by its bytes (BINARY), which the primary keys are in.
  `,
    postgres: `
  -- The run and pause listings (recoverRuns, waymark runs, the local inspector) and prune's walk compare and sort
  -- execution ids COLLATE "C": on a database whose text is ordered by a locale (en_US.UTF-8), or even C.UTF-8, the
  -- primary keys are in another collation and every page was a scan and a sort of the whole table.
  CREATE INDEX IF NOT EXISTS executions_id_bytes ON :WAYMARK_SCHEMA.executions (execution_id COLLATE "C");
  CREATE INDEX IF NOT EXISTS pending_interrupts_id_bytes ON :WAYMARK_SCHEMA.pending_interrupts (execution_id COLLATE "C");
  `,
  },
  /** SQLite: a checkpoint is its own outbox entry, so a step writes two rows (the execution's head and the checkpoint), not three. */
  {
    name: '0007_checkpoint_events',
    sqlite: `
  -- A checkpoint carries its own event: event_seq is its place in the drain's order while it waits (drawn from the
  -- same count as the outbox's seq, so the drain reads both tables in one order), negated once the plane holds the
  -- row (acknowledged, or restored from a plane), NULL when never queued or quarantined (the reason is then an outbox
  -- row of its id); event_bytes is the event's size. The other events stay in the outbox, renamed outbox_entries: a
  -- waymark older than this schema opening the file (it leaves a newer file as it is) fails on its first statement
  -- that queues, drains, prunes or asks whether the plane holds a run, instead of queueing events its drain alone
  -- sends, reading runs the plane holds as local, or pruning rows the plane never got. Waiting checkpoint events move
  -- onto their rows with their places (only those rows are rewritten; the new indexes read the table once);
  -- acknowledged and restored ones stay outbox rows, which heldByPlane still reads, as does a waiting event whose
  -- row is gone.
  ALTER TABLE outbox RENAME TO outbox_entries;
  ALTER TABLE checkpoints ADD COLUMN event_seq INTEGER;
  ALTER TABLE checkpoints ADD COLUMN event_bytes INTEGER;
  UPDATE checkpoints SET event_seq = o.seq, event_bytes = o.bytes
    FROM outbox_entries o WHERE o.id = checkpoints.id AND o.kind = 'checkpoint' AND o.synced = 0;
  DELETE FROM outbox_entries WHERE kind = 'checkpoint' AND synced = 0 AND id IN (SELECT id FROM checkpoints);
  -- the waiting rows in order, with what the outbox's stats read of them (no full row read for a count); the rows the
  -- plane holds by run, for heldByPlane (written at an acknowledgement or a restore, never by a step). The outbox's
  -- indexes keep their names on outbox_entries.
  CREATE INDEX checkpoints_unsent ON checkpoints (event_seq, event_bytes, created_at) WHERE event_seq > 0;
  CREATE INDEX checkpoints_held ON checkpoints (execution_id) WHERE event_seq < 0;
  `,
    postgres: `
  -- Nothing to do: the Postgres store sends a checkpoint, its head update and its outbox event as one statement.
  `,
  },
];

/** The Postgres text of `m` for `schema` (already checked to be a plain lower-case identifier). */
export function postgresText(m: Migration, schema: string): string {
  return m.postgres.replaceAll(SCHEMA_TOKEN, `"${schema}"`);
}
