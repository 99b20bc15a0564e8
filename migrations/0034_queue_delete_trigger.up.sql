-- A queue row goes with its resources row through a statement trigger instead of a foreign
-- key: the key's check of every inserted queue row (a lookup of its resources row, row by
-- row) was a quarter of what a bulk insert of resources cost, and the rows it checked are the
-- ones the insert trigger of 0030 has just made from the inserted resources. A delete or a
-- truncate of resources takes the queue rows of the rows it removes, as the key's ON DELETE
-- CASCADE did.
SET LOCAL lock_timeout = '10s'; -- as 0019: give up rather than queue every claim behind a long transaction
ALTER TABLE resource_queue DROP CONSTRAINT resource_queue_id_fkey;

CREATE FUNCTION resource_queue_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM resource_queue q USING deleted_rows d WHERE q.id = d.id;
    RETURN NULL;
END $$;
CREATE TRIGGER resource_queue_delete AFTER DELETE ON resources
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION resource_queue_delete();

CREATE FUNCTION resource_queue_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE resource_queue;
    RETURN NULL;
END $$;
CREATE TRIGGER resource_queue_truncate AFTER TRUNCATE ON resources
    FOR EACH STATEMENT EXECUTE FUNCTION resource_queue_truncate();

-- Queue rows whose resource is gone (none should be: the key kept them out until now).
DELETE FROM resource_queue q WHERE NOT EXISTS (SELECT 1 FROM resources r WHERE r.id = q.id);
SET LOCAL lock_timeout = DEFAULT;
