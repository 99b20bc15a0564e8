ALTER TABLE sources DROP COLUMN IF EXISTS prune_allow_empty;
ALTER TABLE sources DROP COLUMN IF EXISTS prune_max_fraction;
ALTER TABLE sources DROP COLUMN IF EXISTS prune_enabled;
