package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/syncer"
)

// TestMetricsScrape: after a sync and reconciles, /metrics exposes every series with its
// labels in the Prometheus text format.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	met := metrics.New(metrics.Options{Logger: e.log,
		Queue: func(ctx context.Context) (metrics.QueueStats, error) {
			due, inFlight, scheduled, oldest, err := e.store.QueueStats(ctx)
			return metrics.QueueStats{Due: due, InFlight: inFlight, Scheduled: scheduled, OldestDueSeconds: oldest.Seconds()}, err
		},
		RateLimits: func() map[string]int { return map[string]int{"gha": 4321} }})
	s := syncer.New(e.store, syncer.Options{Name: "infra", Source: e.src, Interval: time.Hour, Prune: true, Replica: "m", Metrics: met}, e.log)
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	if _, err := s.SyncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.startReconciler("r1", reconciler.Options{Metrics: met})
	e.waitPhase("Ready", 1, "prod/a")
	met.Webhook("infra", http.StatusAccepted)
	srv := httptest.NewServer(server.New(e.store, server.Options{Metrics: met}, e.log).Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	want := map[string]map[string]string{ // family → one label set it must carry
		"trueup_reconcile_duration_seconds":            {"kind": "Database", "operation": "reconcile", "result": "Succeeded"},
		"trueup_reconcile_total":                       {"kind": "Database", "operation": "reconcile", "result": "Succeeded"},
		"trueup_action_calls_total":                    {"action": "provision", "operation": "reconcile", "result": "success"},
		"trueup_queue_depth":                           {"state": "due"},
		"trueup_queue_oldest_due_seconds":              {},
		"trueup_source_sync_duration_seconds":          {"source": "infra", "result": "success"},
		"trueup_source_last_success_timestamp_seconds": {"source": "infra"},
		"trueup_source_revision_info":                  {"source": "infra"},
		"trueup_webhook_requests_total":                {"source": "infra", "code": "202"},
		"trueup_forge_rate_limit_remaining":            {"action": "gha"},
		"go_goroutines":                                {},
		"process_resident_memory_bytes":                {},
	}
	for name, labels := range want {
		f, ok := families[name]
		if !ok {
			t.Errorf("missing metric family %s", name)
			continue
		}
		if !hasLabels(f, labels) {
			t.Errorf("%s: no series with labels %v", name, labels)
		}
	}
	if f := families["trueup_reconcile_total"]; f != nil && f.GetMetric()[0].GetCounter().GetValue() < 1 {
		t.Errorf("reconcile total %v", f)
	}
}

func hasLabels(f *dto.MetricFamily, want map[string]string) bool {
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			ok = ok && got[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}
