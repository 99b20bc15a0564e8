DROP INDEX IF EXISTS events_created, reconcile_history_finished;
ALTER TABLE resources DROP COLUMN IF EXISTS orphaned;
DROP TABLE IF EXISTS replicas, leases;
