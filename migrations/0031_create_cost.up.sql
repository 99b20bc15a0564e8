-- A phase is filtered in three places: the overview's and a source's counts (phase <> 'Ready'),
-- the recent failures (phase = 'Failed') and the list's phase filter, which adds
-- phase <> 'Ready' for any phase but Ready. Each is served by resources_unsettled (source,
-- phase) WHERE phase <> 'Ready'; a Ready filter is most rows and walks the list's order. The
-- index on phase alone is one more entry to write for every created resource, for nothing.
DROP INDEX IF EXISTS resources_phase;
