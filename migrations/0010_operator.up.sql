-- Operator commands (issue 11): manual reconcile, suspend and resume.
--
-- manual_requested_by names who asked for a reconcile now (an API caller's actor, or
-- git:<revision> for the trueup.dev/reconcile-requested-at annotation); the claim that
-- takes the row clears it and the attempt's history row records it as trigger manual.
ALTER TABLE resources ADD COLUMN manual_requested_by text;
-- A suspended resource keeps its desired state current (ingest still writes generations and
-- run_at) but is never claimed: the claim's partial index leaves it out, so the claim stays
-- one indexed statement and resume needs no rescheduling (what was due is due at once).
ALTER TABLE resources ADD COLUMN suspended boolean NOT NULL DEFAULT false;
DROP INDEX IF EXISTS resources_due;
CREATE INDEX resources_due ON resources (run_at) WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended;
CREATE INDEX resources_suspended ON resources (source) WHERE suspended;

-- Who caused an attempt besides the engine (a manual reconcile's actor).
ALTER TABLE reconcile_history ADD COLUMN actor text NOT NULL DEFAULT '';

-- A suspended source keeps polling and records what it would apply, but applies nothing.
ALTER TABLE sources ADD COLUMN suspended boolean NOT NULL DEFAULT false;
ALTER TABLE sources ADD COLUMN pending_revision text NOT NULL DEFAULT '';
