-- Authorization by namespace: a caller limited to some namespaces sees a source when it has a
-- resource in one of them, and a source's own events (namespace '') only then. That test is
-- one probe of this index per source or event; with the source index alone it read every
-- resource of the source. Built in the migration's transaction, like 0006: writes to
-- resources wait while it builds, about a second per million rows.
CREATE INDEX IF NOT EXISTS resources_source_namespace ON resources (source, namespace);
