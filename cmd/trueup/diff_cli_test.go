package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/store"
)

// writeDir lays files out under a fresh folder.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// withFiles returns infra at rev2 with some files replaced ("" deletes one).
func withFiles(changes map[string]string) map[string]string {
	files := infraFiles("500")
	for k, v := range changes {
		if v == "" {
			delete(files, k)
		} else {
			files[k] = v
		}
	}
	return files
}

// rootRelative names infra's stored files as its Git source (path: manifests) does, from the
// repository root: the shared fixture applies them as they lie in the manifests folder.
func rootRelative(t *testing.T, a *api) {
	t.Helper()
	for _, table := range []string{"resources", "resource_types"} {
		if _, err := a.store.Pool().Exec(context.Background(),
			`UPDATE `+table+` SET file_path = 'manifests/' || file_path WHERE source = 'infra'`); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	changedDatabases := strings.NewReplacer(
		"storage_gb: 500", "storage_gb: 1000",
		`version: "8.0"`, `version: "8.4"`,
		"labels: {team: checkout}\n", "labels: {team: checkout, env: staging}\n",
	).Replace(strings.Replace(databasesYAML, "STORAGE", "500", 1))
	invoicesGone := bucketsYAML[strings.Index(bucketsYAML, "---\n")+4:]

	cases := []struct {
		name   string
		files  map[string]string
		golden string
		exit   int
	}{
		{"no changes", withFiles(map[string]string{"README.md": "not a manifest", ".git/config": "[core]"}), "diff_none.txt", 0},
		{"changes", withFiles(map[string]string{
			"databases/clusters.yaml": changedDatabases,
			"storage/buckets.yaml":    invoicesGone,
			"storage/archive.yaml":    "apiVersion: storage.example.com/v1\nkind: Bucket\nmetadata: {name: archive, namespace: production}\nspec: {region: us-east-1}\n",
			"queues/reports.yaml":     "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: reports}\nspec: {size: 5}\n",
			"types/all.yaml":          strings.Replace(typesYAML, "resyncInterval: 10m", "resyncInterval: 5m", 1),
		}), "diff_changes.txt", 1},
		{"resources only", map[string]string{
			"databases/clusters.yaml": strings.Replace(databasesYAML, "STORAGE", "700", 1),
			"buckets.yaml":            bucketsYAML,
		}, "diff_resources_only.txt", 1},
		{"types removed", withFiles(map[string]string{
			"types/all.yaml":       typesYAML[:strings.Index(typesYAML, "---\n")],
			"storage/buckets.yaml": "",
		}), "diff_types_removed.txt", 1},
		{"invalid", withFiles(map[string]string{
			"databases/bad.yaml": "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata:\n  name: orders\nspec:\n  engine: oracle\n  storage_gb: 5\n",
			"queues/q.yaml":      "apiVersion: x.io/v1\nkind: Topic\nmetadata: {name: q}\nspec: {}\n",
		}), "diff_invalid.txt", 1},
		{"conflicts", withFiles(map[string]string{
			"queues/jobs.yaml":  "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: jobs}\nspec: {size: 100}\n",
			"types/queue.yaml":  strings.SplitAfter(platformYAML, "---\n")[0],
			"queues/other.yaml": "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: other}\nspec: {}\n",
		}), "diff_conflicts.txt", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeDir(t, tc.files)
			out, stderr, err := a.run(t, "diff", dir, "--source", "infra")
			var code exitCode
			switch {
			case tc.exit == 0 && err != nil, tc.exit != 0 && (!errors.As(err, &code) || int(code) != tc.exit):
				t.Fatalf("exit %v, want %d\nstdout:\n%s\nstderr:\n%s", err, tc.exit, out, stderr)
			}
			if stderr != "" {
				t.Errorf("stderr: %s", stderr)
			}
			golden(t, tc.golden, out)
		})
	}
}

