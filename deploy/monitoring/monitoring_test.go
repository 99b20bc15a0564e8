package monitoring

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// promtool is run from the module proxy, at the version the CI runs.
const promtool = "github.com/prometheus/prometheus/cmd/promtool@v0.316.0"

// runbook is where every alert's runbook_url points, an anchor per alert.
const (
	runbookURL  = "https://github.com/trueup-dev/trueup/blob/main/docs/operations/alerts.md#"
	runbookPage = "../../docs/operations/alerts.md"
)

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func rules(t *testing.T) []rule {
	t.Helper()
	var doc struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	readYAML(t, "trueup-alerts.yaml", &doc)
	var out []rule
	for _, g := range doc.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatal("trueup-alerts.yaml holds no rule")
	}
	return out
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestPromtool: promtool accepts the rules (check rules) and every unit test passes (test
// rules).
func TestPromtool(t *testing.T) {
	for _, args := range [][]string{{"check", "rules", "trueup-alerts.yaml"}, {"test", "rules", "trueup-alerts_test.yaml"}} {
		// A deadline of its own, well inside the package's: go run builds promtool, quick from
		// the cache `make test-tools` fills, minutes from the module proxy on a fresh machine.
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
		cmd := exec.CommandContext(ctx, "go", append([]string{"run", promtool}, args...)...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("go run %s %s: %v; `make test-tools` builds it before the tests, from the Go module proxy\n%s",
				promtool, strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// TestAlertsShape: every alert has a severity, a summary, a description and a runbook link to
// its own section of the alerts page, and the unit tests evaluate it both firing and not.
func TestAlertsShape(t *testing.T) {
	page, err := os.ReadFile(runbookPage)
	if err != nil {
		t.Fatal(err)
	}
	headings := regexp.MustCompile(`(?m)^## (\w+)$`).FindAllStringSubmatch(string(page), -1)
	var sections []string
	for _, h := range headings {
		sections = append(sections, strings.ToLower(h[1]))
	}
	var tests struct {
		RuleFiles          []string `json:"rule_files"`
		EvaluationInterval string   `json:"evaluation_interval"`
		Tests              []struct {
			Interval       string           `json:"interval"`
			InputSeries    []map[string]any `json:"input_series"`
			AlertRuleTests []struct {
				EvalTime  string           `json:"eval_time"`
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	readYAML(t, "trueup-alerts_test.yaml", &tests)
	firing, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, r := range rules(t) {
		if r.Alert == "" {
			t.Errorf("a recording rule %q: the file holds alerts only", r.Expr)
			continue
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
		}
		for _, k := range []string{"summary", "description"} {
			if r.Annotations[k] == "" {
				t.Errorf("%s: no %s", r.Alert, k)
			}
		}
		anchor := strings.ToLower(r.Alert)
		if got := r.Annotations["runbook_url"]; got != runbookURL+anchor {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, got, runbookURL+anchor)
		}
		if !slices.Contains(sections, anchor) {
			t.Errorf("%s: %s has no section \"## %s\"", r.Alert, runbookPage, r.Alert)
		}
		if !firing[r.Alert] || !quiet[r.Alert] {
			t.Errorf("%s: unit tests firing %v, not firing %v; want both", r.Alert, firing[r.Alert], quiet[r.Alert])
		}
	}
}
