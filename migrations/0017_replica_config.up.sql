-- Each replica's config (issue 14 point 4): the file it runs (hash, when loaded, at start or
-- by a reload) and its last refused reload's errors ('' once a reload is applied).
ALTER TABLE replicas ADD COLUMN config_hash text NOT NULL DEFAULT '',
  ADD COLUMN config_loaded_at timestamptz,
  ADD COLUMN config_error text NOT NULL DEFAULT '',
  ADD COLUMN config_error_at timestamptz;
