-- Distribute the waymark plane's tables on a Citus cluster. Run it on the coordinator, on the plane's database,
-- after a plane of this version has applied its migrations (it starts them itself); run it again after every
-- upgrade: a table distributed already is left as it is, a table a newer migration added is distributed.
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f node_modules/waymark/drizzle/citus/distribute.sql
--
-- Shared by every project, and read by key id or session hash (never by project): reference tables, a copy on
-- every node. Each table that refers to another comes after it.
--
-- Of one project (a project_id column, in every primary key and unique index): distributed by project_id, all in
-- the colocation group `executions` starts, so the statements of one project (joins included) run on one node.
--
-- docs/OPERATIONS.md ("Running the plane on Citus") says what stays on one node;
-- test/plane/distribute-script.test.ts checks this file against the migrated schema.

SELECT create_reference_table('projects')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'projects'::regclass);
SELECT create_reference_table('api_keys')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'api_keys'::regclass);
SELECT create_reference_table('sessions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'sessions'::regclass);

SELECT create_distributed_table('executions', 'project_id', colocate_with => 'none')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'executions'::regclass);
SELECT create_distributed_table('execution_tombstones', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'execution_tombstones'::regclass);
SELECT create_distributed_table('checkpoints', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'checkpoints'::regclass);
SELECT create_distributed_table('events', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'events'::regclass);
SELECT create_distributed_table('idempotency', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'idempotency'::regclass);
SELECT create_distributed_table('holes', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'holes'::regclass);
SELECT create_distributed_table('pending_interrupts', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'pending_interrupts'::regclass);
SELECT create_distributed_table('claims', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'claims'::regclass);
SELECT create_distributed_table('claim_conflicts', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'claim_conflicts'::regclass);
SELECT create_distributed_table('decisions', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'decisions'::regclass);
SELECT create_distributed_table('quarantine', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'quarantine'::regclass);
SELECT create_distributed_table('writers', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'writers'::regclass);
SELECT create_distributed_table('run_contacts', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'run_contacts'::regclass);
SELECT create_distributed_table('run_takeovers', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'run_takeovers'::regclass);
SELECT create_distributed_table('run_owners', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'run_owners'::regclass);
SELECT create_distributed_table('run_requests', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'run_requests'::regclass);
SELECT create_distributed_table('project_clocks', 'project_id', colocate_with => 'executions')
  WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'project_clocks'::regclass);
