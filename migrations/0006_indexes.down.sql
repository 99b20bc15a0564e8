DROP INDEX IF EXISTS resources_source_deleting;
DROP INDEX IF EXISTS resources_source_revision;
