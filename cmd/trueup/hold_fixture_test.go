package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/wire"
)

// holdScript is the exec action of the tests of what holds a change back (change windows,
// drift modes, a pinned source, why): it logs each call to the file $1 as "OPERATION
// START REQUEST" (START: when the command began, RFC 3339 with nanoseconds, UTC) and
// succeeds. With $2 = drift, observe reports that /tags/team was changed by hand
// (expected "checkout", found "legacy") until a reconcile after the first one corrects it.
const holdScript = `#!/bin/sh
start=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
req=$(cat)
printf '%s %s %s\n' "$TRUEUP_OPERATION" "$start" "$req" >> "$1"
case "$TRUEUP_OPERATION" in
observe)
  applied=$(grep -c "^reconcile .*\"name\":\"$TRUEUP_NAME\"" "$1")
  if [ "$2" = drift ] && [ "$applied" -lt 2 ]; then
    echo '{"inSync": false, "message": "tags changed by hand", "drift": [{"path": "/tags/team", "expected": "checkout", "actual": "legacy"}]}'
  else
    echo '{"inSync": true}'
  fi ;;
*)
  echo '{"done": true}' ;;
esac
`

// holdAction writes holdScript under dir and returns the actions block of one exec
// instance named hold that runs it with its log, and the log's path; mode is holdScript's $2.
func holdAction(t *testing.T, dir, mode string) (actions, log string) {
	t.Helper()
	script, log := filepath.Join(dir, "hold.sh"), filepath.Join(dir, "calls.log")
	writeTestFile(t, script, holdScript)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("actions:\n  - {name: hold, type: exec, config: {command: [%q, %q, %q]}}", script, log, mode), log
}

// callStarts are the start times of holdScript's calls for the resource name whose operation
// is op, in the order of the log.
func callStarts(t *testing.T, log, op, name string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, l := range calls(t, log, op, name) {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("call log line %q: want OPERATION START REQUEST", l)
		}
		at, err := time.Parse(time.RFC3339Nano, f[1])
		if err != nil {
			t.Fatalf("call log line %q: %v", l, err)
		}
		out = append(out, at)
	}
	return out
}

// holdType is a ResourceType of group hold.example.com handled by the hold action, with
// extra lines added under its spec (e.g. "  resyncInterval: 1s\n").
func holdType(kind, extra string) string {
	return manifesttest.TypeDoc(kind, "hold.example.com", "{type: object}", "hold") + extra
}

// holdResource is a resource of a holdType kind in namespace ns, with extra lines (e.g.
// dependsOn) before its spec.
func holdResource(kind, ns, name, extra, spec string) string {
	return fmt.Sprintf("apiVersion: hold.example.com/v1\nkind: %s\nmetadata: {name: %s, namespace: %s}\n%sspec: %s\n", kind, name, ns, extra, spec)
}

// history is the resource's reconcile attempts as the API lists them, newest first.
func (g *gate) history(ref string) []wire.HistoryEntry {
	g.t.Helper()
	code, body := g.api("GET", "/api/v1/resources/"+ref+"/history", g.dba, nil)
	var page struct{ Items []wire.HistoryEntry }
	if err := json.Unmarshal(body, &page); code != 200 || err != nil {
		g.t.Fatalf("GET %s/history: %d %v %s", ref, code, err, body)
	}
	return page.Items
}

// results are the results of attempts, newest first, with their messages.
func results(h []wire.HistoryEntry) string {
	var b strings.Builder
	for _, e := range h {
		fmt.Fprintf(&b, "\n  %s %s (%s) started %s: %q", e.Operation, e.Result, e.Trigger, e.StartedAt.Format(time.RFC3339Nano), e.Message)
	}
	return b.String()
}

// found reports whether GET of the resource ref answers code, and what it answered.
func (g *gate) found(ref string, code int) (bool, string) {
	got, body := g.api("GET", "/api/v1/resources/"+ref, g.dba, nil)
	return got == code, fmt.Sprintf("GET %s: %d %s", ref, got, body)
}

// head is the commit the gate's repository's main branch is at.
func (g *gate) head() string {
	g.t.Helper()
	out, err := exec.Command("git", "-C", g.repo, "rev-parse", "HEAD").CombinedOutput()
	if err != nil {
		g.t.Fatalf("git rev-parse HEAD: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// pinnedSource is a source as GET /api/v1/sources/NAME answers it, with the pin.
type pinnedSource struct {
	Revision              string             `json:"revision"`
	LastAttemptedRevision string             `json:"lastAttemptedRevision"`
	Errors                []wire.SourceError `json:"errors"`
	PendingRevision       string             `json:"pendingRevision"`
	Pinned                *struct {
		Revision, Actor, Reason string
	} `json:"pinned"`
}

// source reads the source name through the API as dba.
func (g *gate) source(name string) (pinnedSource, string) {
	g.t.Helper()
	code, body := g.api("GET", "/api/v1/sources/"+name, g.dba, nil)
	var s pinnedSource
	if err := json.Unmarshal(body, &s); code != 200 || err != nil {
		return s, fmt.Sprintf("GET source %s: %d %v %s", name, code, err, body)
	}
	return s, string(body)
}

// atRevision waits until the source infra has applied rev; a revision it rejected fails the
// test at once with its errors.
func (g *gate) atRevision(rev string) {
	g.t.Helper()
	g.eventually("infra at "+rev, func() (bool, string) {
		s, raw := g.source("infra")
		if s.LastAttemptedRevision == rev && len(s.Errors) > 0 {
			g.t.Fatalf("source infra rejected %s: %+v", rev, s.Errors)
		}
		return s.Revision == rev, fmt.Sprintf("want revision %s: %s", rev, raw)
	})
}

// windowOpeningNow is the schedule of a daily window that opened at the start of the current
// UTC minute, and the duration that makes it close at end (a whole second).
func windowOpeningNow(now, end time.Time) (schedule string, duration time.Duration) {
	open := now.UTC().Truncate(time.Minute)
	return fmt.Sprintf("%d %d * * *", open.Minute(), open.Hour()), end.Sub(open)
}
