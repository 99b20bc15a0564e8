-- Name search on the dashboard: a trigram index where pg_trgm is available (it ships with
-- Debian's PostgreSQL; managed services may lack it, and the search then scans instead).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
        CREATE INDEX IF NOT EXISTS resources_name_trgm ON resources USING gin (name gin_trgm_ops);
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'pg_trgm not installed (insufficient privilege): dashboard name search scans';
END $$;

-- Counts by phase come from index-only scans, which need a fresh visibility map: vacuum the
-- resources table after 2% of it changed rather than 20%.
ALTER TABLE resources SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
