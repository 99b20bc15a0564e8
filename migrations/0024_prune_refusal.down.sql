ALTER TABLE sources DROP COLUMN prune_refused_under;
