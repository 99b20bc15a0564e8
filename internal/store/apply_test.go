package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
)

// widgets is a set of n resources of kind Widget, each with spec {"size": size(i)}.
func widgets(n int, size func(i int) int) *manifest.Set {
	set := &manifest.Set{}
	for i := range n {
		spec := json.RawMessage(fmt.Sprintf(`{"size":%d}`, size(i)))
		set.Resources = append(set.Resources, manifest.Resource{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "default",
			Name: fmt.Sprintf("w%02d", i), Labels: map[string]string{"team": "a"}, Annotations: map[string]string{},
			Spec: spec, SpecHash: string(spec), MetaHash: "m", File: "widgets.yaml", Line: i + 1})
	}
	return set
}

// applied is what a source's revision left in the database.
type applied struct {
	Revision string
	Specs    map[string]string // name → spec
	Deleting []string
	Changes  int64
	Events   map[string]int64 // reason → count
}

func readApplied(t *testing.T, st *Store, source string) applied {
	t.Helper()
	ctx := context.Background()
	a := applied{Specs: map[string]string{}, Events: map[string]int64{}}
	if err := st.pool.QueryRow(ctx, "SELECT revision FROM sources WHERE name = $1", source).Scan(&a.Revision); err != nil {
		t.Fatal(err)
	}
	rows, err := st.pool.Query(ctx, "SELECT name, spec::text, deletion_timestamp IS NOT NULL FROM resources WHERE source = $1 ORDER BY name", source)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, spec string
		var deleting bool
		if err := rows.Scan(&name, &spec, &deleting); err != nil {
			t.Fatal(err)
		}
		a.Specs[name] = spec
		if deleting {
			a.Deleting = append(a.Deleting, name)
		}
	}
	rows.Close()
	if err := st.pool.QueryRow(ctx, "SELECT count(*) FROM changes WHERE source = $1 AND object = 'resource'", source).Scan(&a.Changes); err != nil {
		t.Fatal(err)
	}
	rows, err = st.pool.Query(ctx, "SELECT reason, count(*) FROM events WHERE source = $1 GROUP BY reason", source)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var reason string
		var n int64
		if err := rows.Scan(&reason, &n); err != nil {
			t.Fatal(err)
		}
		a.Events[reason] = n
	}
	rows.Close()
	return a
}

// A revision larger than one batch is written in several statements of one transaction:
// every row, change and event arrives, whatever batch it was in.
func TestApplyRevisionInBatches(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	const n, batch = 7, 3 // batches of 3, 3 and 1
	res, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(n, func(int) int { return 1 }), Prune: true, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != n {
		t.Fatalf("created %d, want %d", res.Created, n)
	}
	got := readApplied(t, st, "s")
	if len(got.Specs) != n || got.Changes != n || got.Events["Created"] != n || got.Revision != "r1" {
		t.Fatalf("after r1: %+v", got)
	}

	// r2: new specs for the last four (across the second and third batch), w00 relabelled,
	// w01 removed.
	set := widgets(n, func(i int) int { return map[bool]int{true: 2, false: 1}[i >= 3] })
	set.Resources[0].MetaHash = "m2"
	set.Resources = append(set.Resources[:1], set.Resources[2:]...)
	res, err = st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r2", Set: set, Prune: true, MaxPruneFraction: 1, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	want := ApplyResult{Updated: 4, Relabelled: 1, Deleted: 1, Unchanged: 1}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("r2 result = %+v, want %+v", res, want)
	}
	got = readApplied(t, st, "s")
	if got.Specs["w06"] != `{"size": 2}` || got.Specs["w02"] != `{"size": 1}` || !reflect.DeepEqual(got.Deleting, []string{"w01"}) {
		t.Errorf("after r2: %+v", got)
	}
	if got.Changes != n+4+1 || got.Events["SpecChanged"] != 4 || got.Events["DeletionRequested"] != 1 {
		t.Errorf("after r2: %d changes, events %v", got.Changes, got.Events)
	}
}

