-- Dependencies between resources (DESIGN §4, Dependencies). One row per edge: the resource
-- resource_id depends on the resource named (dep_namespace, dep_kind, dep_name), which may
-- not exist (yet). explicit: listed under dependsOn; outputs: the output paths its spec
-- references ("a.b" for ${{ Kind/name.outputs.a.b }}), empty for a plain dependsOn.
CREATE TABLE resource_edges (
  resource_id   bigint NOT NULL REFERENCES resources (id) ON DELETE CASCADE,
  dep_namespace text NOT NULL,
  dep_kind      text NOT NULL,
  dep_name      text NOT NULL,
  explicit      boolean NOT NULL DEFAULT false,
  outputs       text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (resource_id, dep_namespace, dep_kind, dep_name)
);
-- Dependents of a resource: who waits for it, who re-runs when its outputs change.
CREATE INDEX resource_edges_dep ON resource_edges (dep_namespace, lower(dep_kind), dep_name);

-- has_deps: the resource has edges (the claim checks its dependencies only then).
-- blocked: waiting for a dependency (not Ready at its generation) or, when deleting, for its
-- dependents to go; a blocked row is not in resources_due, so claims never scan it.
-- inputs_hash: hash of the referenced outputs the last call resolved (graph.InputsHash); a
-- dependency whose referenced outputs change makes it differ, and the dependent runs again.
-- resolved_spec: the spec as last called, references resolved (secrets still as references
-- or markers). dependency_by: the dependencies whose outputs changed, for the next run's
-- history (trigger dependency).
ALTER TABLE resources
  ADD COLUMN has_deps boolean NOT NULL DEFAULT false,
  ADD COLUMN blocked boolean NOT NULL DEFAULT false,
  ADD COLUMN inputs_hash text,
  ADD COLUMN resolved_spec jsonb,
  ADD COLUMN dependency_by text;

DROP INDEX IF EXISTS resources_due;
CREATE INDEX resources_due ON resources (run_at) WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended AND NOT blocked;
CREATE INDEX resources_blocked ON resources (id) WHERE blocked;
