CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"hash" text NOT NULL,
	"scopes" text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "checkpoints" (
	"project_id" text NOT NULL,
	"id" text NOT NULL,
	"execution_id" text NOT NULL,
	"seq" integer NOT NULL,
	"node_id" text NOT NULL,
	"step" text NOT NULL,
	"status" text NOT NULL,
	"agent_path" text NOT NULL,
	"writer_id" text NOT NULL,
	"created_at" text NOT NULL,
	"row" jsonb NOT NULL,
	"hash" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "checkpoints_project_id_id_pk" PRIMARY KEY("project_id","id")
);
--> statement-breakpoint
CREATE TABLE "claim_conflicts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"checkpoint_id" text NOT NULL,
	"winner_writer_id" text NOT NULL,
	"loser_writer_id" text NOT NULL,
	"source" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "claims" (
	"project_id" text NOT NULL,
	"checkpoint_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"writer_id" text NOT NULL,
	"source" text NOT NULL,
	"claimed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "claims_project_id_checkpoint_id_pk" PRIMARY KEY("project_id","checkpoint_id")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"project_id" text NOT NULL,
	"id" text NOT NULL,
	"kind" text NOT NULL,
	"execution_id" text NOT NULL,
	"writer_id" text NOT NULL,
	"hash" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "events_project_id_id_pk" PRIMARY KEY("project_id","id")
);
--> statement-breakpoint
CREATE TABLE "executions" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"status" text NOT NULL,
	"row_count" integer DEFAULT 0 NOT NULL,
	"last_seq" integer DEFAULT -1 NOT NULL,
	"last_node_id" text,
	"last_step" text,
	"last_status" text,
	"writer_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "executions_project_id_execution_id_pk" PRIMARY KEY("project_id","execution_id")
);
--> statement-breakpoint
CREATE TABLE "idempotency" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"key" text NOT NULL,
	"row" jsonb NOT NULL,
	"hash" text NOT NULL,
	"writer_id" text NOT NULL,
	CONSTRAINT "idempotency_project_id_execution_id_key_pk" PRIMARY KEY("project_id","execution_id","key")
);
--> statement-breakpoint
CREATE TABLE "pending_interrupts" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"checkpoint_id" text NOT NULL,
	"row" jsonb NOT NULL,
	"state" text NOT NULL,
	"claimed_by" text,
	"claimed_at" timestamp with time zone,
	CONSTRAINT "pending_interrupts_project_id_execution_id_pk" PRIMARY KEY("project_id","execution_id")
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "projects_name_unique" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "quarantine" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"writer_id" text NOT NULL,
	"row_id" text,
	"kind" text,
	"execution_id" text,
	"code" text NOT NULL,
	"reason" text NOT NULL,
	"payload" text NOT NULL,
	"truncated" boolean DEFAULT false NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "writers" (
	"project_id" text NOT NULL,
	"writer_id" text NOT NULL,
	"first_seen" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen" timestamp with time zone DEFAULT now() NOT NULL,
	"rows_acked" bigint DEFAULT 0 NOT NULL,
	"rows_rejected" bigint DEFAULT 0 NOT NULL,
	"backlog_rows" bigint,
	"backlog_bytes" bigint,
	"oldest_pending_at" text,
	CONSTRAINT "writers_project_id_writer_id_pk" PRIMARY KEY("project_id","writer_id")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_project" ON "api_keys" USING btree ("project_id");--> statement-breakpoint
CREATE UNIQUE INDEX "checkpoints_execution_seq" ON "checkpoints" USING btree ("project_id","execution_id","seq");--> statement-breakpoint
CREATE INDEX "claim_conflicts_execution" ON "claim_conflicts" USING btree ("project_id","execution_id");--> statement-breakpoint
CREATE INDEX "events_execution" ON "events" USING btree ("project_id","execution_id");--> statement-breakpoint
CREATE INDEX "executions_recent" ON "executions" USING btree ("project_id","updated_at" DESC NULLS LAST,"execution_id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "executions_status_recent" ON "executions" USING btree ("project_id","status","updated_at" DESC NULLS LAST,"execution_id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "quarantine_project" ON "quarantine" USING btree ("project_id","id");--> statement-breakpoint
CREATE INDEX "quarantine_execution" ON "quarantine" USING btree ("project_id","execution_id") WHERE execution_id IS NOT NULL;