// A revision's new rows are the same whatever the statements they were written in: rows,
// edges, changes and events of a first apply in batches of 3, and what the apply reports
// (the rows created, the rows to refresh), are those of one statement.
func TestApplyRevisionBatchesWriteTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	written := func(batch int) []string {
		st := openTest(t, "s")
		set := widgets(8, func(i int) int { return i })
		for i := range set.Resources {
			r := &set.Resources[i]
			r.Line, r.File = i*5+1, fmt.Sprintf("w%d.yaml", i/3)
			r.Labels = map[string]string{"team": fmt.Sprint("t", i%3), "tier": "x"}
			if i%4 == 3 {
				r.DependsOn = []manifest.Dependency{{Target: graph.ID{Kind: "Widget", Namespace: "default", Name: "w00"}, Explicit: true}}
			}
		}
		res, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: set, BatchSize: batch})
		if err != nil {
			t.Fatal(err)
		}
		names := map[int64]string{}
		rows, err := st.pool.Query(ctx, `SELECT id, name FROM resources`)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		var name string
		if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error { names[id] = name; return nil }); err != nil {
			t.Fatal(err)
		}
		refresh := []string{}
		for _, id := range res.Refresh {
			refresh = append(refresh, names[id])
		}
		slices.Sort(refresh)
		out := []string{fmt.Sprint("created ", res.Created), "refresh " + strings.Join(refresh, " "), "--"}
		for _, q := range []string{
			`SELECT concat_ws(' ', namespace, kind, name, api_version, source, file_path, file_line, revision, labels, annotations, spec,
			  spec_hash, meta_hash, generation, phase, conditions->0->>'reason', run_at IS NOT NULL, sealed_sha, has_deps, blocked) FROM resources JOIN resource_queue USING (id) ORDER BY id`,
			`SELECT concat_ws(' ', r.name, e.dep_kind, e.dep_namespace, e.dep_name) FROM resource_edges e JOIN resources r ON r.id = e.resource_id ORDER BY r.id`,
			`SELECT concat_ws(' ', object, type, namespace, kind, name, source, phase, generation) FROM changes ORDER BY id`,
			`SELECT concat_ws(' ', namespace, kind, name, source, type, reason, message) FROM events ORDER BY id`,
		} {
			rows, err := st.pool.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			out = append(append(out, got...), "--")
		}
		return out
	}
	one, batched := written(100), written(3)
	if !reflect.DeepEqual(batched, one) {
		t.Errorf("written in batches of 3:\n%s\nin one statement:\n%s", strings.Join(batched, "\n"), strings.Join(one, "\n"))
	}
	if len(one) != 3+8+2+9+8+4 || one[0] != "created 8" || one[1] != "refresh w03 w03 w07 w07" {
		// the result's created and refresh and a separator; 8 rows, 2 edges, 8 changes and the
		// source's, 8 events, 4 separators
		t.Errorf("wrote %d lines:\n%s", len(one), strings.Join(one, "\n"))
	}
}

// BenchmarkApplyBuild100k: what a first apply of 100,000 new rows spends building its
// statements (column arrays, changes, events) in batches of 2,000, without the database.
func BenchmarkApplyBuild100k(b *testing.B) {
	set := widgets(100_000, func(i int) int { return i })
	ins := make([]int, len(set.Resources))
	for i := range ins {
		ins[i] = i
	}
	// each: an event and a change per created row (a revision within ApplyParams.BulkCreate);
	// bulk: none (a larger one).
	for _, bulk := range []bool{false, true} {
		b.Run(map[bool]string{false: "each", true: "bulk"}[bulk], func(b *testing.B) {
			w := &applyWriter{p: ApplyParams{Source: "s", Revision: "0123456789abcdef0123456789abcdef01234567", Set: set}, size: 2000, bulk: bulk}
			b.ReportAllocs()
			for b.Loop() {
				_ = chunks(len(ins), w.size, func(lo, hi int) error {
					w.build(ins[lo:hi])
					clear(w.changes)
					clear(w.events)
					w.changes, w.events = w.changes[:0], w.events[:0]
					return nil
				})
			}
		})
	}
}

// A failure in a later batch leaves nothing of the revision applied: not the rows of the
// earlier batches, nor their changes and events, nor the source's revision.
func TestApplyRevisionLaterBatchFails(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	const n, batch = 7, 3
	// jsonb refuses the last resource's spec; it is in the third batch.
	broken := func(set *manifest.Set) *manifest.Set {
		set.Resources[n-1].Spec = json.RawMessage(`{"size":`)
		return set
	}

	_, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "bad", Set: broken(widgets(n, func(int) int { return 1 })), BatchSize: batch})
	if err == nil || !strings.Contains(err.Error(), "insert resources") {
		t.Fatalf("first revision with a bad last batch: err = %v, want a failed insert", err)
	}
	if got := readApplied(t, st, "s"); len(got.Specs) != 0 || got.Changes != 0 || len(got.Events) != 0 || got.Revision != "" {
		t.Fatalf("after a failed first revision: %+v", got)
	}

	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(n, func(int) int { return 1 }), BatchSize: batch}); err != nil {
		t.Fatal(err)
	}
	before := readApplied(t, st, "s")
	_, err = st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "bad2", Set: broken(widgets(n, func(int) int { return 2 })), BatchSize: batch})
	if err == nil || !strings.Contains(err.Error(), "update resources") {
		t.Fatalf("revision with a bad last batch: err = %v, want a failed update", err)
	}
	if got := readApplied(t, st, "s"); !reflect.DeepEqual(got, before) {
		t.Errorf("a failed revision changed the source:\n got %+v\nwant %+v", got, before)
	}
}

