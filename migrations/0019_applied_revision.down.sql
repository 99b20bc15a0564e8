ALTER TABLE resources DROP COLUMN IF EXISTS applied_revision, DROP COLUMN IF EXISTS applied_spec, DROP COLUMN IF EXISTS applied_origins;
