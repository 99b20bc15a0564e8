-- Migrations run in one transaction, so these cannot be built CONCURRENTLY: while an index on
-- events builds, event writes wait (as 0006 says of resources), and on resources every write
-- waits; give up rather than queue every writer behind a long transaction (as 0019).
SET LOCAL lock_timeout = '10s';

-- A resource created in bulk shares its source's Created event (name '') and its created_at:
-- its timeline and its events find the event here, among the source's few events of its own,
-- not among every event of the same transaction (a revision's SpecChanged events share that
-- created_at too). name = '', not namespace = '': a cluster-scoped resource's events have no
-- namespace either, and there may be many.
CREATE INDEX IF NOT EXISTS events_source_created ON events (source, created_at) WHERE name = '';

-- The list's ?phase=Ready: right after a large first sync every row is Pending, and without
-- an index of the Ready rows the filter reads the whole table to find none (103 ms at 50,000
-- rows, 1.1 s at 200,000). Created rows are Pending, so it costs an insert nothing; it is in
-- the list's order, so a page of Ready rows stops after its limit.
CREATE INDEX IF NOT EXISTS resources_ready ON resources (namespace, lower(kind), name) WHERE phase = 'Ready';

SET LOCAL lock_timeout = DEFAULT;
