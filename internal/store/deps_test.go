package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
)

// chainSet is Network ← Database ← App in namespace prod: Database references Network's
// subnet, App references Database's endpoint; omit leaves resources out (by kind).
func chainSet(omit ...string) *manifest.Set {
	mk := func(kind, spec string, line int, deps ...manifest.Dependency) manifest.Resource {
		return depResource("prod", kind, spec, line, deps...)
	}
	set := &manifest.Set{}
	for _, r := range []manifest.Resource{
		mk("App", `{"db":"${{ Database/database.outputs.endpoint }}"}`, 1,
			manifest.Dependency{Target: graph.ID{Kind: "Database", Namespace: "prod", Name: "database"}, Outputs: []string{"endpoint"}}),
		mk("Database", `{"subnet":"${{ Network/network.outputs.subnet }}"}`, 1,
			manifest.Dependency{Target: graph.ID{Kind: "Network", Namespace: "prod", Name: "network"}, Explicit: true, Outputs: []string{"subnet"}}),
		mk("Network", `{"cidr":"10.0.0.0/16"}`, 1),
	} {
		if !slices.Contains(omit, r.Kind) {
			set.Resources = append(set.Resources, r)
		}
	}
	return set
}

// depResource is the resource of kind in namespace named after its kind (in lower case),
// with spec and dependencies, in a file of its own.
func depResource(namespace, kind, spec string, line int, deps ...manifest.Dependency) manifest.Resource {
	return manifest.Resource{APIVersion: "example.com/v1", Kind: kind, Namespace: namespace, Name: strings.ToLower(kind),
		Labels: map[string]string{}, Annotations: map[string]string{}, Spec: json.RawMessage(spec), SpecHash: spec, MetaHash: "m",
		File: strings.ToLower(kind) + ".yaml", Line: line, DependsOn: deps}
}