// TestDiffSourcePath: DIR is the folder of a source with a path; its files are compared by
// their names from the repository root, as the server stores them.
func TestDiffSourcePath(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	diff := func(t *testing.T, dir, source string, wantExit int) string {
		t.Helper()
		out, stderr, err := a.run(t, "diff", dir, "--source", source)
		var code exitCode
		switch {
		case wantExit == 0 && err != nil, wantExit != 0 && (!errors.As(err, &code) || int(code) != wantExit):
			t.Fatalf("exit %v, want %d\nstdout:\n%s\nstderr:\n%s", err, wantExit, out, stderr)
		}
		return out
	}
	unchanged := "infra@3f2a9c1d7e4b: resources: 0 to add, 0 to change, 0 to remove, 5 unchanged; types: 0 to add, 0 to change, 0 to remove, 2 unchanged\n"

	// An unchanged checkout of the manifests folder changes nothing: nothing "moved".
	if out := diff(t, writeDir(t, infraFiles("500")), "infra", 0); out != unchanged {
		t.Errorf("unchanged tree:\n%s", out)
	}
	// A file moved inside the folder is named from the repository root on both sides.
	files := infraFiles("500")
	files["db/clusters.yaml"] = files["databases/clusters.yaml"]
	delete(files, "databases/clusters.yaml")
	out := diff(t, writeDir(t, files), "infra", 1)
	for _, want := range []string{
		"~ DatabaseCluster/production/orders-pg  manifests/db/clusters.yaml:1  (moved from manifests/databases/clusters.yaml; no new generation, no reconcile)\n",
		"resources: 0 to add, 3 to change, 0 to remove, 2 unchanged; types: 0 to add, 0 to change, 0 to remove, 2 unchanged\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("moved file: missing %q in\n%s", want, out)
		}
	}
	// Errors name files as a sync would report them.
	files = infraFiles("500")
	files["databases/bad.yaml"] = "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: bad}\nspec: {engine: oracle, storage_gb: 50}\n"
	if out := diff(t, writeDir(t, files), "infra", 1); !strings.Contains(out, "! invalid manifests/databases/bad.yaml:4: spec.engine") {
		t.Errorf("invalid file:\n%s", out)
	}
	// A source without a path: DIR is its root.
	if out := diff(t, writeDir(t, map[string]string{"queues.yaml": platformYAML}), "platform", 0); !strings.Contains(out, "resources: 0 to add, 0 to change, 0 to remove, 1 unchanged; types: 0 to add, 0 to change, 0 to remove, 1 unchanged") {
		t.Errorf("source without a path:\n%s", out)
	}
	// The path as written in a config ("./manifests/") is cleaned as the Git source cleans it.
	if err := a.store.RegisterSource(context.Background(), store.SourceConfig{Name: "infra", URL: "https://github.com/acme/infra.git",
		Branch: "main", Path: "./manifests/"}); err != nil {
		t.Fatal(err)
	}
	if out := diff(t, writeDir(t, infraFiles("500")), "infra", 0); out != unchanged {
		t.Errorf("path ./manifests/:\n%s", out)
	}
}

func TestDiffErrors(t *testing.T) {
	t.Parallel()
	a := setup(t)
	dir := writeDir(t, infraFiles("500"))
	_, _, err := a.run(t, "diff", dir, "--source", "nope")
	if err == nil || err.Error() != "source nope: not found" {
		t.Errorf("unknown source: %v", err)
	}
	_, _, err = a.run(t, "diff", filepath.Join(dir, "missing"), "--source", "infra")
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing folder: %v", err)
	}
	_, _, err = a.run(t, "diff", dir)
	if err == nil || !strings.Contains(err.Error(), `"source" not set`) {
		t.Errorf("without --source: %v", err)
	}
}

