-- The name search's trigram index holds lower(name), and the search asks lower(name) LIKE:
-- on name itself the planner also takes it for equality (name = x, which gin_trgm_ops
-- supports), where the identity index answers; it prices a GIN probe without its pending list,
-- which every probe reads whole (3.8 ms a probe in the dependency queries once resources has
-- statistics, against 0.05 ms through the identity index). An expression no equality names is
-- never chosen for one. Only where 0005 could build the index (pg_trgm available).
--
-- The new index is built under another name first (writers wait meanwhile, readers do not);
-- the old one is dropped last, so the lock that also stops readers is held only from then to
-- the commit.
SET LOCAL lock_timeout = '10s';

DO $$
BEGIN
    IF to_regclass('resources_name_trgm') IS NOT NULL THEN
        CREATE INDEX resources_name_trgm_lower ON resources USING gin (lower(name) gin_trgm_ops);
        DROP INDEX resources_name_trgm;
        ALTER INDEX resources_name_trgm_lower RENAME TO resources_name_trgm;
    END IF;
END $$;

SET LOCAL lock_timeout = DEFAULT;
