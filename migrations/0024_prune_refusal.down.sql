ALTER TABLE sources DROP COLUMN IF EXISTS prune_refused_under;
