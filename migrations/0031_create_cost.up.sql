-- A phase is filtered in three places: the overview's and a source's counts (phase <> 'Ready'),
-- the recent failures (phase = 'Failed') and the list's phase filter, which adds
-- phase <> 'Ready' for any phase but Ready. Each is served by resources_unsettled (source,
-- phase) WHERE phase <> 'Ready'; a Ready filter is most rows and walks the list's order. The
-- index on phase alone is one more entry to write for every created resource, for nothing.
DROP INDEX IF EXISTS resources_phase;

-- A resource created in bulk shares its source's Created event (namespace '') and its
-- created_at: its timeline finds the event here, among the source's few events of its own,
-- not among every event of the same transaction (a revision's SpecChanged events share
-- that created_at too).
CREATE INDEX IF NOT EXISTS events_source_created ON events (source, created_at) WHERE namespace = '';
