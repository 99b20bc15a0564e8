DROP INDEX IF EXISTS resources_blocked;
DROP INDEX IF EXISTS resources_due;
CREATE INDEX resources_due ON resources (run_at) WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended;
ALTER TABLE resources
  DROP COLUMN has_deps,
  DROP COLUMN blocked,
  DROP COLUMN inputs_hash,
  DROP COLUMN resolved_spec,
  DROP COLUMN dependency_by;
DROP TABLE resource_edges;
