ALTER TABLE "run_requests" ADD COLUMN "claimed_instance" text;
