package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
