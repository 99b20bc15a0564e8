SET LOCAL lock_timeout = '10s';

DO $$
BEGIN
    IF to_regclass('resources_name_trgm') IS NOT NULL THEN
        DROP INDEX resources_name_trgm;
        CREATE INDEX resources_name_trgm ON resources USING gin (name gin_trgm_ops);
    END IF;
END $$;

SET LOCAL lock_timeout = DEFAULT;
