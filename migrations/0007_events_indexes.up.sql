-- Events by source (the source pages, /api/v1/events?source=) and the global list newest
-- first without scanning.
CREATE INDEX IF NOT EXISTS events_source ON events (source, id DESC);
