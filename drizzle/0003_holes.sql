CREATE TABLE "holes" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"seq" integer NOT NULL,
	"code" text NOT NULL,
	"reason" text NOT NULL,
	"writer_id" text NOT NULL,
	"row_id" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "holes_project_id_execution_id_seq_pk" PRIMARY KEY("project_id","execution_id","seq")
);
--> statement-breakpoint
ALTER TABLE "executions" ADD COLUMN "hole_count" integer DEFAULT 0 NOT NULL;