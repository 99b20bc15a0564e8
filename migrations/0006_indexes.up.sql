-- RevisionProgress follows a sync every 2 s: it reads one source's resources at one revision,
-- plus that source's resources being deleted. The second index makes the OR of the two an
-- OR of two index scans; with the first alone, the planner still scans the source (and, on a
-- large table, the whole table). Migrations run in one transaction, so these cannot be built
-- CONCURRENTLY: writes to resources wait while they build, about a second per million rows.
CREATE INDEX IF NOT EXISTS resources_source_revision ON resources (source, revision);
CREATE INDEX IF NOT EXISTS resources_source_deleting ON resources (source) WHERE deletion_timestamp IS NOT NULL;
