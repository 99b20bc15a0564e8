package e2e

import (
	"context"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/trueup-dev/trueup/actions"
)

// TestMetricsScrape: after a sync and reconciles, /metrics exposes every series with its
// labels in the Prometheus text format.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	e := setup(t, options{more: map[string]actions.Action{"gha": rateLimited{4321}}, hookSecret: hookSecret})
	rev := e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/a")
	if code := sendHook(t, e.api, "infra", rev, "m-1", nil); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	families := e.metrics()
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
		"trueup_source_ready":                          {"source": "infra"},
		"trueup_source_lag_seconds":                    {"source": "infra"},
		"trueup_lease_held":                            {"lease": "source:infra"},
		"trueup_resources":                             {"source": "infra", "phase": "Ready"},
		"trueup_replicas_alive":                        {},
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

// rateLimited is an action whose forge allows remaining more requests.
type rateLimited struct{ remaining int }

func (a rateLimited) Reconcile(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

func (a rateLimited) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

func (a rateLimited) RateLimitRemaining() int { return a.remaining }

// metrics scrapes the first replica's /metrics.
func (e *env) metrics() map[string]*dto.MetricFamily {
	e.t.Helper()
	resp, err := http.Get(e.api + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// fetches counts the first replica's syncs that fetched a revision.
func (e *env) fetches() uint64 {
	var n uint64
	for _, m := range e.metrics()["trueup_source_sync_duration_seconds"].GetMetric() {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
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
