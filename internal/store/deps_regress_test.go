package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
)

// A deleting resource waiting for dependents whose manifest comes back keeps DependentsDeleted=False.
func TestDepsRegressionRestoredKeepsDependentsDeleted(t *testing.T) {
	st := openTest(t, "s")
	apply := func(rev string, set *manifest.Set) { t.Helper(); applyRefreshed(t, st, "s", rev, set) }
	apply("r1", chainSet())
	for _, out := range []map[string]any{{"subnet": "s-1"}, {"endpoint": "db:5432"}, {}} {
		_, cs := claimNames(t, st)
		succeed(t, st, cs[0], out)
	}
	apply("r2", chainSet("Network")) // Network removed while Database depends on it
	ph, c := condition(t, st, "Network", status.DependentsDeleted)
	t.Logf("Network after removal: %s %+v", ph, c)
	apply("r3", chainSet()) // restored
	ph, c = condition(t, st, "Network", status.DependentsDeleted)
	t.Logf("Network after restore: %s %+v", ph, c)
	_, cs := claimNames(t, st)
	for _, x := range cs {
		succeed(t, st, x, map[string]any{"subnet": "s-1"})
	}
	ph, c = condition(t, st, "Network", status.DependentsDeleted)
	t.Logf("Network after reconcile: %s %+v", ph, c)
	if c.Status == status.False {
		t.Errorf("live Ready resource still shows DependentsDeleted=False")
	}
}

// Changing which output a dependent references (a spec change) is recorded as trigger dependency.
func TestDepsRegressionSpecChangeTrigger(t *testing.T) {
	st := openTest(t, "s")
	apply := func(rev string, set *manifest.Set) { t.Helper(); applyRefreshed(t, st, "s", rev, set) }
	apply("r1", chainSet("App"))
	for _, out := range []map[string]any{{"subnet": "s-1", "other": "o"}, {"endpoint": "db"}} {
		_, cs := claimNames(t, st)
		succeed(t, st, cs[0], out)
	}
	set := chainSet("App")
	for i := range set.Resources {
		if set.Resources[i].Kind == "Database" {
			set.Resources[i].Spec = json.RawMessage(`{"subnet":"${{ Network/network.outputs.other }}"}`)
			set.Resources[i].SpecHash = "changed"
			set.Resources[i].DependsOn = []manifest.Dependency{{Target: graph.ID{Kind: "Network", Namespace: "prod", Name: "network"}, Explicit: true, Outputs: []string{"other"}}}
		}
	}
	apply("r2", set)
	_, cs := claimNames(t, st)
	for _, c := range cs {
		t.Logf("claimed %s dependencyBy=%q gen=%d obs=%d", c.Kind, c.DependencyBy, c.Generation, c.ObservedGeneration)
		if c.Kind == "Database" && c.DependencyBy != "" {
			t.Errorf("spec change claimed with DependencyBy=%q (trigger dependency, event DependencyChanged)", c.DependencyBy)
		}
	}
	_ = strings.ToLower
}

// A type's action change (requeueKind) gives Network a new generation, but its dependents are
// not refreshed: Database stays unblocked while the claim gate refuses it.
func TestDepsRegressionRequeueKindNoRefresh(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	typ := func(action string) manifest.ResourceType {
		return manifest.ResourceType{Name: "Network", Group: "example.com", Action: manifest.ActionRef{Name: action},
			Spec: json.RawMessage(`{}`), Hash: "h-" + action, File: "types.yaml", Line: 1}
	}
	apply := func(rev string, set *manifest.Set) {
		t.Helper()
		t.Logf("%s refresh %v", rev, applyRefreshed(t, st, "s", rev, set).Refresh)
	}
	set := chainSet("App")
	set.Types = []manifest.ResourceType{typ("a")}
	apply("r1", set)
	for _, out := range []map[string]any{{"subnet": "s-1"}, {"endpoint": "db"}} {
		_, cs := claimNames(t, st)
		succeed(t, st, cs[0], out)
	}
	// make Database due (its resync) and change Network's action
	st.pool.Exec(ctx, `UPDATE resource_queue SET run_at = now() WHERE id IN (SELECT id FROM resources WHERE kind = 'Database')`)
	set = chainSet("App")
	set.Types = []manifest.ResourceType{typ("b")}
	apply("r2", set)
	var blocked bool
	st.pool.QueryRow(ctx, `SELECT blocked FROM resources JOIN resource_queue USING (id) WHERE kind = 'Database'`).Scan(&blocked)
	stale, _ := st.StaleWaits(ctx, 100)
	next, _ := st.NextDue(ctx)
	ph, c := condition(t, st, "Database", status.DependenciesReady)
	t.Logf("Database blocked=%v stale=%v nextDue=%v cond=%s %+v", blocked, stale, next, ph, c)
	kinds, _ := claimNames(t, st)
	t.Logf("claimed %v", kinds)
	if !blocked {
		t.Errorf("Database not blocked after its dependency's requeue (NextDue says due; claims find nothing until the sweep)")
	}
}

// A dependent dropping its dependency (edges removed) does not refresh the old target that
// waits, deleting, for it: the delete stays blocked until the maintenance sweep.
func TestDepsRegressionDroppedEdgeNoRefreshOfTarget(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	apply := func(rev string, set *manifest.Set) {
		t.Helper()
		t.Logf("%s refresh %v", rev, applyRefreshed(t, st, "s", rev, set).Refresh)
	}
	apply("r1", chainSet("App"))
	for _, out := range []map[string]any{{"subnet": "s-1"}, {"endpoint": "db"}} {
		_, cs := claimNames(t, st)
		succeed(t, st, cs[0], out)
	}
	apply("r2", chainSet("App", "Network"))
	set := chainSet("App", "Network")
	set.Resources[0].Spec = json.RawMessage(`{"subnet":"fixed"}`)
	set.Resources[0].SpecHash = "fixed"
	set.Resources[0].DependsOn = nil
	apply("r3", set)
	var blocked bool
	st.pool.QueryRow(ctx, `SELECT blocked FROM resources JOIN resource_queue USING (id) WHERE kind = 'Network'`).Scan(&blocked)
	ph, c := condition(t, st, "Network", status.DependentsDeleted)
	kinds, _ := claimNames(t, st)
	t.Logf("Network blocked=%v %s %+v; claimed %v", blocked, ph, c, kinds)
	if blocked {
		t.Errorf("Network's delete stays blocked although nothing depends on it")
	}
}
