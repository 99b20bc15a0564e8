package store

import (
	"context"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
)

func TestPruneGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		rendered, gone, active int
		maxFrac                float64
		want                   string
	}{
		{"nothing gone", 10, 0, 10, 0, ""},
		{"empty render", 0, 10, 10, 1, "EmptyRender"},
		{"half may go", 5, 5, 10, 0, ""},
		{"more than half", 4, 6, 10, 0, "TooManyDeletions"},
		{"raised fraction", 4, 6, 10, 0.8, ""},
		{"guard off", 1, 9, 10, 1, ""},
	} {
		got, msg := PruneGuard("abcdef1234567890", tc.rendered, tc.gone, tc.active, tc.maxFrac)
		if got != tc.want || (got != "") != (msg != "") {
			t.Errorf("%s: %q %q, want %q", tc.name, got, msg, tc.want)
		}
	}
}

// CheckRevision reads the applied resources and reports identity conflicts with another
// source, writing nothing.
func TestCheckRevision(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	for _, s := range []string{"a", "b"} {
		if err := st.RegisterSource(ctx, SourceConfig{Name: s}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "a", Revision: "r1", Set: widgets(3, func(int) int { return 1 })}); err != nil {
		t.Fatal(err)
	}
	before := readApplied(t, st, "a")
	check, err := st.CheckRevision(ctx, ApplyParams{Source: "b", Revision: "pr", Set: widgets(1, func(int) int { return 2 })})
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Applied) != 0 || len(check.Conflicts) != 1 || !strings.Contains(check.Conflicts[0].Msg, "already declared by source a") {
		t.Fatalf("check of b: %+v", check)
	}
	check, err = st.CheckRevision(ctx, ApplyParams{Source: "a", Revision: "pr", Set: &manifest.Set{}})
	if err != nil {
		t.Fatal(err)
	}
	if check.Revision != "r1" || len(check.Applied) != 3 || check.Applied[0].Name != "w00" || string(check.Applied[0].Spec) != `{"size": 1}` || len(check.Conflicts) != 0 {
		t.Fatalf("check of a: %+v", check)
	}
	if after := readApplied(t, st, "a"); after.Changes != before.Changes || after.Revision != before.Revision {
		t.Errorf("CheckRevision wrote: %+v then %+v", before, after)
	}
}
