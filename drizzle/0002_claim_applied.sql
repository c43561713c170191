ALTER TABLE "claims" ADD COLUMN "applied_at" timestamp with time zone;--> statement-breakpoint
-- claims made before this column existed keep their old meaning (permanent): count them as applied
UPDATE "claims" SET "applied_at" = "claimed_at";
