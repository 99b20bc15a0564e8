package cli

import (
	"cmp"
	"testing"

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
