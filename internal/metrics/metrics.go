// Package metrics owns trueup's Prometheus metrics: one registry per process with the
// reconcile, queue, source, webhook and action series, Go runtime and process metrics, and
// collectors that read queue depth, the deployment's state (sources, leases, resources,
// replicas) and forge rate limits at scrape time. A nil *Metrics is valid and records
// nothing, so components and tests need not care.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds every series.
type Metrics struct {
	reg *prometheus.Registry

	reconcileDuration *prometheus.HistogramVec
	reconcileTotal    *prometheus.CounterVec
	resultWriteWait   prometheus.Histogram
	interrupted       prometheus.Counter
	failovers         prometheus.Counter
	actionCalls       *prometheus.CounterVec
	syncDuration      *prometheus.HistogramVec
	lastSyncSuccess   *prometheus.GaugeVec
	revisionInfo      *prometheus.GaugeVec
	webhookRequests   *prometheus.CounterVec
	notifications     *prometheus.CounterVec
	notifyRetries     *prometheus.CounterVec
	configReloads     *prometheus.CounterVec
	configReloadOK    prometheus.Gauge
	policyDecisions   *prometheus.CounterVec
	policyEvaluation  prometheus.Histogram
	windowHolds       *prometheus.CounterVec

	collectors []prometheus.Collector // what reg holds, in registration order
}

// QueueStats is read at scrape time.
type QueueStats struct {
	Due              int     // unleased work whose run_at has passed
	InFlight         int     // leased right now (all replicas)
	OldestDueSeconds float64 // age of the oldest due item (0 when none)
	Scheduled        int     // work due later (retries, requeues, resyncs)
}

// Options wires the scrape-time sources.
type Options struct {
	// Queue reads the work queue (nil: no queue series).
	Queue func(ctx context.Context) (QueueStats, error)
	// State reads the sources, leases and replicas (nil: no such series, and no
	// trueup_resources).
	State func(ctx context.Context) (State, error)
	// Resources counts the resources by source and phase (nil: no trueup_resources).
	Resources func(ctx context.Context) ([]ResourceCount, error)
	// RateLimits reports the last seen forge quota per action instance (nil: none).
	RateLimits func() map[string]int
	// SpansDropped counts trace spans dropped on a full export queue (nil: no series).
	SpansDropped func() uint64
	// ReadLag reports the read standby's replication lag and whether reads fell back to the
	// primary (nil, or a store without database.readURL: zero and false).
	ReadLag func() (time.Duration, bool)
	Logger  *slog.Logger
}

