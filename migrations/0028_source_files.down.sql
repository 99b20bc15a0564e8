DROP INDEX IF EXISTS resources_source_file;
DROP TABLE IF EXISTS source_files;
