SET LOCAL lock_timeout = '10s';
DROP TRIGGER resource_queue_truncate ON resources;
DROP FUNCTION resource_queue_truncate();
DROP TRIGGER resource_queue_delete ON resources;
DROP FUNCTION resource_queue_delete();
CREATE OR REPLACE FUNCTION resource_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE resource_counts;
    RETURN NULL;
END $$;
-- Queue rows whose resource went while the key was not there to take them (triggers
-- disabled, session_replication_role = replica).
DELETE FROM resource_queue q WHERE NOT EXISTS (SELECT 1 FROM resources r WHERE r.id = q.id);
ALTER TABLE resource_queue ADD CONSTRAINT resource_queue_id_fkey FOREIGN KEY (id) REFERENCES resources (id) ON DELETE CASCADE;
SET LOCAL lock_timeout = DEFAULT;
