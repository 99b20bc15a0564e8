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
SET LOCAL lock_timeout = DEFAULT;
