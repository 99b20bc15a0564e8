-- A queue row goes with its resources row through statement triggers instead of a foreign
-- key: the key checks every inserted queue row (a lookup of its resources row, row by row),
-- a quarter of what a bulk insert of resources costs, for the rows the insert trigger of 0030
-- makes from the inserted resources. A delete or a truncate of resources takes the queue rows
-- of the rows it removes, as the key's ON DELETE CASCADE does.
SET LOCAL lock_timeout = '10s'; -- as 0019: give up rather than queue every claim behind a long transaction
ALTER TABLE resource_queue DROP CONSTRAINT resource_queue_id_fkey;

-- Planned at each call (EXECUTE): a plan cached for the session's first delete (a hash join
-- of the whole queue after a large one) would serve its one-row deletes too.
CREATE FUNCTION resource_queue_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'DELETE FROM resource_queue q USING deleted_rows d WHERE q.id = d.id';
    RETURN NULL;
END $$;
CREATE TRIGGER resource_queue_delete AFTER DELETE ON resources
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION resource_queue_delete();

-- A TRUNCATE that names the queue (or resource_counts) beside resources has emptied it
-- already, and holds it open: truncating it again would fail.
CREATE FUNCTION resource_queue_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM resource_queue) THEN
        TRUNCATE resource_queue;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER resource_queue_truncate AFTER TRUNCATE ON resources
    FOR EACH STATEMENT EXECUTE FUNCTION resource_queue_truncate();

CREATE OR REPLACE FUNCTION resource_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM resource_counts) THEN
        TRUNCATE resource_counts;
    END IF;
    RETURN NULL;
END $$;
SET LOCAL lock_timeout = DEFAULT;
