SET LOCAL lock_timeout = '10s';
DROP TRIGGER resource_queue_guard ON resource_queue;
DROP FUNCTION resource_queue_guard();
ALTER TABLE resource_queue REPLICA IDENTITY DEFAULT;
DROP INDEX resource_queue_id;
-- Rows of one id, none made by trueup (rows written with triggers off): the row
-- Store.RepairQueue keeps stays (a leased one, else the first in the table), suspended when
-- any of them was.
LOCK TABLE resource_queue IN EXCLUSIVE MODE;
WITH rows AS (
    SELECT ctid AS at, row_number() OVER (PARTITION BY id ORDER BY lease_owner IS NULL, ctid) AS n,
      bool_or(suspended) OVER (PARTITION BY id) AS suspended
    FROM resource_queue WHERE id IN (SELECT id FROM resource_queue GROUP BY id HAVING count(*) > 1)),
kept AS (UPDATE resource_queue q SET suspended = true FROM rows k WHERE q.ctid = k.at AND k.n = 1 AND k.suspended AND NOT q.suspended)
DELETE FROM resource_queue q USING rows d WHERE q.ctid = d.at AND d.n > 1;
ALTER TABLE resource_queue ADD CONSTRAINT resource_queue_pkey PRIMARY KEY (id);
SET LOCAL lock_timeout = DEFAULT;