// TestBigIntegersStayExact: an integer beyond int64 in a spec is stored (jsonb numeric) and
// served with every digit.
func TestBigIntegersStayExact(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	spec := json.RawMessage(`{"n":123456789012345678901234567890,"m":-98765432109876543210987654321}`)
	set := &manifest.Set{Resources: []manifest.Resource{{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "default",
		Name: "big", Spec: spec, SpecHash: "h", MetaHash: "m", File: "w.yaml", Line: 1}}}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: set}); err != nil {
		t.Fatal(err)
	}
	r, err := st.GetResource(ctx, "default", "Widget", "big")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"123456789012345678901234567890", "-98765432109876543210987654321"} {
		if !strings.Contains(string(r.Spec), want) {
			t.Errorf("spec %s lost %s", r.Spec, want)
		}
	}
}

// The source's Ready message counts what the revision applied in words that agree with the
// numbers: "1 resource", not "1 resources".
func TestApplyRevisionReadyMessageCounts(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	for _, c := range []struct {
		rev  string
		n    int
		want string
	}{
		{"r1", 1, "applied revision r1: 0 types, 1 resource"},
		{"r2", 2, "applied revision r2: 0 types, 2 resources"},
	} {
		if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: c.rev, Set: widgets(c.n, func(int) int { return 1 })}); err != nil {
			t.Fatal(err)
		}
		src, err := st.GetSource(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := status.Get(src.Conditions, status.Ready); !ok || got.Message != c.want {
			t.Errorf("%s: Ready = %+v, want message %q", c.rev, got, c.want)
		}
	}
}

