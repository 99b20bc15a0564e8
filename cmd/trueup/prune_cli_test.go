package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources"
)

// TestDescribeSource: describe source shows the prune settings, the counts, the conditions
// and a rejected revision's errors with file:line; get sources shows the first of them.
func TestDescribeSource(t *testing.T) {
	t.Parallel()
	a := setup(t)
	runGolden(t, a, []goldenCase{
		{"describe_source_rejected.txt", []string{"describe", "source", "platform"}},
	})
	out, _, err := a.run(t, "get", "sources")
	if err != nil || !strings.Contains(out, "queues.yaml:12: spec.size: expected integer, but got string") {
		t.Errorf("get sources does not show the rejected revision's first error: %v\n%s", err, out)
	}
	if _, _, err := a.run(t, "describe", "source"); err == nil {
		t.Error("describe source without a name accepted")
	}
	if _, _, err := a.run(t, "describe", "bucket", "x"); err == nil || !strings.Contains(err.Error(), "source NAME") {
		t.Errorf("describe KIND NAME: %v", err)
	}
	if _, _, err := a.run(t, "describe", "source", "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("describe source nope: %v", err)
	}
}

// TestPruneSkippedShown: a revision that removes every resource of infra is refused; get
// sources and describe source show the PruneSkipped condition with its numbers.
func TestPruneSkippedShown(t *testing.T) {
	t.Parallel()
	a := setup(t)
	var fs []sources.File
	for p, data := range infraFiles("500") {
		fs = append(fs, sources.File{Path: p, Data: []byte(data)})
	}
	set, err := manifest.NewLoader().Load(fs, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set.Resources = nil // every resource's manifest removed, the types kept
	res, err := a.store.ApplyRevision(context.Background(), store.ApplyParams{Source: "infra", Revision: strings.Repeat("e", 40), Set: set, Prune: true})
	if err != nil || res.PruneSkipped != "EmptyRender" {
		t.Fatalf("empty revision: %+v %v", res, err)
	}
	out, _, err := a.run(t, "get", "sources")
	if err != nil || !strings.Contains(out, "PruneSkipped (EmptyRender): revision eeeeeeeeeeee renders n") {
		t.Errorf("get sources: %v\n%s", err, out)
	}
	out, _, err = a.run(t, "describe", "source", "infra")
	for _, want := range []string{"PruneSkipped   True     EmptyRender", "not deleting the source's 5 resources",
		"Prune:           enabled, maxFraction 0.50, allowEmpty false", "Resources:       5 ("} {
		if !strings.Contains(out, want) {
			t.Errorf("describe source infra lacks %q: %v\n%s", want, err, out)
		}
	}
}

// TestSyncWaitPruneSkipped: sync --wait reports a refused prune and exits 1, though the
// source is Ready.
func TestSyncWaitPruneSkipped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		skipped bool
	}{{"refused", true}, {"pruned", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at := time.Now().UTC()
			src := wire.Source{Name: "infra", Revision: strings.Repeat("a", 40), LastSyncTime: &at,
				Conditions: []status.Condition{{Type: status.Ready, Status: status.True, Reason: "Succeeded", Message: "applied"}}}
			if tc.skipped {
				src.Conditions = append(src.Conditions, status.Condition{Type: status.PruneSkipped, Status: status.True,
					Reason: "EmptyRender", Message: "revision aaaaaaaaaaaa renders no resources: not deleting the source's 1 resource"})
			}
			srv := serveSynced(t, src, at)
			out, _, err := runCLI(t, "--server", srv.URL, "sync", "infra", "--wait")
			var code exitCode
			switch {
			case tc.skipped && (!errors.As(err, &code) || code != 1):
				t.Errorf("sync --wait with PruneSkipped: %v, want exit status 1\n%s", err, out)
			case tc.skipped && !strings.Contains(out, "PruneSkipped=True (EmptyRender): revision aaaaaaaaaaaa renders no resources"):
				t.Errorf("sync --wait does not report PruneSkipped:\n%s", out)
			case !tc.skipped && err != nil:
				t.Errorf("sync --wait of a Ready source: %v\n%s", err, out)
			}
		})
	}
}

// TestSyncWaitPending: sync --wait says what holds the pending revision back: the source's
// pin, its suspension, or both.
func TestSyncWaitPending(t *testing.T) {
	t.Parallel()
	pinned, head := strings.Repeat("1", 40), strings.Repeat("e", 40)
	for _, tc := range []struct {
		name              string
		pinned, suspended bool
		want              string
	}{
		{"pinned", true, false, "pinned at 111111111111: revision eeeeeeeeeeee is pending\n"},
		{"suspended", false, true, "suspended: revision eeeeeeeeeeee is pending\n"},
		{"both", true, true, "suspended, and pinned at 111111111111: revision eeeeeeeeeeee is pending\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at := time.Now().UTC()
			src := wire.Source{Name: "infra", Revision: pinned, LastSyncTime: &at, PendingRevision: head, Suspended: tc.suspended,
				Conditions: []status.Condition{{Type: status.Ready, Status: status.True, Reason: "Succeeded", Message: "applied"}}}
			if tc.pinned {
				src.Pinned = &wire.SourcePin{Revision: pinned, Actor: "alice", Reason: "incident"}
			}
			srv := serveSynced(t, src, at)
			out, _, err := runCLI(t, "--server", srv.URL, "sync", "infra", "--wait")
			if err != nil || !strings.HasSuffix(out, tc.want) {
				t.Errorf("sync --wait: %v\n%s\nwant a line %q", err, out, tc.want)
			}
		})
	}
}

// serveSynced serves an API whose source infra, src, synced at at: POST sync answers it was
// requested a second before.
func serveSynced(t *testing.T, src wire.Source, at time.Time) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Method + " " + r.URL.Path {
		case "POST /api/v1/sources/infra/sync":
			_ = json.NewEncoder(w).Encode(map[string]string{"action": "sync", "actor": "anonymous", "requestedAt": at.Add(-time.Second).Format(time.RFC3339Nano), "source": "infra"})
		case "GET /api/v1/sources/infra":
			_ = json.NewEncoder(w).Encode(src)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
