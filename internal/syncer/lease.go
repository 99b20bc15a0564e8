package syncer

// The source's singleton lease is held by a lease.Holder, whose loop renews it on a goroutine
// of its own, never on the loop that syncs: a slow fetch or a hung Git server cannot delay a
// renewal. The sync loop asks the holder before every sync and syncs under a context that
// ends when the holding does. Writes are fenced regardless: each one passes the lease, whose
// term the store checks inside the writing transaction.

// LeasesFreed asks a replica that does not hold the source's lease to try to take it now
// rather than at its next renewal tick (every LeaseTTL/3), and to sync at once if it gets it.
// Call it when a peer replica released its leases or was found dead. It never blocks, calls
// coalesce, and it does nothing while this replica holds the lease.
func (s *Syncer) LeasesFreed() { s.lease.TryNow() }

func leaseName(source string) string { return "source:" + source }
