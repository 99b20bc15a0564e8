SET LOCAL lock_timeout = '10s';

DO $$
BEGIN
    IF to_regclass('resources_name_trgm') IS NOT NULL THEN
        CREATE INDEX resources_name_trgm_plain ON resources USING gin (name gin_trgm_ops);
        DROP INDEX resources_name_trgm;
        ALTER INDEX resources_name_trgm_plain RENAME TO resources_name_trgm;
    END IF;
END $$;

SET LOCAL lock_timeout = DEFAULT;
