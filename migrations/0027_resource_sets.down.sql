DROP INDEX IF EXISTS resources_resource_set;
DROP TABLE IF EXISTS resource_sets;
