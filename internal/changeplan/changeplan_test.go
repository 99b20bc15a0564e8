package changeplan

import (
	"reflect"
	"strings"
	"testing"
)

func TestPruneGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		noManifests            bool
		rendered, gone, active int
		maxFrac                float64
		allowEmpty             bool
		want                   string
		numbers                string // in the message
	}{
		{"nothing gone", false, 10, 0, 10, 0, false, "", ""},
		{"empty render", false, 0, 10, 10, 1, false, "EmptyRender", "source's 10 resources"},
		{"last resource removed", false, 0, 1, 1, 0, false, "EmptyRender", "source's 1 resource"},
		{"last resource removed, allowEmpty", false, 0, 1, 1, 0, true, "", ""},
		{"empty render, allowEmpty beats the share guard", false, 0, 10, 10, 0.2, true, "", ""},
		{"empty render, share guard off is no consent", false, 0, 10, 10, 1, false, "EmptyRender", "10"},
		{"empty render, every row kept by annotation", false, 0, 0, 3, 0, false, "", ""},
		{"half may go", false, 5, 5, 10, 0, false, "", ""},
		{"more than half", false, 4, 6, 10, 0, false, "TooManyDeletions", "would delete 6 of 10"},
		{"more than half, allowEmpty does not lift the share guard", false, 4, 6, 10, 0, true, "TooManyDeletions", "6 of 10"},
		{"raised fraction", false, 4, 6, 10, 0.8, false, "", ""},
		{"lowered fraction", false, 6, 4, 10, 0.3, false, "TooManyDeletions", "would delete 4 of 10 resources (more than prune.maxFraction 0.30)"},
		{"lowered fraction, at the limit", false, 7, 3, 10, 0.3, false, "", ""},
		{"lowered fraction, the only resource", false, 1, 1, 1, 0.3, false, "TooManyDeletions", "would delete 1 of 1 resource (more than"},
		{"guard off", false, 1, 9, 10, 1, false, "", ""},
		// A snapshot without any manifest file is what a failure produces (an unmounted
		// volume, a folder emptied before the copy): it never deletes, whatever the settings.
		{"no manifest file", true, 0, 10, 10, 0, false, "EmptySource", "source's 10 resources"},
		{"no manifest file, allowEmpty is no consent", true, 0, 10, 10, 0, true, "EmptySource", "10"},
		{"no manifest file, share guard off", true, 0, 1, 1, 1, true, "EmptySource", "source's 1 resource"},
		{"no manifest file, nothing to delete", true, 0, 0, 0, 0, true, "", ""},
	} {
		got, msg := PruneGuard("revision abcdef123456", tc.noManifests, tc.rendered, tc.gone, tc.active, tc.maxFrac, tc.allowEmpty)
		if got != tc.want || (got != "") != (msg != "") || !strings.Contains(msg, tc.numbers) {
			t.Errorf("%s: %q %q, want %q with %q", tc.name, got, msg, tc.want, tc.numbers)
		}
	}
}

func TestMaxFraction(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]float64{0: DefaultMaxFraction, -1: DefaultMaxFraction, 0.3: 0.3, 1: 1} {
		if got := MaxFraction(in); got != want {
			t.Errorf("MaxFraction(%v) = %v, want %v", in, got, want)
		}
	}
}

