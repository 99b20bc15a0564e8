package store

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
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

// TestApplyPruneMessage: a sync's refusal names the revision as "revision" and its short
// form, as PruneGuard's subject, which its caller builds.
func TestApplyPruneMessage(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	if err := st.RegisterSource(ctx, SourceConfig{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: strings.Repeat("a", 40), Set: widgets(3, func(int) int { return 1 }), Prune: true}); err != nil {
		t.Fatal(err)
	}
	res, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: strings.Repeat("b", 40), Set: &manifest.Set{}, Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	const want = "revision bbbbbbbbbbbb renders no resources: not deleting the source's 3 resources (an empty render is refused unless prune.allowEmpty is true)"
	if res.PruneSkipped != "EmptyRender" || res.PruneMessage != want {
		t.Errorf("refusal %q %q, want EmptyRender %q", res.PruneSkipped, res.PruneMessage, want)
	}
}
