-- ADD COLUMN takes an ACCESS EXCLUSIVE lock on resources: waiting behind a long transaction
-- would queue every reconcile and claim behind it. Give up instead (the migration is
-- retried at the next start); the rest of the migrations' transaction keeps the default.
SET LOCAL lock_timeout = '10s';

-- What the resource's last successful reconcile was called with (NULL: never applied, and
-- rows written before): the revision, and the spec with its output references resolved
-- (secrets not revealed). A delete calls the action with both: the module or scripts that
-- applied the resource, with the inputs they applied, are what can delete it, whatever the
-- removing commit, or a later desired state that never applied, holds. applied_origins are
-- the paths of applied_spec whose value came from other namespaces (as resolved_origins are
-- of resolved_spec; {} when none): the delete's messages are scrubbed of those values.
ALTER TABLE resources ADD COLUMN applied_revision text, ADD COLUMN applied_spec jsonb, ADD COLUMN applied_origins jsonb;

SET LOCAL lock_timeout = DEFAULT;
