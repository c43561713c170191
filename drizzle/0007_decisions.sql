CREATE TABLE "decisions" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"checkpoint_id" text NOT NULL,
	"decision_id" text NOT NULL,
	"approved" boolean NOT NULL,
	"metadata" jsonb NOT NULL,
	"decided_by" text NOT NULL,
	"source" text NOT NULL,
	"decided_at" text NOT NULL,
	"writer_id" text,
	"feed_seq" bigserial NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "decisions_project_id_checkpoint_id_pk" PRIMARY KEY("project_id","checkpoint_id")
);
--> statement-breakpoint
ALTER TABLE "claims" ADD COLUMN "decision_id" text;--> statement-breakpoint
ALTER TABLE "pending_interrupts" ADD COLUMN "opened_seq" bigserial NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "decisions_decision_id" ON "decisions" USING btree ("project_id","decision_id");--> statement-breakpoint
CREATE UNIQUE INDEX "decisions_feed" ON "decisions" USING btree ("project_id","feed_seq");--> statement-breakpoint
CREATE INDEX "decisions_execution" ON "decisions" USING btree ("project_id","execution_id");--> statement-breakpoint
CREATE INDEX "claims_held" ON "claims" USING btree ("project_id") WHERE applied_at IS NULL;--> statement-breakpoint
CREATE INDEX "pending_interrupts_open" ON "pending_interrupts" USING btree ("project_id","opened_seq") WHERE state = 'open';