// TestPlan names every way a resource can go.
func TestPlan(t *testing.T) {
	t.Parallel()
	res := func(name, spec, meta string) Resource {
		return Resource{Namespace: "ns", Kind: "Queue", Name: name, Spec: spec, Meta: meta}
	}
	app := func(name, spec, meta string) Applied { return Applied{Resource: res(name, spec, meta)} }
	deleting := app("a", "s", "m")
	deleting.Deleting = true
	orphaned := app("a", "s", "m")
	orphaned.Orphaned = true
	keep := app("b", "s", "m")
	keep.Keep = true
	requested := res("a", "s", "m2")
	requested.RequestedAt = "2026-01-01"
	sameRequest := requested
	appliedRequest := app("a", "s", "m")
	appliedRequest.RequestedAt = "2026-01-01"
	lowerKind := app("a", "s", "m")
	lowerKind.Kind = "queue"
	on := Prune{Enabled: true}
	for _, tc := range []struct {
		name    string
		rev     []Resource
		applied []Applied
		prune   Prune
		steps   []Step
		gone    []int
		orphan  []int
		guard   string
		counts  Counts
	}{
		{"new identity", []Resource{res("a", "s", "m")}, nil, on,
			[]Step{{Op: Create, Applied: -1}}, nil, nil, "", Counts{Created: 1}},
		{"new identity beside an applied one", []Resource{res("a", "s", "m"), res("b", "s", "m")}, []Applied{app("a", "s", "m")}, on,
			[]Step{{Op: Unchanged}, {Op: Create, Applied: -1}}, nil, nil, "", Counts{Created: 1, Unchanged: 1, Active: 1}},
		{"same hashes", []Resource{res("a", "s", "m")}, []Applied{app("a", "s", "m")}, on,
			[]Step{{Op: Unchanged}}, nil, nil, "", Counts{Unchanged: 1, Active: 1}},
		{"kind compared in lower case", []Resource{res("a", "s", "m")}, []Applied{lowerKind}, on,
			[]Step{{Op: Unchanged}}, nil, nil, "", Counts{Unchanged: 1, Active: 1}},
		{"new spec", []Resource{res("a", "s2", "m")}, []Applied{app("a", "s", "m")}, on,
			[]Step{{Op: Update}}, nil, nil, "", Counts{Updated: 1, Active: 1}},
		{"new spec and metadata", []Resource{res("a", "s2", "m2")}, []Applied{app("a", "s", "m")}, on,
			[]Step{{Op: Update}}, nil, nil, "", Counts{Updated: 1, Active: 1}},
		{"metadata only", []Resource{res("a", "s", "m2")}, []Applied{app("a", "s", "m")}, on,
			[]Step{{Op: Relabel}}, nil, nil, "", Counts{Relabelled: 1, Active: 1}},
		{"reconcile requested", []Resource{requested}, []Applied{app("a", "s", "m")}, on,
			[]Step{{Op: Relabel, Requested: true}}, nil, nil, "", Counts{Relabelled: 1, Requested: 1, Active: 1}},
		{"request already seen", []Resource{sameRequest}, []Applied{appliedRequest}, on,
			[]Step{{Op: Relabel}}, nil, nil, "", Counts{Relabelled: 1, Active: 1}},
		{"restored while being deleted", []Resource{res("a", "s", "m")}, []Applied{deleting}, on,
			[]Step{{Op: Update, Restored: true}}, nil, nil, "", Counts{Updated: 1}},
		{"orphan comes back", []Resource{res("a", "s", "m")}, []Applied{orphaned}, on,
			[]Step{{Op: Update}}, nil, nil, "", Counts{Updated: 1, Active: 1}},
		{"removed, pruned", []Resource{res("a", "s", "m")}, []Applied{app("a", "s", "m"), app("b", "s", "m")}, on,
			[]Step{{Op: Unchanged}}, []int{1}, nil, "", Counts{Unchanged: 1, Deleted: 1, Active: 2}},
		{"removed, pruning off", []Resource{res("a", "s", "m")}, []Applied{app("a", "s", "m"), app("b", "s", "m")}, Prune{},
			[]Step{{Op: Unchanged}}, nil, []int{1}, "", Counts{Unchanged: 1, Orphaned: 1, Active: 2}},
		{"removed, kept by annotation", []Resource{res("a", "s", "m")}, []Applied{app("a", "s", "m"), keep}, on,
			[]Step{{Op: Unchanged}}, nil, []int{1}, "", Counts{Unchanged: 1, Orphaned: 1, Active: 2}},
		{"removed earlier, kept: not listed again", []Resource{res("c", "s", "m")}, []Applied{app("c", "s", "m"), {Resource: res("b", "s", "m"), Orphaned: true}}, on,
			[]Step{{Op: Unchanged}}, nil, nil, "", Counts{Unchanged: 1, Active: 2}},
		{"being deleted and gone: not active", []Resource{res("b", "s", "m")}, []Applied{deleting, app("b", "s", "m")}, on,
			[]Step{{Op: Unchanged, Applied: 1}}, nil, nil, "", Counts{Unchanged: 1, Active: 1}},
		{"too many deletions: listed, not deleted", []Resource{res("a", "s", "m")}, []Applied{app("a", "s", "m"), app("b", "s", "m"), app("c", "s", "m")}, on,
			[]Step{{Op: Unchanged}}, []int{1, 2}, nil, "TooManyDeletions", Counts{Unchanged: 1, Active: 3}},
		{"raised maxFraction lets them go", []Resource{res("a", "s", "m")}, []Applied{app("a", "s", "m"), app("b", "s", "m"), app("c", "s", "m")}, Prune{Enabled: true, MaxFraction: 0.7},
			[]Step{{Op: Unchanged}}, []int{1, 2}, nil, "", Counts{Unchanged: 1, Deleted: 2, Active: 3}},
		{"empty render", nil, []Applied{app("a", "s", "m")}, on,
			[]Step{}, []int{0}, nil, "EmptyRender", Counts{Active: 1}},
		{"empty render, allowEmpty", nil, []Applied{app("a", "s", "m")}, Prune{Enabled: true, AllowEmpty: true},
			[]Step{}, []int{0}, nil, "", Counts{Deleted: 1, Active: 1}},
	} {
		got := Plan(Revision{Subject: "revision abc", Resources: tc.rev}, tc.applied, tc.prune)
		// The same revision lent through Len and At plans the same.
		lent := Plan(Revision{Subject: "revision abc", Len: len(tc.rev), At: func(i int) Resource { return tc.rev[i] }}, tc.applied, tc.prune)
		if !reflect.DeepEqual(lent, got) {
			t.Errorf("%s: through At\n got %+v\nwant %+v", tc.name, lent, got)
		}
		if !reflect.DeepEqual(got.Steps, tc.steps) || !reflect.DeepEqual(got.Gone, tc.gone) || !reflect.DeepEqual(got.Orphan, tc.orphan) ||
			got.Guard.Reason != tc.guard || got.Counts != tc.counts {
			t.Errorf("%s:\n got %+v %v %v %q %+v\nwant %+v %v %v %q %+v", tc.name, got.Steps, got.Gone, got.Orphan, got.Guard.Reason, got.Counts,
				tc.steps, tc.gone, tc.orphan, tc.guard, tc.counts)
		}
		want := tc.gone
		if tc.guard != "" {
			want = nil
		}
		if !reflect.DeepEqual(got.Deleted(), want) {
			t.Errorf("%s: Deleted %v under guard %q", tc.name, got.Deleted(), got.Guard.Reason)
		}
	}
}

