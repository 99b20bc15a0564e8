DROP INDEX IF EXISTS notification_outbox_identity;
DROP INDEX IF EXISTS source_revisions_applied;
ALTER TABLE source_revisions DROP COLUMN IF EXISTS namespaces;
ALTER TABLE sources DROP COLUMN IF EXISTS pinned_at;
ALTER TABLE sources DROP COLUMN IF EXISTS pin_reason;
ALTER TABLE sources DROP COLUMN IF EXISTS pinned_by;
ALTER TABLE sources DROP COLUMN IF EXISTS pinned_revision;
ALTER TABLE resource_types DROP COLUMN IF EXISTS drift;
ALTER TABLE resources DROP COLUMN IF EXISTS window_override;
