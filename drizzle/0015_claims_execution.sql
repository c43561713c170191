CREATE INDEX "claims_execution" ON "claims" USING btree ("project_id","execution_id");