// New builds the registry.
func New(opts Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "trueup_reconcile_duration_seconds", Help: "Duration of reconcile attempts' action calls (the status write is trueup_reconcile_write_wait_seconds).",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 1800},
	}, []string{"kind", "operation", "result"})
	m.reconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trueup_reconcile_total", Help: "Reconcile attempts by kind, operation and result.",
	}, []string{"kind", "operation", "result"})
	m.resultWriteWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "trueup_reconcile_write_wait_seconds", Help: "Time from the end of an action call until its result is committed (batched result writer).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5},
	})
	m.interrupted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "trueup_reconcile_interrupted_total", Help: "Attempts taken over from a replica that died or lost its lease (recorded in history as Interrupted).",
	})
	m.failovers = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "trueup_replica_failovers_total", Help: "Peer replicas this replica found dead (database session ended) and released.",
	})
	m.actionCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trueup_action_calls_total", Help: "Action plugin calls by instance, operation and result.",
	}, []string{"action", "operation", "result"})
	m.syncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "trueup_source_sync_duration_seconds", Help: "Duration of source syncs that fetched a new revision.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"source", "result"})
	m.lastSyncSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "trueup_source_last_success_timestamp_seconds", Help: "Unix time of the source's last successful sync.",
	}, []string{"source"})
	m.revisionInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "trueup_source_revision_info", Help: "The revision each source has applied (value 1).",
	}, []string{"source", "revision"})
	m.webhookRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trueup_webhook_requests_total", Help: "Push webhook requests by source (\"unknown\" for unknown ones) and HTTP status code.",
	}, []string{"source", "code"})
	m.notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trueup_notifications_total", Help: "Notification deliveries by provider and result (sent, failed, dead, suppressed).",
	}, []string{"provider", "result"})
	m.notifyRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trueup_notification_retries_total", Help: "Notification messages scheduled for another attempt after a provider error, by provider.",
	}, []string{"provider"})
	m.configReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trueup_config_reloads_total", Help: "Config reloads (SIGHUP or POST /api/v1/admin/reload) by result (success, failure: the new config was refused).",
	}, []string{"result"})
	m.configReloadOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "trueup_config_last_reload_success_timestamp_seconds", Help: "Unix time the running config was loaded (at start, or by the last successful reload).",
	})
	m.policyDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trueup_policy_decisions_total", Help: "Changes of resources selected by policies, by what the gate decided (allowed, approved, approval_required, denied, rejected).",
	}, []string{"decision"})
	m.policyEvaluation = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "trueup_policy_evaluation_seconds", Help: "Time the policies' rules took to decide one change (without its plan and store reads).",
		Buckets: []float64{.000005, .00001, .000025, .00005, .0001, .00025, .0005, .001, .005, .01, .05},
	})
	m.windowHolds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trueup_window_holds_total", Help: "Changes (applies, deletes, drift corrections) a change window held instead of calling the action, by the window holding them.",
	}, []string{"window"})
	// A counter's series is born at 0, before its first event: rules taking increase() see
	// the first reload refused or notification given up.
	for _, result := range []string{"success", "failure"} {
		m.configReloads.WithLabelValues(result)
	}
	m.collectors = []prometheus.Collector{m.configReloads, m.configReloadOK, m.policyDecisions, m.policyEvaluation, m.windowHolds, m.reconcileDuration, m.reconcileTotal, m.resultWriteWait, m.interrupted, m.failovers, m.actionCalls, m.syncDuration, m.lastSyncSuccess,
		m.revisionInfo, m.webhookRequests, m.notifications, m.notifyRetries,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
	if opts.Queue != nil {
		m.collectors = append(m.collectors, &queueCollector{read: opts.Queue, log: opts.Logger})
	}
	if opts.State != nil {
		m.collectors = append(m.collectors, &stateCollector{read: opts.State, counts: opts.Resources, log: opts.Logger, now: time.Now})
	}
	if opts.RateLimits != nil {
		m.collectors = append(m.collectors, &rateCollector{read: opts.RateLimits})
	}
	if read := opts.SpansDropped; read != nil {
		m.collectors = append(m.collectors, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "trueup_trace_spans_dropped_total", Help: "Sampled trace spans dropped because the export queue (OTEL_BSP_MAX_QUEUE_SIZE) was full: their traces are incomplete or missing.",
		}, func() float64 { return float64(read()) }))
	}
	readLag := opts.ReadLag
	if readLag == nil {
		readLag = func() (time.Duration, bool) { return 0, false }
	}
	m.collectors = append(m.collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "trueup_database_replication_lag_seconds", Help: "Replication lag of the read standby (database.readURL), measured once a second: the age of the oldest primary WAL position it has not replayed (0 without a standby).",
	}, func() float64 { lag, _ := readLag(); return lag.Seconds() }), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "trueup_database_reads_on_primary", Help: "1 while API, dashboard and MCP reads go to the primary because the read standby lags more than database.maxReadLag or does not answer; 0 otherwise (and without a standby).",
	}, func() float64 {
		if _, onPrimary := readLag(); onPrimary {
			return 1
		}
		return 0
	}))
	m.reg.MustRegister(m.collectors...)
	return m
}

// Collectors returns every collector the registry holds; the metrics reference page
// (docs/reference/metrics.md) is generated from their descriptions.
func (m *Metrics) Collectors() []prometheus.Collector { return m.collectors }

// Handler serves the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Reconciled records one attempt: call is the action call's duration, write the wait from its
// end until the result was committed.
func (m *Metrics) Reconciled(kind, operation, result string, call, write time.Duration) {
	if m == nil {
		return
	}
	m.reconcileDuration.WithLabelValues(kind, operation, result).Observe(call.Seconds())
	m.reconcileTotal.WithLabelValues(kind, operation, result).Inc()
	m.resultWriteWait.Observe(write.Seconds())
}

// PolicyDecided records one change decided by the gate of policies: its outcome and the
// evaluation of the rules.
func (m *Metrics) PolicyDecided(decision string, eval time.Duration) {
	if m == nil {
		return
	}
	m.policyDecisions.WithLabelValues(decision).Inc()
	m.policyEvaluation.Observe(eval.Seconds())
}

// WindowHeld records one change the change window named window held.
func (m *Metrics) WindowHeld(window string) {
	if m == nil {
		return
	}
	m.windowHolds.WithLabelValues(window).Inc()
}

