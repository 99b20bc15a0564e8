-- What the controller config says of a source's pruning (prune: {enabled, maxFraction,
-- allowEmpty}), written when the source is registered, so that the API shows it.
ALTER TABLE sources ADD COLUMN prune_enabled boolean NOT NULL DEFAULT true;
ALTER TABLE sources ADD COLUMN prune_max_fraction double precision NOT NULL DEFAULT 0;
ALTER TABLE sources ADD COLUMN prune_allow_empty boolean NOT NULL DEFAULT false;
