-- An operator's override of the change windows for one resource's next call
-- ({"actor", "reason", "at"}; NULL: none). The call it lets through clears it.
ALTER TABLE resources ADD COLUMN window_override jsonb;

-- A ResourceType's drift policy ({"mode": remediate|detect|notify, "ignore": [JSON pointers]};
-- NULL: remediate, nothing ignored).
ALTER TABLE resource_types ADD COLUMN drift jsonb;

-- A source pinned by an operator applies pinned_revision and keeps newer revisions as
-- pending_revision until unpinned ('' : not pinned).
ALTER TABLE sources ADD COLUMN pinned_revision text NOT NULL DEFAULT '';
ALTER TABLE sources ADD COLUMN pinned_by text NOT NULL DEFAULT '';
ALTER TABLE sources ADD COLUMN pin_reason text NOT NULL DEFAULT '';
ALTER TABLE sources ADD COLUMN pinned_at timestamptz;

-- The namespaces each applied revision has resources in: pinning a revision needs operator
-- rights in them as well as in the source's namespaces today.
ALTER TABLE source_revisions ADD COLUMN namespaces text[] NOT NULL DEFAULT '{}';

-- source history lists a source's applied revisions newest first.
CREATE INDEX source_revisions_applied ON source_revisions (source, applied_at DESC);

-- A resource's timeline reads its notifications.
CREATE INDEX notification_outbox_identity ON notification_outbox (namespace, lower(kind), name, id DESC);
