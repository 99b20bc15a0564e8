package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// applySet applies revision rev of source as the loader makes a ResourceSet ns/name
// generating a Queue per member name, without pruning the source's other resources.
func (e *authzEnv) applySet(t *testing.T, source, rev, ns, name string, members ...string) {
	t.Helper()
	set := &manifest.Set{ResourceSets: []manifest.ResourceSetInfo{{Namespace: ns, Name: name, File: "sets/" + name + ".yaml", Line: 2,
		Inputs: len(members), Members: len(members)}}}
	for _, m := range members {
		spec := json.RawMessage(fmt.Sprintf(`{"size":%d}`, len(m)))
		set.Resources = append(set.Resources, manifest.Resource{APIVersion: "mq.example.com/v1", Kind: "Queue", Namespace: ns, Name: m,
			Labels: map[string]string{manifest.LabelResourceSet: name}, Annotations: map[string]string{},
			Spec: spec, SpecHash: string(spec), MetaHash: name, File: "sets/" + name + ".yaml", Line: 8})
	}
	if _, err := e.st.ApplyRevision(context.Background(), store.ApplyParams{Source: source, Revision: rev, Set: set}); err != nil {
		t.Fatal(err)
	}
}

// TestResourceSetsAPI: the sets are listed and shown with their members counted by phase, to
// the callers who see their namespaces; a set out of scope is missing.
func TestResourceSetsAPI(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)
	e.applySet(t, "web", "rev2", "staging", "caches", "cache-eu", "cache-us")
	e.applySet(t, "prodsrc", "rev2", "production", "prd-a", "prd-set-1")
	if _, err := e.st.Pool().Exec(context.Background(), "UPDATE resources SET phase = 'Ready' WHERE name = 'cache-eu'"); err != nil {
		t.Fatal(err)
	}

	body := e.viewerSees(t, "/api/v1/resourcesets", `"name":"caches"`)
	var list struct{ Items []wire.ResourceSet }
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("viewer of staging: %s", body)
	}
	got := list.Items[0]
	want := wire.ResourceSet{Namespace: "staging", Name: "caches", Source: "web", Path: "sets/caches.yaml", Line: 2, Revision: "rev2",
		Inputs: 2, Members: 2, Phases: map[string]int{"Ready": 1, "Pending": 1}, CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}
	if !maps.Equal(got.Phases, want.Phases) || fmt.Sprint(got) != fmt.Sprint(want) || got.CreatedAt.IsZero() {
		t.Errorf("set = %+v\nwant %+v", got, want)
	}
	var one wire.ResourceSet
	if err := json.Unmarshal([]byte(e.viewerSees(t, "/api/v1/resourcesets/staging/caches")), &one); err != nil || fmt.Sprint(one) != fmt.Sprint(got) {
		t.Errorf("get = %+v (%v), want %+v", one, err, got)
	}
	e.viewerSees(t, "/api/v1/resourcesets?namespace=production", `"items":[]`)
	e.viewerSees(t, "/api/v1/resourcesets?source=web&namespace=staging", `"name":"caches"`)
	// Its members are the resources with its label.
	e.viewerSees(t, "/api/v1/resources?namespace=staging&labelSelector="+url.QueryEscape(manifest.LabelResourceSet+"=caches"),
		`"name":"cache-eu"`, `"name":"cache-us"`, `"resourceSet":"caches"`)

	if code := e.sameAsMissing(t, "/api/v1/resourcesets/production/prd-a", "/api/v1/resourcesets/production/nope-a"); code != http.StatusNotFound {
		t.Errorf("out of scope: %d, want 404", code)
	}
	for _, c := range []struct{ who, path, want string }{
		{"admin:*", "/api/v1/resourcesets", `"name":"prd-a"`},
		{"admin:*", "/api/v1/resourcesets?source=prodsrc", `"phases":{"Pending":1}`},
		{"viewer:production", "/api/v1/resourcesets/production/prd-a", `"source":"prodsrc"`},
	} {
		if code, body := e.get(t, c.who, c.path); code != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d %s, want %s", c.who, c.path, code, body, c.want)
		}
	}
	if code, _ := e.get(t, "", "/api/v1/resourcesets"); code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", code)
	}
}
