package daemon

import (
	"context"
	"slices"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/notifier"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// aliveWithin is how recent a replica's heartbeat must be for it to count as alive, as the
// replicas API and page count it.
const aliveWithin = 30 * time.Second

// metricsState reads what the metrics serve of the deployment: the configured sources, the
// singleton leases they and every replica need, and the live replicas. read is the API's
// store (the read standby while it keeps up, database.readURL); the leases and heartbeats
// come from its primary, since a standby's lag would show live holders as gone.
func metricsState(ctx context.Context, read *store.Store, cfg *config.Config) (metrics.State, error) {
	srcs, err := read.ListSources(ctx, store.Everything)
	if err != nil {
		return metrics.State{}, err
	}
	held, alive, err := read.Primary().LeaseState(ctx, aliveWithin)
	if err != nil {
		return metrics.State{}, err
	}
	out := metrics.State{ReplicasAlive: alive, Leases: map[string]bool{}}
	for _, name := range []string{"maintenance", notifier.LeaseName} {
		out.Leases[name] = slices.Contains(held, name)
	}
	for _, src := range srcs {
		if !slices.ContainsFunc(cfg.Sources, func(c config.Source) bool { return c.Name == src.Name }) {
			continue // left the config: nobody syncs it, and none should
		}
		ready, _ := status.Get(src.Conditions, status.Ready)
		s := metrics.SourceState{Name: src.Name, Ready: ready.Status == status.True, LagSeconds: src.LagSeconds}
		if src.LastCompletedSyncTime != nil {
			s.LastCompletedSync = *src.LastCompletedSyncTime
		}
		out.Sources = append(out.Sources, s)
		out.Leases["source:"+src.Name] = slices.Contains(held, "source:"+src.Name)
	}
	return out, nil
}

// metricsResources counts the resources by source and phase through read (resource_counts
// and the unsettled rows' partial index: no scan of the table).
func metricsResources(ctx context.Context, read *store.Store) ([]metrics.ResourceCount, error) {
	counts, err := read.CountResources(ctx, store.Everything)
	if err != nil {
		return nil, err
	}
	out := make([]metrics.ResourceCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, metrics.ResourceCount{Source: c.Source, Phase: c.Phase, Count: c.Count})
	}
	return out, nil
}
