package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// numberedLine is a line of a numbered list ("1. …" or "1) …").
var numberedLine = regexp.MustCompile(`^\s*[0-9]+[.)]\s`)

// whyAnswer is what GET …/timeline and `trueup why -o json` answer.
type whyAnswer struct {
	Phase    string `json:"phase"`
	Blocking []struct {
		Reason  string     `json:"reason"`
		Message string     `json:"message"`
		Until   *time.Time `json:"until"`
	} `json:"blocking"`
	Entries []struct {
		Kind     string `json:"kind"`
		Reason   string `json:"reason"`
		Revision string `json:"revision"`
	} `json:"entries"`
}

// blockers lists a's blocking reasons, one a line.
func (a whyAnswer) blockers() string {
	var b strings.Builder
	for i, x := range a.Blocking {
		fmt.Fprintf(&b, "\n  %d. %s until %v: %q", i+1, x.Reason, x.Until, x.Message)
	}
	return b.String()
}

// TestWhyEndToEnd is the acceptance of `trueup why` with the real binary: orders (a Service)
// depends on core (a Network), both in production under the deny window freeze (open 30
// minutes), and services also under service-freeze (open 2 hours): orders is blocked by its
// window (until the later end) and by its dependency (until core's window ends); the window
// comes first, as it opens later. The CLI's text and -o json, and the API, say so.
func TestWhyEndToEnd(t *testing.T) {
	t.Parallel()
	actions, log := holdAction(t, t.TempDir(), "")
	now := time.Now().UTC()
	open := now.Truncate(time.Minute)
	coreEnd, ordersEnd := open.Add(30*time.Minute), open.Add(2*time.Hour)
	schedule, short := windowOpeningNow(now, coreEnd)
	_, long := windowOpeningNow(now, ordersEnd)
	g := startGate(t, map[string]string{
		"types.yaml":  holdType("Network", "") + "---\n" + holdType("Service", ""),
		"core.yaml":   holdResource("Network", "production", "core", "", "{cidr: 10.0.0.0/16}"),
		"orders.yaml": holdResource("Service", "production", "orders", "dependsOn:\n  - {kind: Network, name: core}\n", "{replicas: 2}"),
	}, actions, fmt.Sprintf(`windows:
  - {name: freeze, kind: deny, schedule: %q, duration: %s, match: {namespaces: [production]}, allowOperators: true}
  - {name: service-freeze, kind: deny, schedule: %q, duration: %s, match: {kinds: [Service]}}
`, schedule, short, schedule, long))
	const core, orders = "production/Network/core", "production/Service/orders"
	commit := g.head()
	g.atRevision(commit)
	g.eventually("core held by freeze", func() (bool, string) {
		if got := calls(t, log, "", "core"); len(got) > 0 {
			t.Fatalf("the action of core was called while freeze held it: %q", got)
		}
		r := g.resource(core)
		st, reason, msg := r.condition("Reconciling")
		return st == "True" && reason == "WindowClosed", fmt.Sprintf("phase %s, Reconciling=%s %s %q, want True WindowClosed%s", r.Status.Phase, st, reason, msg, r.err)
	})
	g.eventually("orders known", func() (bool, string) { return g.found(orders, 200) })

	check := func(from string, a whyAnswer) {
		t.Helper()
		if len(a.Blocking) != 2 || a.Blocking[0].Reason != "Window" || a.Blocking[1].Reason != "Dependency" {
			t.Errorf("%s: want blocking Window then Dependency:%s", from, a.blockers())
			return
		}
		w, d := a.Blocking[0], a.Blocking[1]
		if !strings.Contains(w.Message, "change window") || !strings.Contains(w.Message, ordersEnd.Format(time.RFC3339)) || w.Until == nil || !w.Until.Equal(ordersEnd) {
			t.Errorf("%s: the window blocker: want a change window until %s:%s", from, ordersEnd.Format(time.RFC3339), a.blockers())
		}
		if !strings.Contains(d.Message, "core") || d.Until == nil || !d.Until.Equal(coreEnd) {
			t.Errorf("%s: the dependency blocker: want core, expected until its window ends at %s:%s", from, coreEnd.Format(time.RFC3339), a.blockers())
		}
	}

	out, err := g.cli(g.dba, "why", "Service/orders", "-n", "production")
	if err != nil {
		t.Fatalf("trueup why Service/orders: %v\n%s", err, out)
	}
	t.Logf("trueup why:\n%s", out)
	var numbered []string
	if _, blocked, ok := strings.Cut(out, "Blocked by:"); ok {
		for _, l := range strings.Split(blocked, "\n") {
			if numberedLine.MatchString(l) {
				numbered = append(numbered, strings.TrimSpace(l))
			}
		}
	}
	if len(numbered) < 2 || !strings.Contains(numbered[0], "freeze") || strings.Contains(numbered[0], "core") || !strings.Contains(numbered[1], "core") {
		t.Errorf("trueup why Service/orders: want \"Blocked by:\" with the window first, then the dependency core; numbered lines %q\n%s", numbered, out)
	}

	out, err = g.cli(g.dba, "why", "Service/orders", "-n", "production", "-o", "json")
	var cliAnswer whyAnswer
	if err != nil || json.Unmarshal([]byte(out), &cliAnswer) != nil {
		t.Fatalf("trueup why -o json: %v\n%s", err, out)
	}
	check("trueup why -o json", cliAnswer)

	code, body := g.api("GET", "/api/v1/resources/"+orders+"/timeline", g.dba, nil)
	var apiAnswer whyAnswer
	if err := json.Unmarshal(body, &apiAnswer); code != 200 || err != nil {
		t.Fatalf("GET %s/timeline: %d %v %s", orders, code, err, body)
	}
	check("GET timeline", apiAnswer)
	var committed bool
	for _, e := range apiAnswer.Entries {
		// Commit entries name the revision as the rest of the API shows it: its first 12
		// characters.
		committed = committed || e.Kind == "commit" && len(e.Revision) >= 7 && strings.HasPrefix(commit, e.Revision)
	}
	if !committed {
		t.Errorf("GET timeline: no commit entry at %s: %s", commit, body)
	}
	for _, name := range []string{"core", "orders"} {
		if got := calls(t, log, "", name); len(got) != 0 {
			t.Errorf("the action of %s was called under the freeze: %q", name, got)
		}
	}
}
