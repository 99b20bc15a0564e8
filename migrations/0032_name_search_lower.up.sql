-- The name search's trigram index holds lower(name), and the search asks lower(name) LIKE:
-- on name itself the planner also takes it for equality (name = x, which gin_trgm_ops
-- supports), where the identity index answers; it prices a GIN probe without its pending list,
-- which every probe reads whole (3.8 ms a probe in the dependency queries once resources has
-- statistics, against 0.05 ms through the identity index). An expression no equality names is
-- never chosen for one. Only where 0005 could build the index (pg_trgm available).
SET LOCAL lock_timeout = '10s';

DO $$
BEGIN
    IF to_regclass('resources_name_trgm') IS NOT NULL THEN
        DROP INDEX resources_name_trgm;
        CREATE INDEX resources_name_trgm ON resources USING gin (lower(name) gin_trgm_ops);
    END IF;
END $$;

SET LOCAL lock_timeout = DEFAULT;
