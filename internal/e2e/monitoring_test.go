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

	"github.com/prometheus/client_golang/prometheus"
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

	exprs := monitoringExprs(t)
	e.eventually(30*time.Second, "every metric, label and value of the rules and the dashboard served", func() (bool, string) {
		families := e.metrics()
		var problems []string
		for _, x := range exprs {
			problems = append(problems, checkExpr(families, x)...)
		}
		return len(problems) == 0, strings.Join(problems, "; ")
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

// targetLabels are the labels Prometheus adds to every series of a target (a static config's
// job and instance, the Operator's namespace).
var targetLabels = []string{"job", "instance", "namespace"}

// promqlWords are PromQL's functions, aggregations, keywords and modifiers, and Grafana's
// template query functions: every other identifier of an expression is a metric.
var promqlWords = strings.Fields(`abs absent absent_over_time acos acosh asin asinh atan atanh ceil changes clamp
	clamp_max clamp_min cos cosh day_of_month day_of_week day_of_year days_in_month deg delta deriv exp floor
	histogram_avg histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum
	holt_winters double_exponential_smoothing hour idelta increase irate label_join label_replace ln log2 log10
	minute month pi predict_linear rad rate resets round scalar sgn sin sinh sort sort_desc sort_by_label
	sort_by_label_desc sqrt tan tanh time timestamp vector year avg_over_time min_over_time max_over_time
	sum_over_time count_over_time quantile_over_time stddev_over_time stdvar_over_time last_over_time
	present_over_time mad_over_time
	sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
	and or unless by without on ignoring group_left group_right bool offset atan2 inf nan
	label_values label_names metrics query_result`)

var (
	// matcherSet is a selector's braces with the metric name before them, if any.
	matcherSet = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}`)
	// labelMatcher is one matcher of a selector.
	labelMatcher = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$`)
	// grouping is a label list of an aggregation or a vector match.
	grouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	// rangeOrString are ranges, subqueries, offsets' durations in brackets and quoted strings.
	rangeOrString = regexp.MustCompile(`\[[^\]]*\]|"(?:[^"\\]|\\.)*"`)
	// identifier is a name not part of a number or a Grafana variable ($name).
	identifier = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	// labelValuesQuery is a Grafana template query label_values(selector, label).
	labelValuesQuery = regexp.MustCompile(`^\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)
)

// family is the family serving the series name: itself, or a histogram's or summary's
// _bucket, _sum or _count. Prometheus's own series have none (nil, true).
func family(families map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, bool) {
	if f, ok := families[name]; ok {
		return f, true
	}
	if slices.Contains(prometheusSeries, name) {
		return nil, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := families[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) &&
			(f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
			return f, true
		}
	}
	return nil, false
}

// familyLabels are the label names f's series carry, with le for a histogram's _bucket.
func familyLabels(f *dto.MetricFamily, name string) []string {
	var out []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			out = append(out, l.GetName())
		}
	}
	if strings.HasSuffix(name, "_bucket") {
		out = append(out, "le")
	}
	return out
}

// checkExpr checks a PromQL expression (or a Grafana label_values query) against a scrape:
// every identifier that is not a PromQL word is a served metric; every matcher's label is one
// its family carries (or a target label), and an equality's value one a series of it has;
// every grouping label is carried by a metric of the expression. It returns what is wrong.
func checkExpr(families map[string]*dto.MetricFamily, expr string) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%q: ", expr)+fmt.Sprintf(format, args...))
	}
	x := expr
	var groupLabels []string
	if m := labelValuesQuery.FindStringSubmatch(x); m != nil {
		x, groupLabels = m[1], []string{m[2]}
	}
	type selector struct{ name, body string }
	var selectors []selector
	x = matcherSet.ReplaceAllStringFunc(x, func(sel string) string {
		m := matcherSet.FindStringSubmatch(sel)
		selectors = append(selectors, selector{m[1], m[2]})
		return " " + m[1] + " "
	})
	for _, m := range grouping.FindAllStringSubmatch(x, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				groupLabels = append(groupLabels, l)
			}
		}
	}
	x = grouping.ReplaceAllString(x, " ")
	x = rangeOrString.ReplaceAllString(x, " ")
	var metricLabels []string
	named := 0
	for _, m := range identifier.FindAllStringSubmatch(x, -1) {
		name := m[1]
		if slices.Contains(promqlWords, name) {
			continue
		}
		named++
		f, ok := family(families, name)
		if !ok {
			bad("%s is not served", name)
			continue
		}
		metricLabels = append(metricLabels, familyLabels(f, name)...)
	}
	if named == 0 {
		bad("names no metric")
	}
	for _, sel := range selectors {
		f, ok := family(families, sel.name)
		if sel.name == "" || !ok {
			if sel.name == "" {
				bad("a selector without a metric name")
			}
			continue
		}
		for m := range strings.SplitSeq(sel.body, ",") {
			if strings.TrimSpace(m) == "" {
				continue
			}
			lm := labelMatcher.FindStringSubmatch(m)
			if lm == nil {
				bad("matcher %q of %s not understood", m, sel.name)
				continue
			}
			label, op, value := lm[1], lm[2], lm[3]
			if f == nil || slices.Contains(targetLabels, label) {
				continue // Prometheus's own series, or a label Prometheus adds
			}
			if !slices.Contains(familyLabels(f, sel.name), label) {
				bad("%s has no label %s", sel.name, label)
				continue
			}
			if op == "=" && !strings.Contains(value, "$") && !hasLabelValue(f, label, value) {
				bad("no series %s{%s=%q} served", sel.name, label, value)
			}
		}
	}
	for _, l := range groupLabels {
		if !slices.Contains(metricLabels, l) && !slices.Contains(targetLabels, l) {
			bad("no metric of it has the label %s", l)
		}
	}
	return problems
}

// hasLabelValue reports whether a series of f has label=value.
func hasLabelValue(f *dto.MetricFamily, label, value string) bool {
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return true
			}
		}
	}
	return false
}

// dashboardPanel is a Grafana panel: its queries and, in a row, its panels.
type dashboardPanel struct {
	Targets []struct{ Expr string }
	Panels  []dashboardPanel
}

// monitoringExprs returns the expressions of the alert rules, of every dashboard panel (rows'
// panels included) and of the dashboard's template variables.
func monitoringExprs(t *testing.T) []string {
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
		Panels     []dashboardPanel
		Templating struct {
			List []struct {
				Type  string
				Query json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var obj struct{ Query string }
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Fatalf("template variable query %s: %v", v.Query, err)
			}
			q = obj.Query
		}
		exprs = append(exprs, q)
	}
	if len(exprs) < 10 {
		t.Fatalf("%d expressions in the rules and the dashboard", len(exprs))
	}
	return exprs
}

// TestMonitoringExprCheck: the check refuses a misspelt metric, a metric without the trueup
// prefix, a label its family lacks, a value no series has and a grouping label no metric
// carries, and accepts what a scrape serves.
func TestMonitoringExprCheck(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	res := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trueup_resources"}, []string{"source", "phase"})
	res.WithLabelValues("infra", "Failed").Set(1)
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "trueup_reconcile_duration_seconds"}, []string{"kind"})
	hist.WithLabelValues("K").Observe(1)
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "node_load1"})
	reg.MustRegister(res, hist, other)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		families[f.GetName()] = f
	}
	for expr, wantOK := range map[string]bool{
		`max by (source) (trueup_resources{phase="Failed"}) > 5`:                                           true,
		`histogram_quantile(0.95, sum by (le, kind) (rate(trueup_reconcile_duration_seconds_bucket[5m])))`: true,
		`count(up{job="trueup"} == 1) > bool 1e3`:                                                          true,
		`max by (namespace) (trueup_resources{source=~"$source"})`:                                         true,
		`label_values(trueup_resources, source)`:                                                           true,
		`node_load1 > 0`:                                                                                   true, // served, whatever its prefix
		`max(trueup_resource)`:                                                                             false,
		`max(node_load5)`:                                                                                  false,
		`max by (source) (trueup_resources{phse="Failed"})`:                                                false,
		`max by (source) (trueup_resources{phase="Faild"})`:                                                false,
		`max by (sorce) (trueup_resources)`:                                                                false,
		`label_values(trueup_resources, sorce)`:                                                            false,
		`sum(rate(trueup_reconcile_duration_seconds_total[5m]))`:                                           false,
		`time() > 5`: false,
	} {
		if problems := checkExpr(families, expr); (len(problems) == 0) != wantOK {
			t.Errorf("%s: problems %v, want ok %v", expr, problems, wantOK)
		}
	}
}
