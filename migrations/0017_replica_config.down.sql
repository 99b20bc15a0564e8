ALTER TABLE replicas DROP COLUMN config_hash, DROP COLUMN config_loaded_at, DROP COLUMN config_error, DROP COLUMN config_error_at;
