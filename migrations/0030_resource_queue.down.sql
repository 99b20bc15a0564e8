SET LOCAL lock_timeout = '10s';
ALTER TABLE resources
  ADD COLUMN run_at timestamptz,
  ADD COLUMN lease_owner text,
  ADD COLUMN lease_token uuid,
  ADD COLUMN lease_expires_at timestamptz,
  ADD COLUMN claimed_at timestamptz,
  ADD COLUMN started_at timestamptz,
  ADD COLUMN dirty boolean NOT NULL DEFAULT false,
  ADD COLUMN suspended boolean NOT NULL DEFAULT false,
  ADD COLUMN blocked boolean NOT NULL DEFAULT false,
  ADD COLUMN manual_requested_by text,
  ADD COLUMN dependency_by text;
UPDATE resources r SET run_at = q.run_at, lease_owner = q.lease_owner, lease_token = q.lease_token,
    lease_expires_at = q.lease_expires_at, claimed_at = q.claimed_at, started_at = q.started_at, dirty = q.dirty,
    suspended = q.suspended, blocked = q.blocked, manual_requested_by = q.manual_requested_by, dependency_by = q.dependency_by
  FROM resource_queue q WHERE q.id = r.id;
DROP TRIGGER resource_queue_insert ON resources;
DROP FUNCTION resource_queue_insert();
DROP TABLE resource_queue;
CREATE INDEX resources_due ON resources (run_at) WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended AND NOT blocked;
CREATE INDEX resources_lease ON resources (lease_expires_at) WHERE lease_owner IS NOT NULL;
CREATE INDEX resources_blocked ON resources (id) WHERE blocked;
CREATE INDEX resources_suspended ON resources (source) WHERE suspended;
CREATE INDEX IF NOT EXISTS resources_phase ON resources (phase);
ALTER TABLE resources RESET (fillfactor);
SET LOCAL lock_timeout = DEFAULT;
