CREATE TABLE "run_contacts" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"writer_id" text NOT NULL,
	"last_contact_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_contacts_project_id_execution_id_writer_id_pk" PRIMARY KEY("project_id","execution_id","writer_id")
);
--> statement-breakpoint
CREATE TABLE "run_takeovers" (
	"project_id" text NOT NULL,
	"execution_id" text NOT NULL,
	"from_seq" integer NOT NULL,
	"winner_writer_id" text NOT NULL,
	"loser_writer_id" text NOT NULL,
	"loser_last_contact_at" timestamp with time zone,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_takeovers_project_id_execution_id_from_seq_pk" PRIMARY KEY("project_id","execution_id","from_seq")
);
--> statement-breakpoint
CREATE INDEX "run_takeovers_loser" ON "run_takeovers" USING btree ("project_id","loser_writer_id","execution_id");