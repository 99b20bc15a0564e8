SET LOCAL lock_timeout = '10s';
ALTER TABLE resource_queue REPLICA IDENTITY DEFAULT;
DROP INDEX resource_queue_id;
-- Rows of one id, none made by trueup (a row copied by hand): one of them stays.
DELETE FROM resource_queue a USING resource_queue b WHERE a.id = b.id AND a.ctid < b.ctid;
ALTER TABLE resource_queue ADD CONSTRAINT resource_queue_pkey PRIMARY KEY (id);
SET LOCAL lock_timeout = DEFAULT;
