-- Failover from PostgreSQL itself: each replica holds a session-level advisory lock
-- (pg_advisory_lock(liveness_class, liveness_key)) on a dedicated connection for its lifetime;
-- a key whose lock is no longer held in pg_locks is a replica whose session ended.
ALTER TABLE replicas ADD COLUMN liveness_key integer;
-- When the current lease was taken: an attempt cut short is recorded in history from then.
ALTER TABLE resources ADD COLUMN claimed_at timestamptz;
