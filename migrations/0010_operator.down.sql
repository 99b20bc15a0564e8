ALTER TABLE sources DROP COLUMN IF EXISTS pending_revision;
ALTER TABLE sources DROP COLUMN IF EXISTS suspended;
ALTER TABLE reconcile_history DROP COLUMN IF EXISTS actor;
DROP INDEX IF EXISTS resources_suspended;
DROP INDEX IF EXISTS resources_due;
CREATE INDEX resources_due ON resources (run_at) WHERE lease_owner IS NULL AND run_at IS NOT NULL;
ALTER TABLE resources DROP COLUMN IF EXISTS suspended;
ALTER TABLE resources DROP COLUMN IF EXISTS manual_requested_by;