// TestApplyTypes: a type is written when it is new or its declaration changed, and one no
// longer declared goes once no resource of its kind is left.
func TestApplyTypes(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	typ := func(name, hash string) manifest.ResourceType {
		return manifest.ResourceType{Name: name, Group: "example.com", Action: manifest.ActionRef{Name: "noop"},
			Spec: json.RawMessage(`{}`), Hash: hash, File: "types.yaml", Line: 1}
	}
	for _, step := range []struct {
		rev              string
		types            []manifest.ResourceType
		widgets          int
		changed, removed int
		left             string
	}{
		{"r1", []manifest.ResourceType{typ("Widget", "w1"), typ("Gadget", "g1")}, 1, 2, 0, "Gadget,Widget"},
		{"r2", []manifest.ResourceType{typ("Widget", "w1"), typ("Gadget", "g1")}, 1, 0, 0, "Gadget,Widget"},
		{"r3", []manifest.ResourceType{typ("Widget", "w2"), typ("Gadget", "g1")}, 1, 1, 0, "Gadget,Widget"},
		{"r4", []manifest.ResourceType{typ("Widget", "w2")}, 1, 0, 1, "Widget"},
		// Widget's resource is being deleted: the type stays until it is gone.
		{"r5", nil, 0, 0, 0, "Widget"},
	} {
		set := widgets(step.widgets, func(int) int { return 1 })
		set.Types = step.types
		res, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: step.rev, Set: set, Prune: true, AllowEmpty: true})
		if err != nil {
			t.Fatalf("%s: %v", step.rev, err)
		}
		var left string
		if err := st.pool.QueryRow(ctx, `SELECT coalesce(string_agg(name, ',' ORDER BY name), '') FROM resource_types WHERE source = 's'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if res.TypesChanged != step.changed || res.TypesRemoved != step.removed || left != step.left {
			t.Errorf("%s: changed %d removed %d, types %q; want %d %d %q", step.rev, res.TypesChanged, res.TypesRemoved, left, step.changed, step.removed, step.left)
		}
	}
}

// TestApplyTypeDrift: a type's drift policy is stored with it, read back by GetType and
// ListTypes, and goes (NULL) when the declaration drops it.
func TestApplyTypeDrift(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	for _, step := range []struct {
		rev   string
		drift *manifest.DriftPolicy
	}{
		{"r1", &manifest.DriftPolicy{Mode: manifest.DriftDetect, Ignore: []string{"/tags", "/a~1b"}}},
		{"r2", &manifest.DriftPolicy{Mode: manifest.DriftNotify}},
		{"r3", nil},
	} {
		set := widgets(0, nil)
		set.Types = []manifest.ResourceType{{Name: "Widget", Group: "example.com", Action: manifest.ActionRef{Name: "noop"},
			Spec: json.RawMessage(`{}`), Hash: step.rev, File: "types.yaml", Line: 1, Drift: step.drift}}
		if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: step.rev, Set: set, AllowEmpty: true}); err != nil {
			t.Fatalf("%s: %v", step.rev, err)
		}
		got, err := st.GetType(ctx, "widget")
		if err != nil {
			t.Fatal(err)
		}
		all, err := st.ListTypes(ctx)
		if err != nil || len(all) != 1 {
			t.Fatalf("list: %v %v", all, err)
		}
		if !reflect.DeepEqual(got.Drift, step.drift) || !reflect.DeepEqual(all[0].Drift, step.drift) {
			t.Errorf("%s: drift %+v (list %+v), want %+v", step.rev, got.Drift, all[0].Drift, step.drift)
		}
	}
}

func TestBulkCreate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		created, limit int
		want           bool
	}{
		{0, 0, false},
		{DefaultBulkCreate, 0, false},
		{DefaultBulkCreate + 1, 0, true},
		{3, 2, true},
		{2, 2, false},
		{1, -1, false},
	} {
		if got := bulkCreate(tc.created, tc.limit); got != tc.want {
			t.Errorf("bulkCreate(%d, %d) = %v, want %v", tc.created, tc.limit, got, tc.want)
		}
	}
}

// A revision creating more resources than BulkCreate writes one Created event on its source
// and one RELIST change, not one of each per resource; every resource's timeline still shows
// its creation, with the revision. Its later revisions, and smaller ones, are recorded per
// resource.
func TestApplyBulkCreate(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	const n = 7
	res, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "0123456789abcdef0123456789abcdef01234567",
		Set: widgets(n, func(int) int { return 1 }), Prune: true, BatchSize: 3, BulkCreate: n - 1})
	if err != nil || res.Created != n {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	got := readApplied(t, st, "s")
	if len(got.Specs) != n || got.Changes != 0 || !reflect.DeepEqual(got.Events, map[string]int64{"Created": 1}) {
		t.Fatalf("after the bulk revision: %+v", got)
	}
	var ev Event
	if err := st.pool.QueryRow(ctx, "SELECT namespace, kind, name, message FROM events WHERE source = 's'").
		Scan(&ev.Namespace, &ev.Kind, &ev.Name, &ev.Message); err != nil {
		t.Fatal(err)
	}
	if ev.Namespace != "" || ev.Kind != "" || ev.Name != "" || ev.Message != "created 7 resources at 0123456789ab" {
		t.Errorf("the source's event %+v", ev)
	}
	var relists int
	if err := st.pool.QueryRow(ctx, "SELECT count(*) FROM changes WHERE source = 's' AND object = 'source' AND type = $1 AND name = 's' AND namespace = 'default'",
		ChangeRelist).Scan(&relists); err != nil || relists != 1 {
		t.Fatalf("RELIST changes: %d, %v", relists, err)
	}
	tl, err := st.Timeline(ctx, Everything, "default", "Widget", "w03", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Entries) != 1 || tl.Entries[0].Kind != TimelineCommit || tl.Entries[0].Reason != "Created" || tl.Entries[0].Revision != "0123456789ab" {
		t.Errorf("timeline of a resource created in bulk: %+v", tl.Entries)
	}

	// Exactly BulkCreate: one of each per resource.
	set := widgets(n+2, func(int) int { return 1 })
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r2", Set: set, Prune: true, BulkCreate: 2}); err != nil {
		t.Fatal(err)
	}
	got = readApplied(t, st, "s")
	if got.Changes != 2 || got.Events["Created"] != 3 {
		t.Errorf("after a revision creating two: %d changes, events %v", got.Changes, got.Events)
	}
	tl, err = st.Timeline(ctx, Everything, "default", "Widget", "w08", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Entries) != 1 || tl.Entries[0].Reason != "Created" || tl.Entries[0].Revision != "r2" {
		t.Errorf("timeline of a resource created alone: %+v", tl.Entries)
	}
}

func clusterWidgets(n int) *manifest.Set {
	set := widgets(n, func(int) int { return 1 })
	for i := range set.Resources {
		set.Resources[i].Namespace, set.Resources[i].Kind = "", "ClusterWidget"
		set.Resources[i].File = fmt.Sprintf("c%02d.yaml", i)
	}
	return set
}

// A cluster-scoped resource's timeline shows its own Created event once: the other
// cluster-scoped resources' events (no namespace either) are not its source's bulk event.
func TestTimelineClusterScopedCreatedOnce(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: clusterWidgets(3), Prune: true}); err != nil {
		t.Fatal(err)
	}
	for _, sc := range []Scope{Everything} {
		tl, err := st.Timeline(ctx, sc, "", "ClusterWidget", "w01", 0)
		if err != nil {
			t.Fatal(err)
		}
		var created []string
		for _, e := range tl.Entries {
			if e.Reason == "Created" {
				created = append(created, e.Message)
			}
		}
		if len(created) != 1 || created[0] != "created from c01.yaml at r1" {
			t.Errorf("Created entries in w01's timeline: %q", created)
		}
		evs, err := st.ListEvents(ctx, sc, EventFilter{Kind: "ClusterWidget", Name: "w01", Namespace: ""})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Message != "created from c01.yaml at r1" {
			t.Errorf("w01's events: %+v", evs)
		}
	}
}

// A resource created in bulk lists its creation among its events: its source's Created event
// (naming no resource), in any scope that sees the resource, and with its source's filter.
// A namespace's events do not include it: a bulk creation is the source's event, listed
// with the source's (and with every event).
func TestResourceEventsAfterBulk(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s", "t")
	ctx := context.Background()
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Set: widgets(7, func(int) int { return 1 }), Prune: true, BulkCreate: 2}); err != nil {
		t.Fatal(err)
	}
	bulk := func(evs []Event) bool {
		return len(evs) == 1 && evs[0].Source == "s" && evs[0].Name == "" && evs[0].Reason == "Created" && evs[0].Message == "created 7 resources at r1"
	}
	for _, c := range []struct {
		name string
		sc   Scope
		f    EventFilter
		want bool // the bulk event alone; else none
	}{
		{"resource", Everything, EventFilter{Namespace: "default", Kind: "widget", Name: "w03"}, true},
		{"resource, its namespace's scope", InNamespaces("default"), EventFilter{Namespace: "default", Kind: "Widget", Name: "w03"}, true},
		{"resource, its source", Everything, EventFilter{Namespace: "default", Kind: "Widget", Name: "w03", Source: "s"}, true},
		{"resource, another scope", InNamespaces("production"), EventFilter{Namespace: "default", Kind: "Widget", Name: "w03"}, false},
		{"resource, another source", Everything, EventFilter{Namespace: "default", Kind: "Widget", Name: "w03", Source: "t"}, false},
		{"no such resource", Everything, EventFilter{Namespace: "default", Kind: "Widget", Name: "w99"}, false},
		{"namespace", Everything, EventFilter{Namespace: "default"}, false},
		{"source", Everything, EventFilter{Source: "s"}, true},
		{"everything", Everything, EventFilter{}, true},
	} {
		evs, err := st.ListEvents(ctx, c.sc, c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.want && !bulk(evs) || !c.want && len(evs) != 0 {
			t.Errorf("%s: %+v", c.name, evs)
		}
	}
	// Its own later events come first, the creation last.
	if err := st.AddEvent(ctx, Event{Namespace: "default", Kind: "Widget", Name: "w03", Source: "s", Type: EventNormal, Reason: "Synced", Message: "ok"}); err != nil {
		t.Fatal(err)
	}
	evs, err := st.ListEvents(ctx, Everything, EventFilter{Namespace: "default", Kind: "Widget", Name: "w03"})
	if err != nil || len(evs) != 2 || evs[0].Reason != "Synced" || !bulk(evs[1:]) {
		t.Errorf("w03 after an event of its own: %+v, %v", evs, err)
	}
	if evs, err := st.ListEvents(ctx, Everything, EventFilter{Namespace: "default", Kind: "Widget", Name: "w03", Limit: 1}); err != nil || len(evs) != 1 || evs[0].Reason != "Synced" {
		t.Errorf("w03, one event: %+v, %v", evs, err)
	}
}
