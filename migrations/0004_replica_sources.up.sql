-- What the holder of each source's lease knows but must not write on every poll (a poll that
-- finds the same commit writes nothing): last poll, last webhook, the remote head and since
-- when it was seen. Published with the replica's heartbeat.
ALTER TABLE replicas ADD COLUMN sources jsonb NOT NULL DEFAULT '{}';
