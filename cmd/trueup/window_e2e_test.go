package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestChangeWindowEndToEnd is the acceptance of change windows with the real binary:
//   - web (namespace production) is committed under release-freeze, a deny window open at the
//     start and closing ~20 s in: its action is not called; it is Pending, Reconciling=True
//     WindowClosed, the message naming the window and its end (RFC 3339), and a WindowClosed
//     history row says the same;
//   - cache (staging, under ops-freeze, open an hour, allowOperators) is applied while its
//     window holds it by `trueup reconcile --override-window --reason`; history and events
//     name the operator and the reason;
//   - ledger (payments, under audit-freeze, which does not allow operators): the override is
//     refused (CLI and API: 409 naming the window), nothing is called;
//   - once release-freeze closes, web is applied without another commit: its call starts after
//     the window's end, and within 2 s of it (logged: the work was due at the window's end).
//
// Not parallel: the window is ~20 s long, and the test waits for nothing else to run.
func TestChangeWindowEndToEnd(t *testing.T) {
	dir := t.TempDir()
	actions, log := holdAction(t, dir, "")
	now := time.Now().UTC()
	end := now.Add(20 * time.Second).Truncate(time.Second)
	schedule, duration := windowOpeningNow(now, end)
	hourSchedule, hour := windowOpeningNow(now, now.Truncate(time.Minute).Add(time.Hour))
	g := startGate(t, map[string]string{
		"types.yaml":  holdType("Service", ""),
		"web.yaml":    holdResource("Service", "production", "web", "", "{replicas: 2}"),
		"cache.yaml":  holdResource("Service", "staging", "cache", "", "{replicas: 1}"),
		"ledger.yaml": holdResource("Service", "payments", "ledger", "", "{replicas: 3}"),
	}, actions, fmt.Sprintf(`windows:
  - {name: release-freeze, kind: deny, schedule: %q, duration: %s, match: {namespaces: [production]}, allowOperators: true}
  - {name: ops-freeze, kind: deny, schedule: %q, duration: %s, match: {namespaces: [staging]}, allowOperators: true}
  - {name: audit-freeze, kind: deny, schedule: %q, duration: %s, match: {namespaces: [payments]}}
`, schedule, duration, hourSchedule, hour, hourSchedule, hour))
	const web, cache, ledger = "production/Service/web", "staging/Service/cache", "payments/Service/ledger"
	commit := g.head()
	endText := end.Format(time.RFC3339)
	hourEnd := now.Truncate(time.Minute).Add(time.Hour).Format(time.RFC3339)

	// held reports whether ref is Pending, Reconciling=True WindowClosed, naming window and
	// until. It fails the test at once when ref's action was called before the window closes,
	// and when the window closes before ref was seen held (then the machine is too slow for
	// this test: not a fault of trueup).
	held := func(ref, window, until string, closes time.Time) func() (bool, string) {
		return func() (bool, string) {
			name := ref[strings.LastIndex(ref, "/")+1:]
			if at := callStarts(t, log, "", name); len(at) > 0 && at[0].Before(closes) {
				t.Fatalf("%s: its action was called at %s while window %s held it (until %s): %q",
					ref, at[0].Format(time.RFC3339Nano), window, until, calls(t, log, "", name))
			}
			r := g.resource(ref)
			st, reason, msg := r.condition("Reconciling")
			ok := r.Status.Phase == "Pending" && st == "True" && reason == "WindowClosed" &&
				strings.Contains(msg, "change window "+window) && strings.Contains(msg, until)
			if !ok && time.Now().After(closes) {
				t.Fatalf("%s: window %s closed at %s before %s was seen held (phase %s, Reconciling=%s %s %q%s): the machine is too slow for a 20 s window",
					ref, window, until, ref, r.Status.Phase, st, reason, msg, r.err)
			}
			return ok, fmt.Sprintf("phase %s, Reconciling=%s %s %q, want Pending, Reconciling=True WindowClosed naming %s and %s%s",
				r.Status.Phase, st, reason, msg, window, until, r.err)
		}
	}
	g.eventually("web held by release-freeze", held(web, "release-freeze", endText, end))
	g.eventually("cache held by ops-freeze", held(cache, "ops-freeze", hourEnd, end.Add(time.Hour)))
	g.eventually("ledger held by audit-freeze", held(ledger, "audit-freeze", hourEnd, end.Add(time.Hour)))
	_, _, heldMsg := g.resource(web).condition("Reconciling")
	if st, _, _ := g.resource(web).condition("Ready"); st == "True" {
		t.Errorf("web is Ready=True while its window holds it")
	}
	var windowRow bool
	for _, h := range g.history(web) {
		windowRow = windowRow || h.Result == "WindowClosed" && h.Message == heldMsg
	}
	if !windowRow {
		t.Errorf("web's history has no WindowClosed row with the condition's message %q:%s", heldMsg, results(g.history(web)))
	}
	for _, name := range []string{"web", "cache", "ledger"} {
		if got := calls(t, log, "", name); len(got) != 0 {
			t.Errorf("the action of %s was called while its window held it: %q", name, got)
		}
	}

	// The override: cache is applied now, the operator and the reason recorded.
	if out, err := g.cli(g.ci, "reconcile", "Service/cache", "-n", "staging", "--override-window"); err == nil || !strings.Contains(out, "reason") {
		t.Errorf("trueup reconcile --override-window without --reason: %v\n%s\nwant a usage error naming --reason", err, out)
	}
	if out, err := g.cli(g.ci, "reconcile", "Service/cache", "-n", "staging", "--override-window", "--reason", "hotfix INC-42"); err != nil {
		t.Fatalf("trueup reconcile --override-window of cache: %v\n%s", err, out)
	}
	g.eventually("cache applied by the override", func() (bool, string) {
		ok, s := g.resource(cache).ready()
		return ok && len(calls(t, log, "reconcile", "cache")) == 1, fmt.Sprintf("%s; calls %q", s, calls(t, log, "", "cache"))
	})
	h := g.history(cache)
	wantPrefix := "change window ops-freeze overridden by token:ci: hotfix INC-42; "
	if len(h) == 0 || h[0].Result != "Succeeded" || h[0].Trigger != "manual" || h[0].Actor != "token:ci" || !strings.HasPrefix(h[0].Message, wantPrefix) {
		t.Errorf("cache's newest attempt: want Succeeded, trigger manual, actor token:ci, message starting %q; history:%s (actor %q)",
			wantPrefix, results(h), func() string {
				if len(h) == 0 {
					return ""
				}
				return h[0].Actor
			}())
	}
	if out, err := g.cli(g.dba, "history", "Service/cache", "-n", "staging"); err != nil || !strings.Contains(out, "manual (token:ci)") || !strings.Contains(out, "hotfix INC-42") {
		t.Errorf("trueup history of cache: want a line with manual (token:ci) and hotfix INC-42: %v\n%s", err, out)
	}
	var overridden string
	if err := g.conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(message, ' | '), '') FROM events WHERE name = 'cache' AND reason = 'WindowOverridden'`).Scan(&overridden); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(overridden, "token:ci") || !strings.Contains(overridden, "hotfix INC-42") {
		t.Errorf("cache's WindowOverridden events: %q, want one naming token:ci and hotfix INC-42", overridden)
	}

	// audit-freeze does not allow operators: refused, nothing called.
	refusal := "change window audit-freeze does not allow operators to override it"
	if out, err := g.cli(g.ci, "reconcile", "Service/ledger", "-n", "payments", "--override-window", "--reason", "month end"); err == nil || !strings.Contains(out, refusal) {
		t.Errorf("trueup reconcile --override-window of ledger: %v\n%s\nwant a refusal saying %q", err, out, refusal)
	}
	if code, body := g.api("POST", "/api/v1/resources/"+ledger+"/reconcile", g.ci, map[string]any{"overrideWindow": true, "reason": "month end"}); code != 409 || !strings.Contains(string(body), refusal) {
		t.Errorf("POST reconcile of ledger with overrideWindow: %d %s, want 409 %q", code, body, refusal)
	}

	// release-freeze closes: web is applied, without another commit, once it is over.
	g.eventually("web applied after release-freeze", func() (bool, string) {
		ok, s := g.resource(web).ready()
		return ok && len(calls(t, log, "reconcile", "web")) > 0, fmt.Sprintf("%s; calls %q", s, calls(t, log, "", "web"))
	})
	started := callStarts(t, log, "reconcile", "web")
	h = g.history(web)
	var applied *time.Time
	for i := range h {
		if h[i].Result == "Succeeded" {
			applied = &h[i].StartedAt
			if h[i].Revision != commit || h[i].Trigger == "manual" {
				t.Errorf("web's apply: revision %s trigger %s, want %s (the only commit) and no operator's trigger", h[i].Revision, h[i].Trigger, commit)
			}
		}
	}
	if applied == nil {
		t.Fatalf("web Ready with no Succeeded attempt:%s", results(h))
	}
	t.Logf("release-freeze closed at %s; web's attempt started %v after it, its action call %v after it",
		endText, applied.Sub(end), started[0].Sub(end))
	if started[0].Before(end) || applied.Before(end) {
		t.Errorf("web was applied before release-freeze closed at %s: attempt started %s, call started %s",
			endText, applied.Format(time.RFC3339Nano), started[0].Format(time.RFC3339Nano))
	}
	if d := started[0].Sub(end); d > 2*time.Second {
		t.Errorf("web's call started %v after release-freeze closed, want within 2s (its work is due at the window's end)", d)
	}
	if out, err := g.cli(g.dba, "history", "Service/web", "-n", "production"); err != nil || !strings.Contains(out, "WindowClosed") || !strings.Contains(out, "Succeeded") {
		t.Errorf("trueup history of web: want WindowClosed then Succeeded: %v\n%s", err, out)
	}

	// ledger is still held, its action never called.
	if ok, s := held(ledger, "audit-freeze", hourEnd, end.Add(time.Hour))(); !ok {
		t.Errorf("ledger after the refused override: %s", s)
	}
	if got := calls(t, log, "", "ledger"); len(got) != 0 {
		t.Errorf("the action of ledger was called under audit-freeze: %q", got)
	}
}
