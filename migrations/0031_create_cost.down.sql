DROP INDEX IF EXISTS events_source_created;
CREATE INDEX IF NOT EXISTS resources_phase ON resources (phase);
