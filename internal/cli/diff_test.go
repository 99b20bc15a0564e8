package cli

import (
	"cmp"
	"slices"
	"testing"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources"
)

func TestSourcePrefix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"": "", ".": "", "./": "", "/": "", "manifests": "manifests", "./manifests/": "manifests",
		"deploy/prod": "deploy/prod", `deploy\prod`: "deploy/prod", "deploy//prod/": "deploy/prod",
	} {
		if got := sourcePrefix(in); got != want {
			t.Errorf("sourcePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAboveSource names each outcome of telling a folder above the source's from the source's
// folder by where the source applied its files (path deploy/manifests, DIR holding
// manifests/).
func TestAboveSource(t *testing.T) {
	t.Parallel()
	const prefix = "deploy/manifests"
	named := func(paths ...string) []sources.File {
		var out []sources.File
		for _, p := range paths {
			out = append(out, sources.File{Path: prefix + "/" + p})
		}
		return out
	}
	applied := map[string]bool{prefix + "/a.yaml": true, prefix + "/b.yaml": true}
	for _, tc := range []struct {
		name    string
		files   []sources.File
		applied map[string]bool
		want    string // "error", "note" or ""
	}{
		{"files one folder deeper only", named("manifests/a.yaml", "manifests/b.yaml", "x.yaml"), applied, "error"},
		{"files where applied", named("a.yaml", "manifests/c.yaml"), applied, ""},
		{"files at both places", named("a.yaml", "manifests/b.yaml"), applied, "note"},
		{"nothing applied", named("manifests/a.yaml"), nil, "note"},
		{"nothing matches", named("manifests/c.yaml"), applied, "note"},
	} {
		note, err := aboveSource("/r/deploy", prefix, []string{"manifests"}, tc.files, tc.applied, "infra")
		got := map[bool]string{true: "error"}[err != nil]
		if note != "" {
			got = "note"
		}
		if got != tc.want || err != nil && note != "" {
			t.Errorf("%s: note %q, err %v; want %s", tc.name, note, err, cmp.Or(tc.want, "neither"))
		}
	}
}

// TestMetaDependsOn: the metadata a diff compares holds the explicit dependsOn targets, sorted,
// read alike from a manifest and from the API's list; output references alone are no
// dependsOn, and a resource without dependsOn keeps the metadata it had without them.
func TestMetaDependsOn(t *testing.T) {
	t.Parallel()
	id := func(kind, ns, name string) graph.ID { return graph.ID{Kind: kind, Namespace: ns, Name: name} }
	live := liveDependsOn([]wire.Dependency{
		{Kind: "Network", Namespace: "p", Name: "core", Explicit: true},
		{Kind: "Database", Namespace: "p", Name: "orders", Explicit: true, Outputs: []string{"host"}},
		{Kind: "Bucket", Namespace: "p", Name: "assets", Outputs: []string{"arn"}},
	})
	for _, tc := range []struct {
		name string
		deps []manifest.Dependency
		want []string
	}{
		{"none", nil, nil},
		{"output references only", []manifest.Dependency{{Target: id("Bucket", "p", "assets"), Outputs: []string{"arn"}}}, nil},
		{"as the list has them", []manifest.Dependency{
			{Target: id("Network", "p", "core"), Explicit: true},
			{Target: id("Bucket", "p", "assets"), Outputs: []string{"arn"}},
			{Target: id("Database", "p", "orders"), Explicit: true, Outputs: []string{"host"}},
		}, live},
	} {
		if got := dependsOn(tc.deps); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if want := []string{"Database/p/orders", "Network/p/core"}; !slices.Equal(live, want) {
		t.Errorf("the list's dependsOn %q, want %q", live, want)
	}
	without, _ := metaJSON("v1", nil, nil, nil)
	if string(without) != `{"annotations":{},"apiVersion":"v1","labels":{}}` {
		t.Errorf("metadata without dependsOn %s", without)
	}
	with, _ := metaJSON("v1", nil, nil, live)
	if string(with) != `{"annotations":{},"apiVersion":"v1","dependsOn":["Database/p/orders","Network/p/core"],"labels":{}}` {
		t.Errorf("metadata with dependsOn %s", with)
	}
}
