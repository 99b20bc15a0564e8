-- resolved_origins: which paths of resolved_spec (spec.a.b[0]) took their value from another
-- namespace, and from which ({"spec.host": ["production"]}); {} when none, NULL when not
-- known (a resolved spec stored before origins were recorded). The API and the dashboard mask
-- those paths for a caller who may not read one of the namespaces.
SET LOCAL lock_timeout = '10s'; -- as 0019: give up rather than queue every claim behind a long transaction
ALTER TABLE resources ADD COLUMN resolved_origins jsonb;
SET LOCAL lock_timeout = DEFAULT;
