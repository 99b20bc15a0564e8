ALTER TABLE resources RESET (autovacuum_vacuum_scale_factor, autovacuum_analyze_scale_factor);
DROP INDEX IF EXISTS resources_name_trgm;