// ConfigLoaded records that the config was loaded at start, or reloaded (ok: applied;
// otherwise refused, the running config kept).
func (m *Metrics) ConfigLoaded(reload, ok bool, at time.Time) {
	if m == nil {
		return
	}
	if reload {
		result := "success"
		if !ok {
			result = "failure"
		}
		m.configReloads.WithLabelValues(result).Inc()
	}
	if ok {
		m.configReloadOK.Set(float64(at.Unix()))
	}
}

// Interrupted counts attempts taken over from a dead replica or an expired lease.
func (m *Metrics) Interrupted(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.interrupted.Add(float64(n))
}

// Failover counts a peer replica found dead and released.
func (m *Metrics) Failover() {
	if m == nil {
		return
	}
	m.failovers.Inc()
}

// ActionCalled records one plugin call; result is "success", "error", "terminal" or "in_progress".
func (m *Metrics) ActionCalled(action, operation, result string) {
	if m == nil {
		return
	}
	m.actionCalls.WithLabelValues(action, operation, result).Inc()
}

// Synced records a sync that fetched a revision; ok reports whether it applied.
func (m *Metrics) Synced(source, revision string, ok bool, d time.Duration) {
	if m == nil {
		return
	}
	result := "success"
	if !ok {
		result = "failure"
	}
	m.syncDuration.WithLabelValues(source, result).Observe(d.Seconds())
	if ok {
		m.lastSyncSuccess.WithLabelValues(source).SetToCurrentTime()
		m.revisionInfo.DeletePartialMatch(prometheus.Labels{"source": source})
		m.revisionInfo.WithLabelValues(source, revision).Set(1)
	}
}

// Webhook records one webhook answer.
func (m *Metrics) Webhook(source string, code int) {
	if m == nil {
		return
	}
	m.webhookRequests.WithLabelValues(source, strconv.Itoa(code)).Inc()
}

// NotificationProviders creates the delivery series of each provider at 0 (every result,
// and its retries), so that a provider's first failure or dead letter is an increase.
func (m *Metrics) NotificationProviders(providers []string) {
	if m == nil {
		return
	}
	for _, p := range providers {
		for _, result := range []string{"sent", "failed", "dead", "suppressed"} {
			m.notifications.WithLabelValues(p, result)
		}
		m.notifyRetries.WithLabelValues(p)
	}
}

// Notification records one delivery attempt's result for provider: sent, failed (a retry
// follows), dead (given up), suppressed (rate-limited).
func (m *Metrics) Notification(provider, result string) {
	if m == nil {
		return
	}
	m.notifications.WithLabelValues(provider, result).Inc()
	if result == "failed" {
		m.notifyRetries.WithLabelValues(provider).Inc()
	}
}

type queueCollector struct {
	read func(context.Context) (QueueStats, error)
	log  *slog.Logger
}

var (
	queueDepthDesc     = prometheus.NewDesc("trueup_queue_depth", "Work items by state: due (waiting for a worker), in_flight (leased), scheduled (due later).", []string{"state"}, nil)
	queueOldestDueDesc = prometheus.NewDesc("trueup_queue_oldest_due_seconds", "Age of the oldest due, unclaimed work item.", nil, nil)
	rateRemainingDesc  = prometheus.NewDesc("trueup_forge_rate_limit_remaining", "Last seen API quota remaining per action instance.", []string{"action"}, nil)
)

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- queueOldestDueDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	q, ok := readAtScrape(c.read, c.log, "queue")
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(q.Due), "due")
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(q.InFlight), "in_flight")
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(q.Scheduled), "scheduled")
	ch <- prometheus.MustNewConstMetric(queueOldestDueDesc, prometheus.GaugeValue, q.OldestDueSeconds)
}

// readAtScrape calls read with a deadline a scrape can wait for; a failure is logged (what
// names the read) and the collector serves none of its series.
func readAtScrape[T any](read func(context.Context) (T, error), log *slog.Logger, what string) (T, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := read(ctx)
	if err != nil && log != nil {
		log.Warn("read "+what+" for metrics", "err", err)
	}
	return v, err == nil
}

type rateCollector struct{ read func() map[string]int }

func (c *rateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- rateRemainingDesc }

func (c *rateCollector) Collect(ch chan<- prometheus.Metric) {
	for action, n := range c.read() {
		if n >= 0 {
			ch <- prometheus.MustNewConstMetric(rateRemainingDesc, prometheus.GaugeValue, float64(n), action)
		}
	}
}