// TestDiffRepositoryRoot: given the repository root of a source that reads a folder, or a
// folder between the two, diff says which folder to pass instead of reporting every file as
// moved: as an error when the source's applied files show it, as a note when they cannot.
func TestDiffRepositoryRoot(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	// tree lays infra's files out under folder, beside files no source reads.
	tree := func(folder string) string {
		files := map[string]string{"README.md": "# infra", "compose.yaml": "services: {}\n"}
		for name, content := range infraFiles("500") {
			files[folder+"/"+name] = content
		}
		return writeDir(t, files)
	}
	diff := func(dir, source string) (string, error) {
		t.Helper()
		out, stderr, err := a.run(t, "diff", dir, "--source", source)
		if stderr != "" {
			t.Errorf("stderr: %s", stderr)
		}
		return out, err
	}
	root := tree("manifests")
	out, err := diff(root, "infra")
	want := root + " holds the folder source infra reads (path manifests): pass " + filepath.Join(root, "manifests") + " as DIR"
	if err == nil || err.Error() != want {
		t.Errorf("diff of the repository root: %v, want %q\nstdout:\n%s", err, want, out)
	}

	// The folder itself diffs as usual, even when it holds a folder named like the path.
	inner := withFiles(map[string]string{"manifests/extra.yaml": "apiVersion: storage.example.com/v1\nkind: Bucket\nmetadata: {name: extra}\nspec: {region: us-east-1}\n"})
	out, err = diff(writeDir(t, inner), "infra")
	var code exitCode
	if !errors.As(err, &code) || code != 1 || !strings.Contains(out, "+ Bucket/default/extra  manifests/manifests/extra.yaml:1\n") || strings.Contains(out, "note:") {
		t.Errorf("a folder holding manifests/: %v\nstdout:\n%s", err, out)
	}

	// A source that applied nothing yet cannot tell: a note names the folder, and DIR's
	// problems are still reported, under the names DIR gives its files.
	ctx := context.Background()
	if err := a.store.RegisterSource(ctx, store.SourceConfig{Name: "fresh", URL: "https://github.com/acme/fresh.git", Branch: "main", Path: "deploy/manifests"}); err != nil {
		t.Fatal(err)
	}
	fresh := writeDir(t, map[string]string{"compose.yaml": "services: {}\n",
		"deploy/manifests/queues.yaml": "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: reports}\nspec: {size: 5}\n"})
	for _, dir := range []string{fresh, filepath.Join(fresh, "deploy")} {
		out, err = diff(dir, "fresh")
		folder := filepath.Join(fresh, "deploy", "manifests")
		rel, _ := filepath.Rel(dir, folder)
		wantNote := "note: " + dir + " holds " + filepath.ToSlash(rel) + "/, named like the folder source fresh reads (path deploy/manifests); if that is the folder, pass " + folder + " as DIR\n"
		if !errors.As(err, &code) || code != 1 || !strings.Contains(out, wantNote) {
			t.Errorf("fresh source, DIR %s: %v; want %q in\n%s", dir, err, wantNote, out)
		}
	}
	if out, err = diff(fresh, "fresh"); !strings.Contains(out, "! invalid deploy/manifests/compose.yaml:1: ") {
		t.Errorf("fresh source: DIR's problems are reported: %v\n%s", err, out)
	}

	// A folder between the root and the source's folder (path deploy/manifests, DIR deploy).
	if err := a.store.RegisterSource(ctx, store.SourceConfig{Name: "infra", URL: "https://github.com/acme/infra.git", Branch: "main", Path: "deploy/manifests"}); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"resources", "resource_types"} {
		if _, err := a.store.Pool().Exec(ctx, `UPDATE `+table+` SET file_path = 'deploy/' || file_path WHERE source = 'infra'`); err != nil {
			t.Fatal(err)
		}
	}
	root = tree("deploy/manifests")
	folder := filepath.Join(root, "deploy", "manifests")
	for _, dir := range []string{root, filepath.Join(root, "deploy")} {
		out, err = diff(dir, "infra")
		want := dir + " holds the folder source infra reads (path deploy/manifests): pass " + folder + " as DIR"
		if err == nil || err.Error() != want {
			t.Errorf("DIR %s: %v, want %q\nstdout:\n%s", dir, err, want, out)
		}
	}
	if out, err = diff(folder, "infra"); err != nil {
		t.Errorf("the folder itself: %v\n%s", err, out)
	}
}

// TestDiffKustomize: a source that renders is diffed on its rendered output, with the
// kustomization folders of --kustomize or the render block of --config; a refused
// kustomization is an invalid revision.
func TestDiffKustomize(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	files := infraFiles("500")
	files["kustomization.yaml"] = "resources: [types/all.yaml, databases/clusters.yaml, storage/buckets.yaml]\n"
	dir := writeDir(t, files)
	const unchanged = "resources: 0 to add, 0 to change, 0 to remove, 5 unchanged; types: 0 to add, 0 to change, 0 to remove, 2 unchanged\n"
	if out, stderr, err := a.run(t, "diff", dir, "--source", "infra", "--kustomize", "."); err != nil || !strings.HasSuffix(out, unchanged) {
		t.Fatalf("diff --kustomize .: %v\n%s%s", err, out, stderr)
	}
	cfg := filepath.Join(t.TempDir(), "trueup.yaml")
	writeTestFile(t, cfg, "sources:\n  - name: infra\n    git: {url: https://github.com/acme/infra.git, path: manifests}\n    render: kustomize\n")
	if out, stderr, err := a.run(t, "diff", dir, "--source", "infra", "--config", cfg); err != nil || !strings.HasSuffix(out, unchanged) {
		t.Fatalf("diff --config: %v\n%s%s", err, out, stderr)
	}
	files["kustomization.yaml"] = "resources:\n- https://example.com/all.yaml\n"
	out, _, err := a.run(t, "diff", writeDir(t, files), "--source", "infra", "--kustomize", ".")
	var code exitCode
	if !errors.As(err, &code) || code != 1 ||
		!strings.Contains(out, `! invalid manifests/kustomization.yaml: resources[0]: "https://example.com/all.yaml" is a remote base`) {
		t.Fatalf("remote resource: %v\n%s", err, out)
	}
}
