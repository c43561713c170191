-- every key of a table of a project includes project_id: the table can be distributed (or hash-partitioned) by it
ALTER TABLE "claim_conflicts" DROP CONSTRAINT "claim_conflicts_pkey";--> statement-breakpoint
ALTER TABLE "quarantine" DROP CONSTRAINT "quarantine_pkey";--> statement-breakpoint
DROP INDEX "quarantine_project";--> statement-breakpoint
ALTER TABLE "claim_conflicts" ADD CONSTRAINT "claim_conflicts_project_id_id_pk" PRIMARY KEY("project_id","id");--> statement-breakpoint
ALTER TABLE "quarantine" ADD CONSTRAINT "quarantine_project_id_id_pk" PRIMARY KEY("project_id","id");
