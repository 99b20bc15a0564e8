package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// openWithSource opens a test store with source "s" registered.
func openWithSource(t *testing.T) (*Store, context.Context) {
	t.Helper()
	st := openTest(t, "s")
	ctx := context.Background()
	return st, ctx
}

// dbResource is a Db resource in namespace prod of that name and spec.
func dbResource(name, spec string) manifest.Resource {
	return manifest.Resource{APIVersion: "example.com/v1", Kind: "Db", Namespace: "prod", Name: name,
		Labels: map[string]string{}, Annotations: map[string]string{}, Spec: json.RawMessage(spec), SpecHash: spec, MetaHash: "m",
		File: name + ".yaml", Line: 1}
}

// TestClaimDeleteRevisions: a successful reconcile records its revision; a failed one does
// not; the claim of the delete hands both that revision and the source's newest one.
func TestClaimDeleteRevisions(t *testing.T) {
	st, ctx := openWithSource(t)
	keep := dbResource("keep", `{}`)
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
	complete := func(c Claimed, applied string, spec json.RawMessage) {
		t.Helper()
		if err := st.Complete(ctx, c.ID, c.LeaseToken, func(cur Current) Update {
			u := Update{Phase: cur.Phase, Conditions: cur.Conditions, ObservedGeneration: c.Generation, AppliedRevision: applied,
				AppliedSpec: spec, Resolved: &Resolved{Spec: spec}}
			if applied != "" { // net came from another namespace
				u.AppliedOrigins = map[string][]string{"spec.net": {"core"}}
			}
			return u
		}); err != nil {
			t.Fatal(err)
		}
	}
	applyRefreshed(t, st, "s", "r1", &manifest.Set{Resources: []manifest.Resource{dbResource("db", `{"size":"m"}`), keep}})
	complete(claimDB(), "r1", json.RawMessage(`{"size": "m", "net": "n-1"}`)) // applied at r1, references resolved
	applyRefreshed(t, st, "s", "r2", &manifest.Set{Resources: []manifest.Resource{dbResource("db", `{"instance_size":"m"}`), keep}})
	c := claimDB()
	if c.Revision != "r2" || c.AppliedRevision != "r1" || c.SourceRevision != "" || c.AppliedSpec != nil {
		t.Fatalf("reconcile at r2: revision %q, applied %q, source %q, applied spec %s; want r2, r1 and none", c.Revision, c.AppliedRevision, c.SourceRevision, c.AppliedSpec)
	}
	complete(c, "", json.RawMessage(`{"instance_size":"m"}`)) // failed at r2: r1 and its spec stay
	applyRefreshed(t, st, "s", "r3", &manifest.Set{Resources: []manifest.Resource{keep}})
	c = claimDB()
	if !c.Deleting || c.Revision != "r3" || c.AppliedRevision != "r1" || c.SourceRevision != "r3" {
		t.Fatalf("delete: deleting %v, revision %q, applied %q, source %q; want r3, r1, r3", c.Deleting, c.Revision, c.AppliedRevision, c.SourceRevision)
	}
	if string(c.AppliedSpec) != `{"net": "n-1", "size": "m"}` {
		t.Errorf("delete: applied spec %s, want r1's resolved spec", c.AppliedSpec)
	}
	if fmt.Sprint(c.AppliedOrigins) != "map[spec.net:[core]]" {
		t.Errorf("delete: applied origins %v, want r1's (the delete scrubs those values)", c.AppliedOrigins)
	}
}

// TestClaimDeleteRevisionFromHistory: a resource applied before applied revisions were
// recorded (applied_revision NULL) is deleted at the revision of its newest successful
// reconcile in history, not at the removing commit.
func TestClaimDeleteRevisionFromHistory(t *testing.T) {
	st, ctx := openWithSource(t)
	keep := dbResource("keep", `{}`)
	var uid string
	history := func(c Claimed, revision, op, result string) {
		t.Helper()
		uid = c.UID
		if err := st.Complete(ctx, c.ID, c.LeaseToken, func(cur Current) Update {
			return Update{Phase: cur.Phase, Conditions: cur.Conditions, ObservedGeneration: c.Generation, History: &HistoryEntry{UID: c.UID,
				Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Generation: c.Generation, Revision: revision, Operation: op,
				Trigger: "created", Result: result, StartedAt: time.Now(), FinishedAt: time.Now()}}
		}); err != nil {
			t.Fatal(err)
		}
	}
	// claim claims what is due, by name (the others are left leased).
	claim := func() map[string]Claimed {
		t.Helper()
		_, cs := claimNames(t, st)
		m := map[string]Claimed{}
		for _, c := range cs {
			m[c.Name] = c
		}
		return m
	}
	applyRefreshed(t, st, "s", "r1", &manifest.Set{Resources: []manifest.Resource{dbResource("db", `{"v":1}`), dbResource("new", `{}`), keep}})
	cs := claim()
	history(cs["new"], "r1", "reconcile", "Failed")
	history(cs["db"], "r1", "reconcile", "Succeeded")
	applyRefreshed(t, st, "s", "r2", &manifest.Set{Resources: []manifest.Resource{dbResource("db", `{"v":2}`), dbResource("new", `{}`), keep}})
	history(claim()["db"], "r2", "reconcile", "Failed")
	// Another resource once of that name (another uid) applied later: not this one's.
	if _, err := st.pool.Exec(ctx, `INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, revision, operation,
		trigger, result, started_at, finished_at) VALUES (gen_random_uuid(), 'prod', 'Db', 'db', 1, 'other', 'reconcile', 'created', 'Succeeded', now(), now())`); err != nil {
		t.Fatal(err)
	}
	// Written before applied revisions were recorded.
	if _, err := st.pool.Exec(ctx, `UPDATE resources SET applied_revision = NULL, applied_spec = NULL`); err != nil {
		t.Fatal(err)
	}
	applyRefreshed(t, st, "s", "r3", &manifest.Set{Resources: []manifest.Resource{keep}})
	cs = claim()
	c := cs["db"]
	if !c.Deleting || c.UID != uid || c.Revision != "r3" || c.AppliedRevision != "r1" {
		t.Fatalf("delete of a resource applied before: deleting %v, revision %q, applied %q; want r3, r1 (from history)", c.Deleting, c.Revision, c.AppliedRevision)
	}
	// Never applied successfully: no applied revision (the delete runs at the removing one).
	if c := cs["new"]; !c.Deleting || c.AppliedRevision != "" {
		t.Fatalf("delete of a resource never applied: deleting %v, applied %q", c.Deleting, c.AppliedRevision)
	}
}
