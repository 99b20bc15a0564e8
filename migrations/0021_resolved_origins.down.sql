ALTER TABLE resources DROP COLUMN IF EXISTS resolved_origins;
