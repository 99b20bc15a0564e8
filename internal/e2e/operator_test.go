package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

func storeFilter(ns, name string) store.EventFilter {
	return store.EventFilter{Namespace: ns, Kind: "Database", Name: name}
}

// post sends body to the first replica's API as the operator token ci-bot.
func (e *env) post(path, body string) int {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.api+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// callsOf counts the action's successful calls for ns/Database/name.
func (e *env) callsOf(ns, name string) int {
	n := 0
	for _, c := range e.calls() {
		if c.id == ns+"/Database/"+name && !c.failed {
			n++
		}
	}
	return n
}

// TestManualReconcile: an operator's reconcile runs a Ready resource (resync off), recorded
// in history as trigger manual with the token's name, and as an event. It runs within tens
// of milliseconds on an idle machine (the log line says how long it took); the wait allows
// for a machine running every package's tests at once, where a second was once too short
// (claim_latency_p99 in make bench measures the latency).
func TestManualReconcile(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/a")
	before := e.callsOf("prod", "a")
	asked := time.Now()
	if code := e.post("/api/v1/resources/prod/database/a/reconcile", ""); code != http.StatusAccepted {
		t.Fatalf("reconcile = %d", code)
	}
	e.eventually(10*time.Second, "the manual attempt in history", func() (bool, string) {
		h, err := e.store.ListHistory(context.Background(), "prod", "Database", "a", 10)
		if err != nil || len(h) == 0 {
			return false, fmt.Sprint(err)
		}
		return h[0].Trigger == "manual" && h[0].Actor == "token:ci-bot" && h[0].Result == "Succeeded",
			fmt.Sprintf("%s %s %s", h[0].Trigger, h[0].Actor, h[0].Result)
	})
	t.Logf("manual reconcile ran %s after the request", time.Since(asked).Round(time.Millisecond))
	if n := e.callsOf("prod", "a"); n != before+1 {
		t.Errorf("%d calls after the manual reconcile, want %d", n, before+1)
	}
	if evs, _ := e.store.ListEvents(context.Background(), store.Everything, storeFilter("prod", "a")); !hasEvent(evs, "Normal", "ManualReconcile", "token:ci-bot") {
		t.Errorf("no ManualReconcile event by token:ci-bot: %+v", evs)
	}
}

// TestSuspendHoldsChangesAndDeletes: a suspended resource takes in its new spec (generation
// grows) and its removal from Git, but the action is not called until resume; a resource
// beside it carries on (and proves the reconciler ran meanwhile).
func TestSuspendHoldsChangesAndDeletes(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1),
		"manifests/b.yaml": dbResource("prod", "b", 1), "manifests/c.yaml": dbResource("prod", "c", 1)}, "three")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/a", "prod/b", "prod/c")
	for _, n := range []string{"a", "b"} {
		if code := e.post("/api/v1/resources/prod/Database/"+n+"/suspend", `{"reason":"migrating by hand"}`); code != http.StatusOK {
			t.Fatalf("suspend %s = %d", n, code)
		}
	}
	callsA, callsB := e.callsOf("prod", "a"), e.callsOf("prod", "b")
	e.commit(map[string]string{"manifests/a.yaml": dbResource("prod", "a", 2), "manifests/b.yaml": "", "manifests/c.yaml": dbResource("prod", "c", 2)}, "change a and c, drop b")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 2, "prod/c")
	a, _ := e.resource("prod", "Database", "a")
	if a.Metadata.Generation != 2 || a.Status.ObservedGeneration != 1 || !status.IsSuspended(a.Status.Conditions) {
		t.Errorf("a while suspended: generation %d observed %d conditions %+v", a.Metadata.Generation, a.Status.ObservedGeneration, a.Status.Conditions)
	}
	if err := status.Check(status.State{Phase: a.Status.Phase, Conditions: a.Status.Conditions, ObservedGeneration: a.Status.ObservedGeneration}, 2, true); err != nil {
		t.Errorf("a while suspended: %v", err)
	}
	b, code := e.resource("prod", "Database", "b")
	if code != http.StatusOK || b.Metadata.DeletionTimestamp == nil {
		t.Errorf("b while suspended: %d, deletion %v", code, b.Metadata.DeletionTimestamp)
	}
	if n := e.callsOf("prod", "a"); n != callsA {
		t.Errorf("a's action called %d times while suspended", n-callsA)
	}
	if n := e.callsOf("prod", "b"); n != callsB {
		t.Errorf("b's action called %d times while suspended", n-callsB)
	}

	if code := e.post("/api/v1/resources/prod/Database/a/resume", ""); code != http.StatusOK {
		t.Fatalf("resume a = %d", code)
	}
	e.waitPhase("Ready", 2, "prod/a")
	if _, code := e.resource("prod", "Database", "b"); code != http.StatusOK {
		t.Errorf("b deleted while still suspended: %d", code)
	}
	if code := e.post("/api/v1/resources/prod/Database/b/resume", ""); code != http.StatusOK {
		t.Fatalf("resume b = %d", code)
	}
	e.eventually(10*time.Second, "b deleted after resume", func() (bool, string) {
		_, code := e.resource("prod", "Database", "b")
		return code == http.StatusNotFound, fmt.Sprint(code)
	})
}

