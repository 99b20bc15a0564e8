-- The phase's indexes live on a narrow table of their own, resource_phases, kept by statement
-- triggers; resources has none on the phase or any other status column. A status write that
-- moves the phase (Pending to Ready on a first reconcile) is then a HOT update whenever its
-- page has room, with no entry in the many indexes of the wide row; with the phase's partial
-- indexes on resources it took an entry in every one of them. A result batch rewrites the
-- rows of a page at once (the rows of a first sync are reconciled in the order they were
-- written), so the fillfactor of 50 keeps room on a page for a new version of each of its
-- rows. Pages already written keep their rows; new rows, and new versions that leave their
-- page, go to pages filled up to it.
SET LOCAL lock_timeout = '10s'; -- as 0019: give up rather than queue every claim behind a long transaction
-- No write of resources comes between the copy below and the triggers (as 0029's counts).
LOCK TABLE resources IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE resource_phases (
    id     bigint PRIMARY KEY,
    source text NOT NULL,
    phase  text NOT NULL
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

INSERT INTO resource_phases (id, source, phase) SELECT id, source, phase FROM resources;

-- The phases other than Ready by source (the overview's and a source's counts, recent
-- failures, the list's filter of such a phase), and the Ready rows (the list's ?phase=Ready
-- right after a large first sync, when none are).
CREATE INDEX resource_phases_unsettled ON resource_phases (source, phase) WHERE phase <> 'Ready';
CREATE INDEX resource_phases_ready ON resource_phases (id) WHERE phase = 'Ready';

CREATE FUNCTION resource_phases_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO resource_phases (id, source, phase) SELECT id, source, phase FROM phased_rows;
    RETURN NULL;
END $$;
CREATE TRIGGER resource_phases_insert AFTER INSERT ON resources
    REFERENCING NEW TABLE AS phased_rows FOR EACH STATEMENT EXECUTE FUNCTION resource_phases_insert();

-- Every update of resources: a transition table cannot go with a column list. A statement
-- that wrote no row returns at once; the others are planned at each call (EXECUTE), as 0034's
-- delete: a plan cached for a large first statement (a hash join of the whole table) would
-- serve the one-row writes after it.
CREATE FUNCTION resource_phases_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM phased_rows) THEN
        RETURN NULL;
    END IF;
    EXECUTE 'UPDATE resource_phases p SET phase = n.phase, source = n.source FROM phased_rows n
        WHERE p.id = n.id AND (p.phase <> n.phase OR p.source <> n.source)';
    RETURN NULL;
END $$;
CREATE TRIGGER resource_phases_update AFTER UPDATE ON resources
    REFERENCING NEW TABLE AS phased_rows FOR EACH STATEMENT EXECUTE FUNCTION resource_phases_update();

CREATE FUNCTION resource_phases_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'DELETE FROM resource_phases p USING phased_rows d WHERE p.id = d.id';
    RETURN NULL;
END $$;
CREATE TRIGGER resource_phases_delete AFTER DELETE ON resources
    REFERENCING OLD TABLE AS phased_rows FOR EACH STATEMENT EXECUTE FUNCTION resource_phases_delete();

-- As resource_queue_truncate (0034): a TRUNCATE that names the table too has emptied it.
CREATE FUNCTION resource_phases_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM resource_phases) THEN
        TRUNCATE resource_phases;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER resource_phases_truncate AFTER TRUNCATE ON resources
    FOR EACH STATEMENT EXECUTE FUNCTION resource_phases_truncate();

DROP INDEX IF EXISTS resources_ready;
DROP INDEX IF EXISTS resources_unsettled;
ALTER TABLE resources SET (fillfactor = 50);
SET LOCAL lock_timeout = DEFAULT;
