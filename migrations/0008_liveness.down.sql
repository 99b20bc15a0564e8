ALTER TABLE resources DROP COLUMN claimed_at;
ALTER TABLE replicas DROP COLUMN liveness_key;