// TestSourceSuspendHoldsRevisions: a suspended source validates a new revision and reports
// it as pending, applies nothing, does not fetch it again, and applies it on resume.
func TestSourceSuspendHoldsRevisions(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	ctx := context.Background()
	rev1 := e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	if _, err := e.syncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if code := e.post("/api/v1/sources/infra/suspend", `{"reason":"release freeze"}`); code != http.StatusOK {
		t.Fatalf("suspend source = %d", code)
	}
	rev2 := e.commit(map[string]string{"manifests/a.yaml": dbResource("prod", "a", 2), "manifests/c.yaml": dbResource("prod", "c", 1)}, "two")
	out, err := e.syncOnce(ctx)
	if err != nil || !out.Held || out.Revision != rev2 {
		t.Fatalf("sync while suspended = %+v, %v; want held %s", out, err, rev2)
	}
	src, _ := e.store.GetSource(ctx, "infra")
	if src.Revision != rev1 || src.PendingRevision != rev2 || !src.Suspended || !status.IsSuspended(src.Conditions) {
		t.Errorf("source while suspended: revision %s pending %s suspended %v conditions %+v", src.Revision, src.PendingRevision, src.Suspended, src.Conditions)
	}
	if a, _ := e.resource("prod", "Database", "a"); a.Metadata.Generation != 1 {
		t.Errorf("a's generation %d: the held revision was applied", a.Metadata.Generation)
	}
	if _, code := e.resource("prod", "Database", "c"); code != http.StatusNotFound {
		t.Errorf("c: %d, want 404 (not applied)", code)
	}
	if !hasEvent(e.sourceEvents(), "Normal", "RevisionHeld", rev2[:7]) {
		t.Errorf("no RevisionHeld event: %+v", e.sourceEvents())
	}
	if out, err := e.syncOnce(ctx); err != nil || !out.Unchanged {
		t.Errorf("second sync while suspended = %+v, %v; want unchanged (nothing fetched again)", out, err)
	}

	if code := e.post("/api/v1/sources/infra/resume", ""); code != http.StatusOK {
		t.Fatalf("resume source = %d", code)
	}
	// The resume makes the source's holder apply the held revision, with no sync asked.
	e.eventually(10*time.Second, "the held revision applied on resume", func() (bool, string) {
		src, _ = e.store.GetSource(ctx, "infra")
		return src.Revision == rev2, src.Revision
	})
	if src.Revision != rev2 || src.PendingRevision != "" || src.Suspended {
		t.Errorf("source after resume: revision %s pending %q suspended %v", src.Revision, src.PendingRevision, src.Suspended)
	}
	if a, _ := e.resource("prod", "Database", "a"); a.Metadata.Generation != 2 {
		t.Errorf("a's generation %d after resume, want 2", a.Metadata.Generation)
	}
}

// TestReconcileRequestedAnnotation: changing trueup.dev/reconcile-requested-at in Git runs the
// resource now though its spec is unchanged: trigger manual, actor git:<revision>.
func TestReconcileRequestedAnnotation(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/a")
	before := e.callsOf("prod", "a")
	annotated := strings.Replace(dbResource("prod", "a", 1), "  namespace: prod\n",
		"  namespace: prod\n  annotations: {trueup.dev/reconcile-requested-at: \"2026-11-24T00:00:00Z\"}\n", 1)
	rev := e.commit(map[string]string{"manifests/a.yaml": annotated}, "reconcile a please")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.eventually(5*time.Second, "the annotation's attempt in history", func() (bool, string) {
		h, _ := e.store.ListHistory(context.Background(), "prod", "Database", "a", 10)
		if len(h) == 0 {
			return false, "no history"
		}
		actor, ok := strings.CutPrefix(h[0].Actor, "git:")
		return h[0].Trigger == "manual" && ok && len(actor) >= 7 && strings.HasPrefix(rev, actor), h[0].Trigger + " " + h[0].Actor
	})
	a, _ := e.resource("prod", "Database", "a")
	if a.Metadata.Generation != 1 || e.callsOf("prod", "a") != before+1 {
		t.Errorf("generation %d, %d new calls; want 1 and 1", a.Metadata.Generation, e.callsOf("prod", "a")-before)
	}
	// The same value again (another meta change) runs nothing.
	e.commit(map[string]string{"manifests/a.yaml": strings.Replace(annotated, "  name: a\n", "  name: a\n  labels: {team: x}\n", 1)}, "label")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var due bool
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT run_at IS NOT NULL OR manual_requested_by IS NOT NULL
		FROM resources JOIN resource_queue USING (id) WHERE name = 'a'`).Scan(&due); err != nil || due {
		t.Errorf("a relabelled with the same requested-at is due again (%v)", err)
	}
}
