ALTER TABLE "quarantine" ADD COLUMN "payload_hash" text;--> statement-breakpoint
CREATE INDEX "pending_interrupts_checkpoint" ON "pending_interrupts" USING btree ("project_id","checkpoint_id");--> statement-breakpoint
CREATE UNIQUE INDEX "quarantine_once" ON "quarantine" USING btree ("project_id","writer_id","payload_hash");