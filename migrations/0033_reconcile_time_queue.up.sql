-- The time of a resource's last reconcile lives in its narrow queue row, which every result
-- writes anyway: a resync that finds the resource as it was writes no version of the wide
-- resources row (no dead version, no index entry while a long transaction elsewhere keeps
-- vacuum from them).
SET LOCAL lock_timeout = '10s'; -- as 0019: give up rather than queue every claim behind a long transaction
ALTER TABLE resource_queue ADD COLUMN last_reconcile_time timestamptz;
UPDATE resource_queue q SET last_reconcile_time = r.last_reconcile_time
    FROM resources r WHERE r.id = q.id AND r.last_reconcile_time IS NOT NULL;
ALTER TABLE resources DROP COLUMN last_reconcile_time;
SET LOCAL lock_timeout = DEFAULT;
