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
// singleton leases they and every replica need, the resources by phase and the live replicas.
func metricsState(ctx context.Context, st *store.Store, cfg *config.Config) (metrics.State, error) {
	srcs, err := st.ListSources(ctx, store.Everything)
	if err != nil {
		return metrics.State{}, err
	}
	held, alive, err := st.LeaseState(ctx, aliveWithin)
	if err != nil {
		return metrics.State{}, err
	}
	counts, err := st.CountResources(ctx, store.Everything)
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
	for _, c := range counts {
		out.Resources = append(out.Resources, metrics.ResourceCount{Source: c.Source, Phase: c.Phase, Count: c.Count})
	}
	return out, nil
}
