ALTER TABLE reconcile_history DROP COLUMN IF EXISTS trace_id;
