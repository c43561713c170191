CREATE TABLE "execution_tombstones" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"change_seq" bigint NOT NULL,
	"writer_id" text NOT NULL,
	"deleted_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "execution_tombstones_project_id_execution_id_pk" PRIMARY KEY("project_id","execution_id")
);
--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "change_seq" bigserial NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "execution_tombstones_changes" ON "execution_tombstones" USING btree ("project_id","change_seq");--> statement-breakpoint
CREATE UNIQUE INDEX "executions_changes" ON "executions" USING btree ("project_id","change_seq");