// applyRefreshed applies set as revision rev of source (pruning everything removed) and
// refreshes what waits, as the syncer does after the commit.
func applyRefreshed(t *testing.T, st *Store, source, rev string, set *manifest.Set) ApplyResult {
	t.Helper()
	ctx := context.Background()
	res, err := st.ApplyRevision(ctx, ApplyParams{Source: source, Revision: rev, Set: set, Prune: true, MaxPruneFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RefreshDependencies(ctx, res.Refresh); err != nil {
		t.Fatal(err)
	}
	return res
}

// claimNames claims whatever is due and returns the claimed kinds, sorted.
func claimNames(t *testing.T, st *Store) ([]string, []Claimed) {
	t.Helper()
	cs, err := st.Claim(context.Background(), "r1", 100, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range cs {
		kinds = append(kinds, c.Kind)
	}
	slices.Sort(kinds)
	return kinds, cs
}

// succeed completes c as a successful reconcile (or delete) with outputs.
func succeed(t *testing.T, st *Store, c Claimed, outputs map[string]any) {
	t.Helper()
	inputs := depInputs(t, st, c.ID) // as the reconciler resolves from them
	_, err := st.CompleteBatch(context.Background(), []Completion{{ID: c.ID, Token: c.LeaseToken, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name,
		Fn: func(cur Current) Update {
			s, removed := status.Result(status.State{Phase: cur.Phase, Conditions: cur.Conditions, ObservedGeneration: cur.ObservedGeneration},
				status.Outcome{Generation: c.Generation, CurrentGeneration: cur.Generation, Delete: c.Deleting, Deleting: cur.Deleting, Done: true}, time.Now())
			u := Update{Phase: s.Phase, Conditions: s.Conditions, ObservedGeneration: s.ObservedGeneration, Outputs: outputs, Remove: removed}
			if c.HasDeps && !c.Deleting {
				u.Resolved = &Resolved{Spec: c.Spec, Inputs: inputs}
			}
			return u
		}}})
	if err != nil {
		t.Fatal(err)
	}
}

func depInputs(t *testing.T, st *Store, id int64) string {
	deps, err := st.DependencyStates(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return graph.InputsOf(deps).Encode()
}

func condition(t *testing.T, st *Store, kind, typ string) (string, status.Condition) {
	t.Helper()
	var phase string
	var cj []byte
	if err := st.pool.QueryRow(context.Background(), `SELECT phase, conditions FROM resources WHERE kind = $1`, kind).Scan(&phase, &cj); err != nil {
		t.Fatal(err)
	}
	var conds []status.Condition
	if err := json.Unmarshal(cj, &conds); err != nil {
		t.Fatal(err)
	}
	c, _ := status.Get(conds, typ)
	return phase, c
}

func TestDependencyLifecycle(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	apply := func(rev string, set *manifest.Set) {
		t.Helper()
		applyRefreshed(t, st, "s", rev, set)
		hasDepsFollowEdges(t, st)
	}

	// Database and App first: Network does not exist yet.
	apply("r1", chainSet("Network"))
	if kinds, _ := claimNames(t, st); len(kinds) != 0 {
		t.Fatalf("claimed %v while Network is missing", kinds)
	}
	phase, c := condition(t, st, "Database", status.DependenciesReady)
	if phase != status.PhasePending || c.Status != status.False || c.Reason != status.ReasonWaitingForDependency ||
		c.Message != "waiting for Network/prod/network (not found)" {
		t.Fatalf("Database: %s %+v", phase, c)
	}

	// Network arrives: it runs alone, then Database, then App.
	apply("r2", chainSet())
	order := []string{}
	for _, out := range []map[string]any{{"subnet": "s-1"}, {"endpoint": "db:5432"}, {}} {
		kinds, cs := claimNames(t, st)
		if len(kinds) != 1 {
			t.Fatalf("claimed %v after %v, want one", kinds, order)
		}
		order = append(order, kinds[0])
		succeed(t, st, cs[0], out)
	}
	if !slices.Equal(order, []string{"Network", "Database", "App"}) {
		t.Fatalf("order %v", order)
	}
	if _, c := condition(t, st, "App", status.DependenciesReady); c.Status != status.True {
		t.Fatalf("App DependenciesReady %+v", c)
	}

	// Network's output changes: Database runs again (trigger dependency), then App, whose
	// referenced Database output changed too.
	setRunAt := func(kind string) {
		if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET run_at = now() WHERE id IN (SELECT id FROM resources WHERE kind = $1)`, kind); err != nil {
			t.Fatal(err)
		}
	}
	setRunAt("Network")
	kinds, cs := claimNames(t, st)
	if !slices.Equal(kinds, []string{"Network"}) {
		t.Fatalf("claimed %v", kinds)
	}
	succeed(t, st, cs[0], map[string]any{"subnet": "s-2"})
	kinds, cs = claimNames(t, st)
	if !slices.Equal(kinds, []string{"Database"}) || cs[0].DependencyBy != "Network/prod/network" {
		t.Fatalf("claimed %v (%+v)", kinds, cs)
	}
	succeed(t, st, cs[0], map[string]any{"endpoint": "db:5432"}) // same endpoint
	if kinds, _ = claimNames(t, st); len(kinds) != 0 {
		t.Fatalf("App ran again although the output it references did not change: %v", kinds)
	}

	// An unreferenced output of Network changes: nobody runs.
	setRunAt("Network")
	_, cs = claimNames(t, st)
	succeed(t, st, cs[0], map[string]any{"subnet": "s-2", "other": 1})
	if kinds, _ = claimNames(t, st); len(kinds) != 0 {
		t.Fatalf("claimed %v after an unreferenced output changed", kinds)
	}

	// Remove all three: App is deleted first, then Database, then Network.
	apply("r3", &manifest.Set{Resources: []manifest.Resource{{APIVersion: "example.com/v1", Kind: "Other", Namespace: "prod", Name: "x",
		Labels: map[string]string{}, Annotations: map[string]string{}, Spec: json.RawMessage(`{}`), SpecHash: "{}", MetaHash: "m", File: "x.yaml", Line: 1}}})
	kinds, cs = claimNames(t, st)
	var other Claimed
	for _, c := range cs {
		if c.Kind == "Other" {
			other = c
		}
	}
	if !slices.Equal(kinds, []string{"App", "Other"}) {
		t.Fatalf("first deletes %v, want App (and the new Other)", kinds)
	}
	if phase, c := condition(t, st, "Network", status.DependentsDeleted); phase != status.PhaseDeleting || c.Status != status.False ||
		c.Message != "waiting for dependents to be deleted first: Database/prod/database" {
		t.Fatalf("Network: %s %+v", phase, c)
	}
	succeed(t, st, other, map[string]any{})
	order = nil
	for range 3 {
		for _, c := range cs {
			if c.Kind != "Other" {
				order = append(order, c.Kind)
				succeed(t, st, c, nil)
			}
		}
		_, cs = claimNames(t, st)
	}
	if !slices.Equal(order, []string{"App", "Database", "Network"}) {
		t.Fatalf("delete order %v", order)
	}
	var n int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM resource_edges`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("edges left: %d %v", n, err)
	}
}

// hasDepsFollowEdges fails t unless every resource's has_deps says whether it has edges, as
// the list pages that read edges only for rows with has_deps rely on.
func hasDepsFollowEdges(t *testing.T, st *Store) {
	t.Helper()
	var n int
	if err := st.pool.QueryRow(context.Background(), `SELECT count(*) FROM resources r
		WHERE has_deps <> EXISTS (SELECT 1 FROM resource_edges e WHERE e.resource_id = r.id)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d resources whose has_deps disagrees with their edges", n)
	}
}

// has_deps follows the edges through applies that add dependencies, drop them (the resource
// stays) and bring them back, and with the resources depended on missing.
func TestHasDepsFollowsEdges(t *testing.T) {
	st := openTest(t, "s")
	noDeps := func() *manifest.Set {
		set := chainSet()
		for i := range set.Resources {
			set.Resources[i].DependsOn = nil
			set.Resources[i].Spec = json.RawMessage(`{"n":1}`)
			set.Resources[i].SpecHash = `{"n":1}`
		}
		return set
	}
	for i, set := range []*manifest.Set{chainSet("Network"), chainSet(), noDeps(), chainSet(), chainSet("App"), chainSet("Database")} {
		applyRefreshed(t, st, "s", fmt.Sprintf("r%d", i+1), set)
		hasDepsFollowEdges(t, st)
	}
}

func TestClaimGateWithoutRefresh(t *testing.T) {
	// The claim's own check holds when blocked is stale (a refresh that never ran).
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: chainSet(), Prune: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resource_queue SET blocked = false`); err != nil {
		t.Fatal(err)
	}
	if kinds, _ := claimNames(t, st); !slices.Equal(kinds, []string{"Network"}) {
		t.Fatalf("claimed %v", kinds)
	}
	// The sweep finds what the refresh missed.
	ids, err := st.StaleWaits(ctx, 100)
	if err != nil || len(ids) != 2 {
		t.Fatalf("stale waits %v %v", ids, err)
	}
}

// The sweep also finds a row being deleted that others still depend on, due and not marked
// as waiting (the claim's check skips it), and only that row.
func TestStaleWaitsDeletingWithDependents(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET deletion_timestamp = now() WHERE kind = 'Network'`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE resource_queue q SET blocked = false, run_at = now() FROM resources r WHERE r.id = q.id AND r.kind = 'Network'`); err != nil {
		t.Fatal(err)
	}
	var network int64
	if err := st.pool.QueryRow(ctx, `SELECT id FROM resources WHERE kind = 'Network'`).Scan(&network); err != nil {
		t.Fatal(err)
	}
	ids, err := st.StaleWaits(ctx, 100)
	if err != nil || !slices.Equal(ids, []int64{network}) {
		t.Fatalf("stale waits %v %v, want [%d]", ids, err, network)
	}
}

func TestDecideWait(t *testing.T) {
	now := time.Now()
	net := graph.ID{Kind: "Network", Namespace: "prod", Name: "core"}
	ready := status.State{Phase: status.PhaseReady, ObservedGeneration: 1, Conditions: []status.Condition{{Type: status.Ready, Status: status.True}}}
	restored := status.NewGeneration(status.Dependents(ready, "waiting for dependents to be deleted first: App/prod/web", now), 2, now)
	ran := graph.InputsOf([]graph.Dep{{Target: net, Exists: true, Ready: true, Outputs: []string{"id"}, Values: map[string]any{"id": "a"}}}).Encode()
	dep := func(ready bool, v string) []graph.Dep {
		d := graph.Dep{Target: net, Exists: true, Ready: ready, Outputs: []string{"id"}, Values: map[string]any{"id": v}}
		if !ready {
			d.Phase = "Reconciling"
		}
		return []graph.Dep{d}
	}
	tests := []struct {
		name    string
		in      WaitInput
		blocked bool
		rerun   int
		phase   string
		deps    string // DependenciesReady status ("" when absent)
		gone    bool   // DependentsDeleted absent
	}{
		{"no deps", WaitInput{State: ready, Generation: 1}, false, 0, status.PhaseReady, "", true},
		{"missing", WaitInput{State: status.Created(now), Generation: 1, Namespace: "prod", Deps: []graph.Dep{{Target: net}}}, true, 0, status.PhasePending, status.False, true},
		{"ready, same output", WaitInput{State: ready, Generation: 1, Namespace: "prod", Deps: dep(true, "a"), Inputs: ran}, false, 0, status.PhaseReady, status.True, true},
		{"ready, output changed", WaitInput{State: ready, Generation: 1, Namespace: "prod", Deps: dep(true, "b"), Inputs: ran}, false, 1, status.PhaseReady, status.True, true},
		{"output changed, but a new generation is pending: a spec change, not a rerun",
			WaitInput{State: status.NewGeneration(ready, 2, now), Generation: 2, Namespace: "prod", Deps: dep(true, "b"), Inputs: ran}, false, 0, status.PhaseReconciling, status.True, true},
		{"not ready, output changed: waits, no rerun yet", WaitInput{State: ready, Generation: 1, Namespace: "prod", Deps: dep(false, "b"), Inputs: ran}, true, 0, status.PhaseReady, status.False, true},
		{"running: phase left to the result", WaitInput{State: status.State{Phase: status.PhaseReconciling, Conditions: status.Created(now).Conditions}, Generation: 1,
			Namespace: "prod", Deps: dep(false, "a"), Running: true}, true, 0, status.PhaseReconciling, status.False, true},
		{"deleting with dependents", WaitInput{State: ready, Generation: 1, Deleting: true, Dependents: []graph.ID{net}, Same: 1, Total: 1}, true, 0, status.PhaseDeleting, "", false},
		{"deleting alone", WaitInput{State: ready, Generation: 1, Deleting: true}, false, 0, status.PhaseReady, "", true},
		{"restored after waiting for dependents", WaitInput{State: restored, Generation: 2}, false, 0, restored.Phase, "", true},
	}
	for _, tt := range tests {
		d := DecideWait(tt.in, now)
		c, ok := status.Get(d.State.Conditions, status.DependenciesReady)
		got := ""
		if ok {
			got = c.Status
		}
		_, dd := status.Get(d.State.Conditions, status.DependentsDeleted)
		if d.Blocked != tt.blocked || len(d.Rerun) != tt.rerun || d.State.Phase != tt.phase || got != tt.deps || dd == tt.gone {
			t.Errorf("%s: blocked %v rerun %v phase %s DependenciesReady %q DependentsDeleted present %v", tt.name, d.Blocked, d.Rerun, d.State.Phase, got, dd)
		}
	}
}
func TestCrossSourceCycleRefused(t *testing.T) {
	st := openTest(t, "a", "b")
	ctx := context.Background()
	one := func(kind, dep string) *manifest.Set {
		r := manifest.Resource{APIVersion: "example.com/v1", Kind: kind, Namespace: "prod", Name: "x", Labels: map[string]string{},
			Annotations: map[string]string{}, Spec: json.RawMessage(`{}`), SpecHash: "{}", MetaHash: "m", File: strings.ToLower(kind) + ".yaml", Line: 3}
		if dep != "" {
			r.DependsOn = []manifest.Dependency{{Target: graph.ID{Kind: dep, Namespace: "prod", Name: "x"}, Explicit: true}}
		}
		return &manifest.Set{Resources: []manifest.Resource{r}}
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "a", Revision: "a1", Set: one("Network", "Database")}); err != nil {
		t.Fatal(err)
	}
	// Source b closes the cycle: refused, naming its member and the other source's.
	_, err := st.ApplyRevision(ctx, ApplyParams{Source: "b", Revision: "b1", Set: one("Database", "Network")})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || len(conflict.Errors) != 1 {
		t.Fatalf("err %v", err)
	}
	e := conflict.Errors[0]
	if e.File != "database.yaml" || e.Line != 3 || !strings.Contains(e.Msg, "Network/prod/x (a/network.yaml:3)") {
		t.Fatalf("error %+v", e)
	}
	var n int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM resources WHERE source = 'b'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("b applied %d rows (%v)", n, err)
	}
	// Without the back edge it applies.
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "b", Revision: "b2", Set: one("Database", "")}); err != nil {
		t.Fatal(err)
	}
}

