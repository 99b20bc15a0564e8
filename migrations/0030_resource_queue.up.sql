-- The engine's queue: what is due when, who holds the lease, and what holds a resource back
-- (suspended, blocked) live in a narrow table of their own. A claim, a lease renewal and a
-- release write only this row and its few indexes; the wide resources row (spec, labels,
-- conditions, and its many indexes) is written by a result alone, and a result that
-- leaves the phase as it was changes no indexed column there (a HOT update, room for it kept
-- by the fillfactor).
-- run_at: when the row is due (NULL: nothing due). lease_*: the replica running it (claimed_at
-- when claimed, started_at when its call started). dirty: desired state changed while leased.
-- manual_requested_by, dependency_by: why the next run runs (cleared by the claim).
SET LOCAL lock_timeout = '10s'; -- as 0019: give up rather than queue every claim behind a long transaction
CREATE TABLE resource_queue (
    id                  bigint PRIMARY KEY REFERENCES resources (id) ON DELETE CASCADE,
    run_at              timestamptz,
    lease_owner         text,
    lease_token         uuid,
    lease_expires_at    timestamptz,
    claimed_at          timestamptz,
    started_at          timestamptz,
    dirty               boolean NOT NULL DEFAULT false,
    suspended           boolean NOT NULL DEFAULT false,
    blocked             boolean NOT NULL DEFAULT false,
    manual_requested_by text,
    dependency_by       text
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

INSERT INTO resource_queue (id, run_at, lease_owner, lease_token, lease_expires_at, claimed_at, started_at, dirty,
    suspended, blocked, manual_requested_by, dependency_by)
  SELECT id, run_at, lease_owner, lease_token, lease_expires_at, claimed_at, started_at, dirty,
    suspended, blocked, manual_requested_by, dependency_by
  FROM resources;

CREATE INDEX resource_queue_due ON resource_queue (run_at) WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended AND NOT blocked;
CREATE INDEX resource_queue_lease ON resource_queue (lease_expires_at) WHERE lease_owner IS NOT NULL;
CREATE INDEX resource_queue_blocked ON resource_queue (id) WHERE blocked;

-- Every resources row has its queue row: a row created is due at once, and one with
-- dependencies waits (blocked) until they are looked at (RefreshDependencies after the apply).
CREATE FUNCTION resource_queue_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO resource_queue (id, run_at, blocked) SELECT id, now(), has_deps FROM queued_rows;
    RETURN NULL;
END $$;
CREATE TRIGGER resource_queue_insert AFTER INSERT ON resources
    REFERENCING NEW TABLE AS queued_rows FOR EACH STATEMENT EXECUTE FUNCTION resource_queue_insert();

-- Their indexes (resources_due, resources_lease, resources_blocked, resources_suspended) go
-- with them.
ALTER TABLE resources DROP COLUMN run_at, DROP COLUMN lease_owner, DROP COLUMN lease_token, DROP COLUMN lease_expires_at,
  DROP COLUMN claimed_at, DROP COLUMN started_at, DROP COLUMN dirty, DROP COLUMN suspended, DROP COLUMN blocked,
  DROP COLUMN manual_requested_by, DROP COLUMN dependency_by;

-- A phase filter other than Ready reads resources_unsettled; the index on phase alone was
-- one more entry for every status write that changes the phase.
DROP INDEX IF EXISTS resources_phase;

-- Room on each page for a status write's new version of the row beside the old one (HOT).
ALTER TABLE resources SET (fillfactor = 80);
SET LOCAL lock_timeout = DEFAULT;
