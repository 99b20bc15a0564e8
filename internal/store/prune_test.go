package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

// TestPruneConditions names every transition of the source's PruneSkipped and Pruned
// conditions.
func TestPruneConditions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	skipped := status.Condition{Type: ConditionPruneSkipped, Status: status.True, Reason: "EmptyRender", Message: "old"}
	pruned := status.Condition{Type: "Pruned", Status: status.True, Reason: "Pruned", Message: "revision r0 deleted 2 resource(s)"}
	legacy := status.Condition{Type: "Pruned", Status: status.False, Reason: "EmptyRender"}
	refused := ApplyResult{PruneSkipped: "TooManyDeletions", PruneMessage: "revision r1 would delete 3 of 4 resources"}
	for _, tc := range []struct {
		name string
		in   []status.Condition
		res  ApplyResult
		want map[string]string // type → status+reason; absent types must be gone
	}{
		{"refusal sets PruneSkipped", nil, refused, map[string]string{ConditionPruneSkipped: "True/TooManyDeletions"}},
		{"refusal keeps the last prune", []status.Condition{pruned}, refused, map[string]string{ConditionPruneSkipped: "True/TooManyDeletions", "Pruned": "True/Pruned"}},
		{"refusal replaces an older refusal", []status.Condition{skipped}, refused, map[string]string{ConditionPruneSkipped: "True/TooManyDeletions"}},
		{"a normal prune clears it", []status.Condition{skipped}, ApplyResult{Deleted: 4}, map[string]string{"Pruned": "True/Pruned"}},
		{"nothing to delete clears it", []status.Condition{skipped, pruned}, ApplyResult{}, map[string]string{"Pruned": "True/Pruned"}},
		{"Pruned=False of older versions goes", []status.Condition{legacy}, ApplyResult{}, map[string]string{}},
		{"Pruned=False of older versions becomes PruneSkipped", []status.Condition{legacy}, refused, map[string]string{ConditionPruneSkipped: "True/TooManyDeletions"}},
	} {
		got := pruneConditions(tc.in, "r1", tc.res, now)
		have := map[string]string{}
		for _, c := range got {
			have[c.Type] = c.Status + "/" + c.Reason
		}
		if len(have) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, have, tc.want)
			continue
		}
		for k, v := range tc.want {
			if have[k] != v {
				t.Errorf("%s: %v, want %v", tc.name, have, tc.want)
			}
		}
		if c, ok := status.Get(got, ConditionPruneSkipped); ok && c.Message != tc.res.PruneMessage {
			t.Errorf("%s: message %q", tc.name, c.Message)
		}
	}
}

// TestStandingRefusal: a refusal already shown for the same revision, reason and message
// records no new event or notification; anything else does.
func TestStandingRefusal(t *testing.T) {
	t.Parallel()
	shown := []status.Condition{{Type: ConditionPruneSkipped, Status: status.True, Reason: "EmptyRender", Message: "m"}}
	p := ApplyParams{Revision: "r2"}
	for _, tc := range []struct {
		name     string
		revision string
		conds    []status.Condition
		res      ApplyResult
		want     bool
	}{
		{"same refusal of the same revision", "r2", shown, ApplyResult{PruneSkipped: "EmptyRender", PruneMessage: "m"}, true},
		{"no refusal", "r2", shown, ApplyResult{}, false},
		{"another revision was applied", "r1", shown, ApplyResult{PruneSkipped: "EmptyRender", PruneMessage: "m"}, false},
		{"other reason", "r2", shown, ApplyResult{PruneSkipped: "TooManyDeletions", PruneMessage: "m"}, false},
		{"other numbers", "r2", shown, ApplyResult{PruneSkipped: "EmptyRender", PruneMessage: "m2"}, false},
		{"none shown", "r2", nil, ApplyResult{PruneSkipped: "EmptyRender", PruneMessage: "m"}, false},
	} {
		if got := standingRefusal(tc.revision, tc.conds, p, &tc.res); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSourceHasNoWireCounts: the counts of a source's resources are the server's to shape
// (STYLE 18): the store's Source carries none.
func TestSourceHasNoWireCounts(t *testing.T) {
	t.Parallel()
	if _, ok := reflect.TypeOf(Source{}).FieldByName("Resources"); ok {
		t.Error("store.Source has a Resources field")
	}
	if tag := reflect.TypeOf(SourceResources{}).Field(0).Tag; tag != "" {
		t.Errorf("store.SourceResources has wire tags: %q", tag)
	}
}
