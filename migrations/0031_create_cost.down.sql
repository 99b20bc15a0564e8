DROP INDEX IF EXISTS resources_ready;
DROP INDEX IF EXISTS events_source_created;
