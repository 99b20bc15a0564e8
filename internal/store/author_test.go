package store

import (
	"context"
	"testing"

	"github.com/trueup-dev/trueup/internal/policy"
)

// A revision's author is recorded once, by its first apply: applying it again (a restart,
// another replica) keeps the row; a revision never applied has no author.
func TestRevisionAuthor(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	ada := policy.Author{Name: "Ada", Email: "ada@example.com"}
	for _, a := range []policy.Author{ada, {Name: "Grace"}} {
		if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r1", Author: a, Set: widgets(2, func(int) int { return 1 })}); err != nil {
			t.Fatal(err)
		}
	}
	for rev, want := range map[string]policy.Author{"r1": ada, "r2": {}} {
		if got, err := st.RevisionAuthor(ctx, "s", rev); err != nil || got != want {
			t.Errorf("RevisionAuthor(%s) = %+v, %v; want %+v", rev, got, err, want)
		}
	}
}