// TestResolvedOriginsStored: a resolution without foreign values records its origins as {}
// (NULL is "not known": stored before origins were recorded); a delete's claim returns the
// origins with the resolved spec it is called with.
func TestResolvedOriginsStored(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	_, cs := claimNames(t, st)
	succeed(t, st, cs[0], map[string]any{"subnet": "s-1"}) // Network
	_, cs = claimNames(t, st)
	succeed(t, st, cs[0], map[string]any{"endpoint": "db:5432"}) // Database: no foreign value
	var origins *string
	if err := st.pool.QueryRow(ctx, `SELECT resolved_origins::text FROM resources WHERE kind = 'Database'`).Scan(&origins); err != nil {
		t.Fatal(err)
	}
	if origins == nil || *origins != "{}" {
		t.Fatalf("Database resolved_origins %v, want {}", origins)
	}
	_, cs = claimNames(t, st)
	app := cs[0]
	if _, err := st.CompleteBatch(ctx, []Completion{{ID: app.ID, Token: app.LeaseToken, Namespace: app.Namespace, Kind: app.Kind, Name: app.Name,
		Fn: func(cur Current) Update {
			return Update{Phase: status.PhaseReady, Conditions: cur.Conditions, ObservedGeneration: app.Generation, Outputs: map[string]any{},
				Resolved: &Resolved{Spec: json.RawMessage(`{"db":"pg://secret-pass@db"}`), Origins: map[string][]string{"spec.db": {"other"}}}}
		}}}); err != nil {
		t.Fatal(err)
	}
	applyRefreshed(t, st, "s", "r2", chainSet("App"))
	kinds, cs := claimNames(t, st)
	if !slices.Equal(kinds, []string{"App"}) || !cs[0].Deleting {
		t.Fatalf("claimed %v, want App's delete", kinds)
	}
	if string(cs[0].ResolvedSpec) != `{"db": "pg://secret-pass@db"}` || len(cs[0].ResolvedOrigins["spec.db"]) != 1 || cs[0].ResolvedOrigins["spec.db"][0] != "other" {
		t.Fatalf("delete claimed with resolved spec %s, origins %v", cs[0].ResolvedSpec, cs[0].ResolvedOrigins)
	}
}

