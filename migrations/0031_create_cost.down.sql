DROP INDEX IF EXISTS events_source_created;
