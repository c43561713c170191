/**
 * SQLite schema, versioned by `PRAGMA user_version`. Append-only: a landed
 * migration is never edited; a change is a new entry.
 */
export const SQLITE_MIGRATIONS: readonly string[] = [
  /* 1 */ `
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
  /* 2 */ `
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
  /* 3 */ `
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
];
