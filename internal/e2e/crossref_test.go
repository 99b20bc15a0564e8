package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/execaction"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/crossref"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
)

// TestCrossNamespaceGrantRemovedStalls: staging/b reads production/a's size under a grant; its
// resolved spec records that spec.size came from production. When the grant goes (a reload),
// b stalls at its next reconcile with ingest's message; when it comes back, b is Ready again.
func TestCrossNamespaceGrantRemovedStalls(t *testing.T) {
	e := setup(t, options{})
	grant := []config.ReferenceExpose{{Namespace: "production", Kinds: []string{"Database"}, Outputs: []string{"size"},
		To: []config.ReferenceTo{{Namespace: "staging"}}}}
	var grants atomic.Pointer[[]config.ReferenceExpose]
	grants.Store(&grant)
	check := func(from string, target graph.ID, outputs []string) error {
		return crossref.Check(*grants.Load(), from, target, outputs)
	}
	sy := syncer.New(e.store, syncer.Options{Name: "infra", Source: e.src, Interval: time.Hour, Prune: true, Replica: "test",
		CheckReference: check}, e.log)
	e.commit(map[string]string{"manifests/types.yaml": dbType, "manifests/a.yaml": dbResource("production", "a", 7),
		"manifests/b.yaml": strings.Replace(dbResource("staging", "b", 0), "size: 0", `size: "${{ Database/production/a.outputs.size }}"`, 1)}, "a and b")
	if _, err := sy.SyncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.startReconciler("r1", reconciler.Options{CheckReference: check, BackoffInitial: 100 * time.Millisecond, BackoffMax: 400 * time.Millisecond})
	e.waitPhase("Ready", 1, "production/a", "staging/b")
	n, err := e.store.ResourceNeighbours(context.Background(), store.Everything, "staging", "Database", "b")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(n.ResolvedSpec), `"size": 7`) || fmt.Sprint(n.ResolvedOrigins) != "map[spec.size:[production]]" {
		t.Fatalf("resolved spec %s, origins %v", n.ResolvedSpec, n.ResolvedOrigins)
	}

	grants.Store(&[]config.ReferenceExpose{})
	if _, err := e.store.RequeueCrossNamespace(context.Background()); err != nil {
		t.Fatal(err)
	}
	const want = "reference to Database/production/a outputs size crosses from namespace staging to production without a grant: the controller config's references.expose needs {namespace: production, kinds: [Database], outputs: [size], to: [{namespace: staging}]}"
	e.eventually(20*time.Second, "b Stalled", func() (bool, string) {
		r, _ := e.resource("staging", "Database", "b")
		c, _ := status.Get(r.Status.Conditions, status.Stalled)
		return c.Status == status.True && strings.Contains(c.Message, want), r.Status.Phase + ": " + r.Status.Message
	})
	if n, _ := e.store.ResourceNeighbours(context.Background(), store.Everything, "staging", "Database", "b"); n.ResolvedSpec != nil || n.ResolvedOrigins != nil {
		t.Fatalf("a refused resolution keeps the resolved spec %s (origins %v)", n.ResolvedSpec, n.ResolvedOrigins)
	}
	if r, _ := e.resource("production", "Database", "a"); r.Status.Phase != "Ready" {
		t.Fatalf("production/a is %s", r.Status.Phase)
	}

	grants.Store(&grant)
	if _, err := e.store.RequeueCrossNamespace(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "staging/b")
}

// TestCrossNamespaceValueScrubbedFromMessages: staging/b reads production/a's host under a
// grant and its action fails quoting its whole input. The value is "***" in b's message,
// conditions, history and events (read in staging), while b's call got the real value.
func TestCrossNamespaceValueScrubbedFromMessages(t *testing.T) {
	e := setup(t, options{})
	dir := t.TempDir()
	script := filepath.Join(dir, "echo.sh")
	got := filepath.Join(dir, "stdin")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
req="$(cat)"
if [ "$TRUEUP_NAMESPACE" = production ]; then
  printf '{"done": true, "outputs": {"host": "prodhost-abc123.internal"}}\n'
  exit 0
fi
printf '%s' "$req" > "$STDIN_FILE"
echo "provider refused the request: $req" >&2
exit 3
`), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"command": []string{script}, "timeout": "30s", "env": map[string]string{"STDIN_FILE": got}})
	act, err := execaction.New(cfg, actions.Env{Name: "provision", BaseDir: dir, Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	e.acts["provision"] = act
	grant := []config.ReferenceExpose{{Namespace: "production", Kinds: []string{"Database"}, Outputs: []string{"host"},
		To: []config.ReferenceTo{{Namespace: "staging"}}}}
	check := func(from string, target graph.ID, outputs []string) error {
		return crossref.Check(grant, from, target, outputs)
	}
	sy := syncer.New(e.store, syncer.Options{Name: "infra", Source: e.src, Interval: time.Hour, Prune: true, Replica: "test",
		CheckReference: check}, e.log)
	e.commit(map[string]string{"manifests/types.yaml": dbType, "manifests/a.yaml": dbResource("production", "a", 7),
		"manifests/b.yaml": strings.Replace(dbResource("staging", "b", 3), "size: 3", "size: 3\n  engine: \"${{ Database/production/a.outputs.host }}\"", 1)}, "a and b")
	if _, err := sy.SyncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.startReconciler("r1", reconciler.Options{CheckReference: check, BackoffInitial: time.Minute, BackoffMax: time.Minute})
	e.eventually(20*time.Second, "b failed", func() (bool, string) {
		r, _ := e.resource("staging", "Database", "b")
		return r.Status.Phase == "Failed" && strings.Contains(r.Status.Message, "provider refused"), r.Status.Phase + ": " + r.Status.Message
	})
	if b, err := os.ReadFile(got); err != nil || !strings.Contains(string(b), `"engine":"prodhost-abc123.internal"`) {
		t.Fatalf("b's call got %s (%v), want the real host", b, err)
	}
	const value = "prodhost-abc123"
	r, _ := e.resource("staging", "Database", "b")
	texts := []string{r.Status.Message}
	for _, c := range r.Status.Conditions {
		texts = append(texts, c.Message)
	}
	hist, err := e.store.ListHistory(context.Background(), "staging", "Database", "b", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		texts = append(texts, h.Message)
	}
	evs, err := e.store.ListEvents(context.Background(), store.InNamespaces("staging"), store.EventFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		texts = append(texts, ev.Message)
	}
	for _, s := range texts {
		if strings.Contains(s, value) {
			t.Errorf("a message read in staging holds production's value: %s", s)
		}
	}
	if !strings.Contains(r.Status.Message, `"engine":"***"`) {
		t.Errorf("message %q, want the value as ***", r.Status.Message)
	}
}
