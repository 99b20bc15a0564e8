-- When the call of the current claim started (NULL while the claim waits in its replica's
-- memory for a worker, and when no lease is held): a claim shows Reconciling only once its
-- call runs, and a lease released without a result was an interrupted attempt only if set.
SET LOCAL lock_timeout = '10s'; -- as 0019: give up rather than queue every claim behind a long transaction
ALTER TABLE resources ADD COLUMN started_at timestamptz;
SET LOCAL lock_timeout = DEFAULT;
