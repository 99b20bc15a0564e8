SET LOCAL lock_timeout = '10s';
ALTER INDEX resources_labels RESET (gin_pending_list_limit);
ALTER INDEX IF EXISTS resources_name_trgm RESET (gin_pending_list_limit);