// A claim reads the dependencies of what it leases once it committed, as
// DependencyStates reads them: one query for the claim, not one per call; a resource
// without dependencies, or being deleted, gets none.
func TestClaimReadsDependencies(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	claimOne := func(kind string) Claimed {
		t.Helper()
		kinds, cs := claimNames(t, st)
		if len(cs) != 1 || kinds[0] != kind {
			t.Fatalf("claimed %v, want %s", kinds, kind)
		}
		return cs[0]
	}
	network := claimOne("Network")
	if network.DepsRead || network.Deps != nil {
		t.Fatalf("Network has no dependencies, read %v %+v", network.DepsRead, network.Deps)
	}
	succeed(t, st, network, map[string]any{"subnet": "10.0.1.0/24"})
	for _, next := range []struct{ kind, dep, output, value string }{
		{"Database", "Network", "subnet", "10.0.1.0/24"},
		{"App", "Database", "endpoint", "db.example:5432"},
	} {
		c := claimOne(next.kind)
		want, err := st.DependencyStates(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !c.DepsRead || !reflect.DeepEqual(c.Deps, want) {
			t.Fatalf("%s: read %v %+v, DependencyStates %+v", next.kind, c.DepsRead, c.Deps, want)
		}
		if len(c.Deps) != 1 || c.Deps[0].Target.Kind != next.dep || !c.Deps[0].Ready || c.Deps[0].Values[next.output] != next.value {
			t.Fatalf("%s: dependencies %+v", next.kind, c.Deps)
		}
		outputs := map[string]any{}
		if next.kind == "Database" {
			outputs["endpoint"] = "db.example:5432"
		}
		succeed(t, st, c, outputs)
	}
	// App removed: its delete resolves nothing, and the claim reads nothing for it.
	applyRefreshed(t, st, "s", "r2", chainSet("App"))
	app := claimOne("App")
	if !app.Deleting || app.DepsRead || app.Deps != nil {
		t.Fatalf("App's delete: deleting %v, read %v %+v", app.Deleting, app.DepsRead, app.Deps)
	}
}

// One claim taking several dependents reads each one's own dependencies.
func TestClaimReadsEachDependentsDependencies(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	mk := func(kind, spec string, deps ...manifest.Dependency) manifest.Resource {
		return depResource("stage", kind, spec, 1, deps...)
	}
	on := func(output string) manifest.Dependency {
		return manifest.Dependency{Target: graph.ID{Kind: "Network", Namespace: "stage", Name: "network"}, Outputs: []string{output}}
	}
	applyRefreshed(t, st, "s", "r1", &manifest.Set{Resources: []manifest.Resource{
		mk("Cache", `{"zone":"${{ Network/network.outputs.zone }}"}`, on("zone")),
		mk("Database", `{"subnet":"${{ Network/network.outputs.subnet }}"}`, on("subnet")),
		mk("Network", `{}`),
	}})
	_, cs := claimNames(t, st)
	if len(cs) != 1 {
		t.Fatalf("claimed %d, want Network alone", len(cs))
	}
	succeed(t, st, cs[0], map[string]any{"subnet": "10.0.1.0/24", "zone": "b"})
	kinds, cs := claimNames(t, st)
	if !slices.Equal(kinds, []string{"Cache", "Database"}) {
		t.Fatalf("claimed %v", kinds)
	}
	for _, c := range cs {
		want := map[string]string{"Cache": "zone", "Database": "subnet"}[c.Kind]
		if !c.DepsRead || len(c.Deps) != 1 || !slices.Equal(c.Deps[0].Outputs, []string{want}) || !c.Deps[0].Ready {
			t.Fatalf("%s: read %v %+v", c.Kind, c.DepsRead, c.Deps)
		}
		if got, err := st.DependencyStates(ctx, c.ID); err != nil || !reflect.DeepEqual(got, c.Deps) {
			t.Fatalf("%s: DependencyStates %+v (%v), claim read %+v", c.Kind, got, err, c.Deps)
		}
	}
}
