package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// TestClaimDeleteRevisions: a successful reconcile records its revision; a failed one does
// not; the claim of the delete hands both that revision and the source's newest one.
func TestClaimDeleteRevisions(t *testing.T) {
	st := openTest(t)
	ctx := context.Background()
	if err := st.RegisterSource(ctx, SourceConfig{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	res := func(name, spec string) manifest.Resource {
		return manifest.Resource{APIVersion: "example.com/v1", Kind: "Db", Namespace: "prod", Name: name,
			Labels: map[string]string{}, Annotations: map[string]string{}, Spec: json.RawMessage(spec), SpecHash: spec, MetaHash: "m",
			File: name + ".yaml", Line: 1}
	}
	keep := res("keep", `{}`)
	// claimDB claims what is due and returns db's claim (the others are left leased).
	claimDB := func() Claimed {
		t.Helper()
		_, cs := claimNames(t, st)
		for _, c := range cs {
			if c.Name == "db" {
				return c
			}
		}
		t.Fatalf("db not claimed: %+v", cs)
		return Claimed{}
	}
	complete := func(c Claimed, applied string) {
		t.Helper()
		if err := st.Complete(ctx, c.ID, c.LeaseToken, func(cur Current) Update {
			return Update{Phase: cur.Phase, Conditions: cur.Conditions, ObservedGeneration: c.Generation, AppliedRevision: applied}
		}); err != nil {
			t.Fatal(err)
		}
	}
	applyRefreshed(t, st, "s", "r1", &manifest.Set{Resources: []manifest.Resource{res("db", `{"v":1}`), keep}})
	complete(claimDB(), "r1") // applied at r1
	applyRefreshed(t, st, "s", "r2", &manifest.Set{Resources: []manifest.Resource{res("db", `{"v":2}`), keep}})
	c := claimDB()
	if c.Revision != "r2" || c.AppliedRevision != "r1" || c.SourceRevision != "" {
		t.Fatalf("reconcile at r2: revision %q, applied %q, source %q; want r2, r1 and none", c.Revision, c.AppliedRevision, c.SourceRevision)
	}
	complete(c, "") // failed at r2: r1 stays
	applyRefreshed(t, st, "s", "r3", &manifest.Set{Resources: []manifest.Resource{keep}})
	c = claimDB()
	if !c.Deleting || c.Revision != "r3" || c.AppliedRevision != "r1" || c.SourceRevision != "r3" {
		t.Fatalf("delete: deleting %v, revision %q, applied %q, source %q; want r3, r1, r3", c.Deleting, c.Revision, c.AppliedRevision, c.SourceRevision)
	}
}
