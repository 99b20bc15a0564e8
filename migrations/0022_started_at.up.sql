-- When the call of the current claim started (NULL while the claim waits in its replica's
-- memory for a worker, and when no lease is held): a claim shows Reconciling only once its
-- call runs, and a lease released without a result was an interrupted attempt only if set.
ALTER TABLE resources ADD COLUMN started_at timestamptz;
