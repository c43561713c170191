/**
 * Postgres schema for the client store, per configurable schema name.
 * Append-only: a landed migration is never edited; a change is a new entry.
 * `S` is replaced by the quoted schema name.
 */
export const POSTGRES_MIGRATIONS: readonly string[] = [
  /* 1 */ `
  CREATE TABLE S.waymark_meta (key text PRIMARY KEY, value text NOT NULL);
  CREATE TABLE S.executions (
    execution_id text PRIMARY KEY,
    next_seq integer NOT NULL,
    last_id text NOT NULL,
    last_node_id text NOT NULL,
    last_step text NOT NULL,
    last_status text NOT NULL,
    updated_at text NOT NULL
  );
  CREATE TABLE S.checkpoints (
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
  CREATE TABLE S.pending_interrupts (
    execution_id text PRIMARY KEY,
    checkpoint_id text NOT NULL,
    node_id text NOT NULL,
    reason text NOT NULL,
    context text,
    agent_path text NOT NULL,
    created_at text NOT NULL
  );
  CREATE TABLE S.idempotency (
    execution_id text NOT NULL,
    key text NOT NULL,
    result text,
    created_at text NOT NULL,
    PRIMARY KEY (execution_id, key)
  );
  CREATE TABLE S.outbox (
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
  CREATE INDEX outbox_unsynced ON S.outbox (seq) WHERE NOT synced;
  CREATE INDEX outbox_quarantined ON S.outbox (seq) WHERE sync_error IS NOT NULL;
  CREATE INDEX outbox_execution ON S.outbox (execution_id, synced);
  CREATE INDEX executions_finished ON S.executions (last_step, updated_at);
  `,
  /* 2 */ `
  -- Every put updates its execution's row; an index on columns that change
  -- (last_step, updated_at) made each update a non-HOT one, so the row's index
  -- entries piled up within a run and a put's time grew with the run's length
  -- (5× from the first to the last tenth of a 400-turn run, measured). Prune
  -- walks executions by primary key and never used this index.
  DROP INDEX S.executions_finished;
  `,
  /* 3 */ `
  -- One lease per execution (issue 15): holder NULL once released; epoch grows
  -- by one at every acquisition and is kept across releases, so a fenced write
  -- of an older acquisition never matches again. expires_at: ms since the epoch,
  -- by the database server's clock (one clock for every machine sharing it).
  CREATE TABLE S.leases (
    execution_id text PRIMARY KEY,
    holder text,
    epoch bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  `,
];
