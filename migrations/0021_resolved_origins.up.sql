-- resolved_origins: which paths of resolved_spec (spec.a.b[0]) took their value from another
-- namespace, and from which ({"spec.host": ["production"]}); NULL when none. The API and the
-- dashboard mask those paths for a caller who may not read one of the namespaces.
ALTER TABLE resources ADD COLUMN resolved_origins jsonb;
