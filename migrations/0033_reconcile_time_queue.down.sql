SET LOCAL lock_timeout = '10s';
ALTER TABLE resources ADD COLUMN last_reconcile_time timestamptz;
UPDATE resources r SET last_reconcile_time = q.last_reconcile_time
    FROM resource_queue q WHERE q.id = r.id AND q.last_reconcile_time IS NOT NULL;
ALTER TABLE resource_queue DROP COLUMN last_reconcile_time;
SET LOCAL lock_timeout = DEFAULT;
