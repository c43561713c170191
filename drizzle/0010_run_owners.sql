CREATE TABLE "run_owners" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"writer_id" text NOT NULL,
	"holder" text,
	"instance" text,
	"epoch" integer NOT NULL,
	"state" text NOT NULL,
	"expires_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_owners_project_id_execution_id_pk" PRIMARY KEY("project_id","execution_id")
);
--> statement-breakpoint
ALTER TABLE "run_takeovers" DROP CONSTRAINT "run_takeovers_project_id_execution_id_from_seq_pk";--> statement-breakpoint
ALTER TABLE "run_takeovers" ADD CONSTRAINT "run_takeovers_project_id_execution_id_from_seq_loser_writer_id_pk" PRIMARY KEY("project_id","execution_id","from_seq","loser_writer_id");--> statement-breakpoint
ALTER TABLE "claims" ADD COLUMN "instance" text;--> statement-breakpoint
-- every run the plane holds gets its owner record from what the older tables said: a running run is held by the
-- writer of its newest row (or the winner of a takeover at that seq) until 30 s after its last contact; a paused or
-- failed run's owner is released (a claim, or a resume of the failed run, acquires it again); a completed or
-- cancelled run's is final
INSERT INTO "run_owners" ("project_id", "execution_id", "writer_id", "holder", "instance", "epoch", "state", "expires_at")
SELECT e."project_id", e."execution_id",
  COALESCE((SELECT t."winner_writer_id" FROM "run_takeovers" t WHERE t."project_id" = e."project_id" AND t."execution_id" = e."execution_id" AND t."from_seq" = e."last_seq" LIMIT 1), e."writer_id", ''),
  NULL, NULL,
  1 + (SELECT count(*)::int FROM "run_takeovers" t WHERE t."project_id" = e."project_id" AND t."execution_id" = e."execution_id"),
  CASE e."status" WHEN 'running' THEN 'held' WHEN 'paused' THEN 'released' WHEN 'failed' THEN 'released' WHEN 'cancelled' THEN 'cancelled' ELSE 'ended' END,
  CASE WHEN e."status" = 'running' THEN COALESCE((SELECT max(c."last_contact_at") FROM "run_contacts" c WHERE c."project_id" = e."project_id" AND c."execution_id" = e."execution_id"), e."updated_at") + interval '30 seconds' END
FROM "executions" e
ON CONFLICT DO NOTHING;
