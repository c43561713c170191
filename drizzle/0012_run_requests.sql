CREATE TABLE "run_requests" (
	"project_id" text NOT NULL,
	"request_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"action" text NOT NULL,
	"checkpoint_id" text NOT NULL,
	"checkpoint_seq" integer NOT NULL,
	"fork_execution_id" text,
	"reason" text,
	"requested_by" text NOT NULL,
	"key_id" text NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"state" text NOT NULL,
	"claimed_by" text,
	"claimed_at" timestamp with time zone,
	"settled_by" text,
	"settled_at" timestamp with time zone,
	"outcome_code" text,
	"outcome_message" text,
	"run_status" text,
	"seq" bigserial NOT NULL,
	CONSTRAINT "run_requests_project_id_request_id_pk" PRIMARY KEY("project_id","request_id")
);
--> statement-breakpoint
ALTER TABLE "run_owners" ADD COLUMN "cancelled_by" text;--> statement-breakpoint
CREATE UNIQUE INDEX "run_requests_seq" ON "run_requests" USING btree ("project_id","seq");--> statement-breakpoint
CREATE INDEX "run_requests_execution" ON "run_requests" USING btree ("project_id","execution_id");--> statement-breakpoint
CREATE UNIQUE INDEX "run_requests_open" ON "run_requests" USING btree ("project_id","execution_id","action") WHERE state = 'open';