-- The GIN indexes of resources (labels, the name's trigrams) keep new entries in a pending
-- list until it passes gin_pending_list_limit (4 MB by default) or a vacuum merges it, and
-- every query of the index reads the whole list: after a large sync or drain a label selector
-- or a name search read up to 4 MB for each page of a list (110 ms for a selector that
-- matches nothing at 50,000 resources). A 256 kB list keeps that read to 32 pages while
-- inserts still merge in bulk. The trigram index exists where pg_trgm does (0005).
SET LOCAL lock_timeout = '10s';
ALTER INDEX resources_labels SET (gin_pending_list_limit = 256);
ALTER INDEX IF EXISTS resources_name_trgm SET (gin_pending_list_limit = 256);
