package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// State is what the database says of the whole deployment, read at scrape time: every
// replica serves the same values, so rules aggregate these series with max or min by their
// labels. The resource counts are read apart (Options.Resources): a slow count leaves the
// rest served.
type State struct {
	Sources []SourceState
	// Leases maps each singleton lease (maintenance, notifications, source:NAME of each
	// configured source) to whether a replica holds it.
	Leases        map[string]bool
	ReplicasAlive int
}

// stateTTL is how long one read of the state serves scrapes: replicas × scrapers each
// scraping every few seconds read the database once per stateTTL per replica.
const stateTTL = 10 * time.Second

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
	stateReadableDesc = prometheus.NewDesc("trueup_state_readable",
		"1 when the replica's last read of the deployment's state (sources, leases, replicas) succeeded within 2 seconds; 0 when the database failed or was slow, and those series are absent.", nil, nil)
)

type stateCollector struct {
	read   func(context.Context) (State, error)
	counts func(context.Context) ([]ResourceCount, error) // nil: no trueup_resources
	log    *slog.Logger
	now    func() time.Time

	mu    sync.Mutex // held across a read: concurrent scrapes wait for one read
	at    time.Time  // when the cached outcome was read (zero: never)
	st    State
	stOK  bool
	res   []ResourceCount
	resOK bool
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{stateReadableDesc, sourceReadyDesc, sourceCompletedDesc, sourceLagDesc, leaseHeldDesc, resourcesDesc, replicasAliveDesc} {
		ch <- d
	}
}

// load returns the outcome of the last read, reading again once it is stateTTL old. The
// state and the counts are read side by side, each with its own deadline.
func (c *stateCollector) load() (State, bool, []ResourceCount, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); c.at.IsZero() || now.Sub(c.at) >= stateTTL || now.Before(c.at) {
		var wg sync.WaitGroup
		c.resOK = false
		if c.counts != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.res, c.resOK = readAtScrape(c.counts, c.log, "resource counts") }()
		}
		c.st, c.stOK = readAtScrape(c.read, c.log, "state")
		wg.Wait()
		c.at = c.now()
	}
	return c.st, c.stOK, c.res, c.resOK
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok, counts, countsOK := c.load()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(stateReadableDesc, one(ok))
	if countsOK {
		for _, r := range counts {
			gauge(resourcesDesc, float64(r.Count), r.Source, r.Phase)
		}
	}
	if !ok {
		return
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
	gauge(replicasAliveDesc, float64(st.ReplicasAlive))
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
