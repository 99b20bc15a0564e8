SET LOCAL lock_timeout = '10s';
DROP TRIGGER resource_queue_truncate ON resources;
DROP FUNCTION resource_queue_truncate();
DROP TRIGGER resource_queue_delete ON resources;
DROP FUNCTION resource_queue_delete();
DELETE FROM resource_queue q WHERE NOT EXISTS (SELECT 1 FROM resources r WHERE r.id = q.id);
ALTER TABLE resource_queue ADD CONSTRAINT resource_queue_id_fkey FOREIGN KEY (id) REFERENCES resources (id) ON DELETE CASCADE;
SET LOCAL lock_timeout = DEFAULT;
