-- A resource created in bulk shares its source's Created event (namespace '') and its
-- created_at: its timeline finds the event here, among the source's few events of its own,
-- not among every event of the same transaction (a revision's SpecChanged events share
-- that created_at too).
CREATE INDEX IF NOT EXISTS events_source_created ON events (source, created_at) WHERE namespace = '';
