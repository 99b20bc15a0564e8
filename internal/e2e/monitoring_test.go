package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/trueup-dev/trueup/actions"
	"sigs.k8s.io/yaml"
)

// The shipped alert rules and Grafana dashboard (deploy/monitoring).
const (
	alertRules       = "../../deploy/monitoring/trueup-alerts.yaml"
	grafanaDashboard = "../../deploy/monitoring/grafana-dashboard.json"
)

// TestMonitoringMetricNames: every metric the shipped alert rules and Grafana dashboard read
// is served by /metrics of a running replica that has synced a source, answered a push
// webhook, reconciled a resource that fails, retried and given up its notification, and
// reloaded its config, so that the labelled series exist.
func TestMonitoringMetricNames(t *testing.T) {
	t.Parallel()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer hook.Close()
	notifications := fmt.Sprintf(`notifications:
  providers: [{name: hook, type: webhook, url: %q}]
  rules: [{name: all, providers: [hook]}]
  maxAttempts: 2
  groupWindow: -1s
`, hook.URL)
	e := setup(t, options{references: notifications, hookSecret: hookSecret, more: map[string]actions.Action{"gha": rateLimited{4321}}})
	if err := os.WriteFile(e.failFlg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rev := e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := sendHook(t, e.api, "infra", rev, "m-1", nil); code != http.StatusAccepted {
		t.Fatalf("webhook: %d", code)
	}
	e.waitPhase("Failed", 0, "prod/a") // never reconciled: observed generation 0
	if res := e.replicas[0].Reload(e.config("r1", e.o)); !res.OK {
		t.Fatalf("reload: %+v", res)
	}

	names := monitoringMetricNames(t)
	e.eventually(30*time.Second, "every metric of the rules and the dashboard served", func() (bool, string) {
		families := e.metrics()
		var missing []string
		for _, n := range names {
			if !served(families, n) {
				missing = append(missing, n)
			}
		}
		if !hasLabels(families["trueup_notifications_total"], map[string]string{"provider": "hook", "result": "dead"}) {
			missing = append(missing, `trueup_notifications_total{result="dead"}`)
		}
		return len(missing) == 0, "missing " + strings.Join(missing, ", ")
	})

	// The state read from the database (at most every 10 seconds): the one replica holds
	// every lease and heartbeats, the source is Ready, its resource Failed.
	e.eventually(30*time.Second, "the state read from the database", func() (bool, string) {
		families := e.metrics()
		var wrong []string
		for _, c := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"trueup_state_readable", nil, 1},
			{"trueup_lease_held", map[string]string{"lease": "maintenance"}, 1},
			{"trueup_lease_held", map[string]string{"lease": "notifications"}, 1},
			{"trueup_lease_held", map[string]string{"lease": "source:infra"}, 1},
			{"trueup_replicas_alive", nil, 1},
			{"trueup_source_ready", map[string]string{"source": "infra"}, 1},
			{"trueup_resources", map[string]string{"source": "infra", "phase": "Failed"}, 1},
		} {
			if got, ok := gaugeValue(families[c.name], c.labels); !ok || got != c.want {
				wrong = append(wrong, fmt.Sprintf("%s%v = %v (served %v), want %v", c.name, c.labels, got, ok, c.want))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
}

// gaugeValue is the value of f's gauge whose labels are exactly want.
func gaugeValue(f *dto.MetricFamily, want map[string]string) (float64, bool) {
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if maps.Equal(got, want) {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// prometheusSeries are the series Prometheus makes itself, not the target.
var prometheusSeries = []string{"up"}

// served reports whether name is a family of /metrics, or a histogram's or summary's
// _bucket, _sum or _count series, or one Prometheus makes.
func served(families map[string]*dto.MetricFamily, name string) bool {
	if _, ok := families[name]; ok || slices.Contains(prometheusSeries, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := families[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) &&
			(f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
			return true
		}
	}
	return false
}

// metricName matches the metric names of a PromQL expression: trueup's series all carry the
// trueup_ prefix, the Go client's go_ and process_, and up is Prometheus's. Label names,
// label values (in quotes), functions and keywords never start so. This stands in for
// Prometheus's PromQL parser, whose module would bring the whole Prometheus server's
// dependencies (cloud SDKs, Kubernetes client) into go.mod; promtool parses every rule in
// deploy/monitoring's test.
var metricName = regexp.MustCompile(`\b(?:(?:trueup|go|process)_[a-zA-Z0-9_:]+|up)\b`)

// labelValue is a quoted string of an expression, removed before names are matched.
var labelValue = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// monitoringMetricNames returns the metric names the alert rules and the dashboard's
// expressions read. Each expression must name at least one.
func monitoringMetricNames(t *testing.T) []string {
	t.Helper()
	var exprs []string
	b, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	b, err = os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct{ Targets []struct{ Expr string } }
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("%d expressions in the rules and the dashboard", len(exprs))
	}
	var names []string
	for _, x := range exprs {
		found := metricName.FindAllString(labelValue.ReplaceAllString(x, `""`), -1)
		if len(found) == 0 {
			t.Errorf("expression %q names no metric", x)
		}
		names = append(names, found...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
