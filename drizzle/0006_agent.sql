ALTER TABLE "executions" ADD COLUMN "agent" text;--> statement-breakpoint
UPDATE "executions" e SET "agent" = (SELECT c."agent_path" FROM "checkpoints" c WHERE c."project_id" = e."project_id" AND c."execution_id" = e."execution_id" ORDER BY c."seq" LIMIT 1);
