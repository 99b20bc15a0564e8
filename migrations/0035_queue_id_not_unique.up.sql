-- resource_queue's key without a unique index. Every claim and every result writes a new
-- version of its queue row, and each version an entry of every queue index (the claim and the
-- result change the lease and run_at, which the partial indexes read: no update is HOT). An
-- entry of a unique index first checks each version with its key for a live one: while a
-- long transaction elsewhere keeps vacuum from the old versions, that check visits all of
-- them, twice per attempt. A queue row is made only by the insert trigger of resources (0030),
-- one per inserted row, and resources.id is unique: so is resource_queue.id, without the
-- check.
SET LOCAL lock_timeout = '10s'; -- as 0019: give up rather than queue every claim behind a long transaction
ALTER TABLE resource_queue DROP CONSTRAINT resource_queue_pkey;
CREATE INDEX resource_queue_id ON resource_queue (id);
-- Logical replication (a publication of every table) identifies the rows of a table without
-- a primary key by all their columns.
ALTER TABLE resource_queue REPLICA IDENTITY FULL;

-- Rows written into the queue by any other statement (by hand, a copy) are checked whole: the
-- statement fails if some resource then has two queue rows. The insert trigger of resources
-- (a trigger's statement, depth 2) is not checked. Rows written with triggers off are checked
-- by each replica at start (Store.RepairQueue).
CREATE FUNCTION resource_queue_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    twice bigint;
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    SELECT id INTO twice FROM resource_queue GROUP BY id HAVING count(*) > 1 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'resource_queue would hold two rows for resource id %', twice
            USING ERRCODE = 'unique_violation',
                  HINT = 'the insert trigger of resources makes each queue row: write resources, not resource_queue';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER resource_queue_guard AFTER INSERT OR UPDATE OF id ON resource_queue
    FOR EACH STATEMENT EXECUTE FUNCTION resource_queue_guard();
SET LOCAL lock_timeout = DEFAULT;
