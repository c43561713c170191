-- every writer of a feed waits here until the migration commits, and every one that drew a key before it has
-- committed: the seeds below are read from sequences no one draws from any more. A plane of an older version
-- started after it fails its writes (its sequences are gone and the keys have no default), never writes a row
-- no feed shows
LOCK TABLE "executions", "execution_tombstones", "decisions", "pending_interrupts", "quarantine", "claim_conflicts", "run_requests" IN EXCLUSIVE MODE;--> statement-breakpoint
ALTER TABLE "claim_conflicts" ALTER COLUMN "id" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "decisions" ALTER COLUMN "feed_seq" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "executions" ALTER COLUMN "change_seq" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "pending_interrupts" ALTER COLUMN "opened_seq" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "quarantine" ALTER COLUMN "id" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "run_requests" ALTER COLUMN "seq" DROP DEFAULT;--> statement-breakpoint
-- the keys the feeds and listings page by are drawn from a row of this table per project and clock, not from a
-- sequence (node-local on a distributed Postgres, and refused in an UPDATE of a distributed table): plane/clocks.ts
CREATE TABLE "project_clocks" (
	"project_id" text NOT NULL,
	"clock" text NOT NULL,
	"value" bigint NOT NULL,
	CONSTRAINT "project_clocks_project_id_clock_pk" PRIMARY KEY("project_id","clock")
);
--> statement-breakpoint
-- each clock starts above every key its sequence ever gave, in any project (a key of a row retention pruned since, or
-- of a run deleted, may be a client's saved cursor), and above every key its project's rows hold; every project
-- gets its clocks, so none starts a clock from 0 below keys it issued
INSERT INTO "project_clocks" ("project_id", "clock", "value")
SELECT k.project_id, k.clock, greatest(max(k.value), max(s.value))
FROM (
	SELECT p.id AS project_id, c.clock, 0::bigint AS value
	FROM "projects" p
	CROSS JOIN (VALUES ('changes'), ('decisions'), ('pauses'), ('quarantine'), ('conflicts'), ('requests')) c(clock)
	UNION ALL SELECT project_id, 'changes', max(change_seq) FROM "executions" GROUP BY project_id
	UNION ALL SELECT project_id, 'changes', max(change_seq) FROM "execution_tombstones" GROUP BY project_id
	UNION ALL SELECT project_id, 'decisions', max(feed_seq) FROM "decisions" GROUP BY project_id
	UNION ALL SELECT project_id, 'pauses', max(opened_seq) FROM "pending_interrupts" GROUP BY project_id
	UNION ALL SELECT project_id, 'quarantine', max(id) FROM "quarantine" GROUP BY project_id
	UNION ALL SELECT project_id, 'conflicts', max(id) FROM "claim_conflicts" GROUP BY project_id
	UNION ALL SELECT project_id, 'requests', max(seq) FROM "run_requests" GROUP BY project_id
) k
JOIN (VALUES
	('changes', pg_sequence_last_value(pg_get_serial_sequence('executions', 'change_seq')::regclass)),
	('decisions', pg_sequence_last_value(pg_get_serial_sequence('decisions', 'feed_seq')::regclass)),
	('pauses', pg_sequence_last_value(pg_get_serial_sequence('pending_interrupts', 'opened_seq')::regclass)),
	('quarantine', pg_sequence_last_value(pg_get_serial_sequence('quarantine', 'id')::regclass)),
	('conflicts', pg_sequence_last_value(pg_get_serial_sequence('claim_conflicts', 'id')::regclass)),
	('requests', pg_sequence_last_value(pg_get_serial_sequence('run_requests', 'seq')::regclass))
) s(clock, value) ON s.clock = k.clock
GROUP BY k.project_id, k.clock;
--> statement-breakpoint
DROP SEQUENCE "claim_conflicts_id_seq";--> statement-breakpoint
DROP SEQUENCE "decisions_feed_seq_seq";--> statement-breakpoint
DROP SEQUENCE "executions_change_seq_seq";--> statement-breakpoint
DROP SEQUENCE "pending_interrupts_opened_seq_seq";--> statement-breakpoint
DROP SEQUENCE "quarantine_id_seq";--> statement-breakpoint
DROP SEQUENCE "run_requests_seq_seq";
