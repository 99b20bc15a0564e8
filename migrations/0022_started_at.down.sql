ALTER TABLE resources DROP COLUMN IF EXISTS started_at;
