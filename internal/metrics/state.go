package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// State is what the database says of the whole deployment, read at scrape time: every
// replica serves the same values, so rules aggregate these series with max or min by their
// labels.
type State struct {
	Sources []SourceState
	// Leases maps each singleton lease (maintenance, notifications, source:NAME of each
	// configured source) to whether a replica holds it.
	Leases        map[string]bool
	Resources     []ResourceCount
	ReplicasAlive int
}

// SourceState is one configured source.
type SourceState struct {
	Name  string
	Ready bool // its Ready condition is True
	// LastCompletedSync is when its last completed sync began (zero: no replica holds the
	// source, or none has completed one).
	LastCompletedSync time.Time
	LagSeconds        float64 // how long the remote head has been ahead of the applied revision
}

// ResourceCount is how many resources of one source are in one phase.
type ResourceCount struct {
	Source, Phase string
	Count         int
}

var (
	sourceReadyDesc = prometheus.NewDesc("trueup_source_ready",
		"1 while the source's Ready condition is True; 0 when its last revision was rejected or its fetch failed.", []string{"source"}, nil)
	sourceCompletedDesc = prometheus.NewDesc("trueup_source_last_completed_sync_timestamp_seconds",
		"Unix time the source's last completed sync began, a poll that found nothing new included (absent while no replica holds the source).", []string{"source"}, nil)
	sourceLagDesc = prometheus.NewDesc("trueup_source_lag_seconds",
		"How long the source's remote head has been ahead of its applied revision (0 when they are equal).", []string{"source"}, nil)
	leaseHeldDesc = prometheus.NewDesc("trueup_lease_held",
		"1 while a replica holds the singleton lease (maintenance, notifications, source:NAME), else 0.", []string{"lease"}, nil)
	resourcesDesc = prometheus.NewDesc("trueup_resources",
		"Resources by source and phase (a phase without resources has no series).", []string{"source", "phase"}, nil)
	replicasAliveDesc = prometheus.NewDesc("trueup_replicas_alive",
		"Replicas whose heartbeat is at most 30 seconds old.", nil, nil)
)

type stateCollector struct {
	read func(context.Context) (State, error)
	log  *slog.Logger
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sourceReadyDesc, sourceCompletedDesc, sourceLagDesc, leaseHeldDesc, resourcesDesc, replicasAliveDesc} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := readAtScrape(c.read, c.log, "state")
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, s := range st.Sources {
		gauge(sourceReadyDesc, one(s.Ready), s.Name)
		if !s.LastCompletedSync.IsZero() {
			gauge(sourceCompletedDesc, float64(s.LastCompletedSync.UnixMilli())/1000, s.Name)
		}
		gauge(sourceLagDesc, s.LagSeconds, s.Name)
	}
	for name, held := range st.Leases {
		gauge(leaseHeldDesc, one(held), name)
	}
	for _, r := range st.Resources {
		gauge(resourcesDesc, float64(r.Count), r.Source, r.Phase)
	}
	gauge(replicasAliveDesc, float64(st.ReplicasAlive))
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