// TestPlanNoManifests: a snapshot without a manifest file deletes nothing, and the message
// names the revision as the caller does.
func TestPlanNoManifests(t *testing.T) {
	t.Parallel()
	got := Plan(Revision{Subject: "folder ./manifests", NoManifests: true}, []Applied{{Resource: Resource{Name: "a"}}},
		Prune{Enabled: true, MaxFraction: 1, AllowEmpty: true})
	if got.Guard.Reason != "EmptySource" || !strings.HasPrefix(got.Guard.Message, "folder ./manifests holds no manifest file") || got.Deleted() != nil {
		t.Errorf("guard %+v, deleted %v", got.Guard, got.Deleted())
	}
}

func TestPlanTypes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		desired, applied []Type
		steps            []Step
		removed          []int
		counts           TypeCounts
	}{
		{"new type", []Type{{"Widget", "h"}}, nil, []Step{{Op: Create, Applied: -1}}, nil, TypeCounts{Created: 1}},
		{"same declaration", []Type{{"Widget", "h"}}, []Type{{"Widget", "h"}}, []Step{{Op: Unchanged}}, nil, TypeCounts{Unchanged: 1}},
		{"new declaration", []Type{{"Widget", "h2"}}, []Type{{"Widget", "h"}}, []Step{{Op: Update}}, nil, TypeCounts{Updated: 1}},
		{"matched by name as given", []Type{{"widget", "h"}}, []Type{{"Widget", "h"}}, []Step{{Op: Create, Applied: -1}}, []int{0}, TypeCounts{Created: 1, Removed: 1}},
		{"no longer declared", []Type{{"Gadget", "h"}}, []Type{{"Widget", "h"}, {"Gadget", "h"}}, []Step{{Op: Unchanged, Applied: 1}}, []int{0}, TypeCounts{Unchanged: 1, Removed: 1}},
		{"none declared", nil, []Type{{"Widget", "h"}}, []Step{}, []int{0}, TypeCounts{Removed: 1}},
	} {
		got := PlanTypes(tc.desired, tc.applied)
		if !reflect.DeepEqual(got.Steps, tc.steps) || !reflect.DeepEqual(got.Removed, tc.removed) || got.Counts != tc.counts {
			t.Errorf("%s: %+v, want %+v %v %+v", tc.name, got, tc.steps, tc.removed, tc.counts)
		}
	}
}

func TestChangedFiles(t *testing.T) {
	t.Parallel()
	rec := map[string]string{FilesBasis: "k1", "a.yaml": "1", "b.yaml": "2", "c.yaml": "3"}
	for _, tc := range []struct {
		name     string
		recorded map[string]string
		revision map[string]string
		want     []string
		all      bool
	}{
		{"first sync", nil, map[string]string{"a.yaml": "1"}, nil, true},
		{"applied without hashes", rec, nil, nil, true},
		{"nothing changed", rec, map[string]string{FilesBasis: "k1", "a.yaml": "1", "b.yaml": "2", "c.yaml": "3"}, []string{}, false},
		{"one file changed", rec, map[string]string{FilesBasis: "k1", "a.yaml": "1", "b.yaml": "9", "c.yaml": "3"}, []string{"b.yaml"}, false},
		{"a file removed", rec, map[string]string{FilesBasis: "k1", "a.yaml": "1", "c.yaml": "3"}, []string{"b.yaml"}, false},
		{"a file added", rec, map[string]string{FilesBasis: "k1", "a.yaml": "1", "b.yaml": "2", "c.yaml": "3", "d.yaml": "4"}, []string{"d.yaml"}, false},
		// A rename is a removal and an addition: both files' resources are compared.
		{"a file renamed", rec, map[string]string{FilesBasis: "k1", "a.yaml": "1", "b2.yaml": "2", "c.yaml": "3"}, []string{"b.yaml", "b2.yaml"}, false},
		{"every file removed", rec, map[string]string{FilesBasis: "k1"}, []string{"a.yaml", "b.yaml", "c.yaml"}, false},
		{"the basis changed", rec, map[string]string{FilesBasis: "k2", "a.yaml": "1", "b.yaml": "2", "c.yaml": "3"}, nil, true},
		{"the basis went", rec, map[string]string{"a.yaml": "1", "b.yaml": "2", "c.yaml": "3"}, nil, true},
	} {
		got, all := ChangedFiles(tc.recorded, tc.revision)
		if all != tc.all || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, all %v; want %q, all %v", tc.name, got, all, tc.want, tc.all)
		}
	}
}
