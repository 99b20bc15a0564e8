-- The prune settings a source's standing PruneSkipped refusal was made under (NULL when no
-- refusal stands): a syncer that starts applies the refused revision again only when its own
-- settings differ.
ALTER TABLE sources ADD COLUMN prune_refused_under jsonb;
