-- Resources per source, kept by triggers, so that the dashboard's overview counts a million
-- resources without reading them (counting the source index took 150–500 ms at that size).
-- The triggers only append: a row is what one statement added (positive) or removed
-- (negative) for one source, so concurrent writers never wait on each other here; retention
-- folds the rows into one per source. A phase change is no insert or delete: the reconciler's
-- status writes fire none of them.
CREATE TABLE resource_counts (
    id     bigserial PRIMARY KEY,
    source text   NOT NULL,
    n      bigint NOT NULL
);

CREATE FUNCTION resource_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO resource_counts (source, n) SELECT source, count(*) FROM counted_rows GROUP BY source;
    RETURN NULL;
END $$;

CREATE FUNCTION resource_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO resource_counts (source, n) SELECT source, -count(*) FROM counted_rows GROUP BY source;
    RETURN NULL;
END $$;

CREATE FUNCTION resource_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO resource_counts (source, n) VALUES (OLD.source, -1), (NEW.source, 1);
    RETURN NULL;
END $$;

-- TRUNCATE, not DELETE: it waits for a fold's transaction to end and then empties the table,
-- where a DELETE would skip the rows a fold inserts concurrently and leave a count behind.
CREATE FUNCTION resource_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE resource_counts;
    RETURN NULL;
END $$;

CREATE TRIGGER resource_counts_insert AFTER INSERT ON resources
    REFERENCING NEW TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION resource_counts_insert();
CREATE TRIGGER resource_counts_delete AFTER DELETE ON resources
    REFERENCING OLD TABLE AS counted_rows FOR EACH STATEMENT EXECUTE FUNCTION resource_counts_delete();
-- Transition tables take no column list: a row trigger whose condition PostgreSQL checks
-- without calling the function (an upsert that keeps the source costs nothing).
CREATE TRIGGER resource_counts_move AFTER UPDATE OF source ON resources
    FOR EACH ROW WHEN (OLD.source IS DISTINCT FROM NEW.source) EXECUTE FUNCTION resource_counts_move();
CREATE TRIGGER resource_counts_truncate AFTER TRUNCATE ON resources
    FOR EACH STATEMENT EXECUTE FUNCTION resource_counts_truncate();

-- The triggers hold a lock on resources until the migration commits: no write comes between
-- this count and them.
INSERT INTO resource_counts (source, n) SELECT source, count(*) FROM resources GROUP BY source;

-- The phases other than Ready are few rows at a time: the overview counts them from this
-- index alone (the phase index made it read their rows, 45 ms cold at a million).
CREATE INDEX IF NOT EXISTS resources_unsettled ON resources (source, phase) WHERE phase <> 'Ready';

-- A kind filter reads its own rows in the lists' order (namespace, name within one kind): a
-- kind few resources have read the whole identity index (70 ms at a million).
CREATE INDEX IF NOT EXISTS resources_kind ON resources (lower(kind), namespace, name);

-- Label selectors' equalities are containment (labels @> {"k": "v"}): a label few resources
-- carry is found through this index instead of a walk of every row (2.8 s at a million); a
-- common one still walks the identity index and stops after the page.
CREATE INDEX IF NOT EXISTS resources_labels ON resources USING gin (labels jsonb_path_ops);

-- A source's count of orphaned resources (GET /api/v1/sources/{name}?counts=true) reads
-- these few rows alone.
CREATE INDEX IF NOT EXISTS resources_orphaned ON resources (source) WHERE orphaned;

-- A source's rows alone (the apply's load, its count of active rows, its namespaces) are read
-- through the leading column of resources_source_revision, resources_source_namespace or
-- resources_source_file as well, and the totals per source come from resource_counts: the
-- index on source alone is one more to write on every insert, for nothing.
DROP INDEX IF EXISTS resources_source;
