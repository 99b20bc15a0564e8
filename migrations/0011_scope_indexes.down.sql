DROP INDEX IF EXISTS resources_source_namespace;
