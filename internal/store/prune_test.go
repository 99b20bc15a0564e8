package store

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
)

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
	st := openTest(t, "s")
	ctx := context.Background()
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
