package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// TestDiffPruneGuardNamesFolder: the note of a prune the server would refuse names DIR, not
// a placeholder.
func TestDiffPruneGuardNamesFolder(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	dir := writeDir(t, map[string]string{"types/all.yaml": typesYAML})
	out, stderr, err := a.run(t, "diff", dir, "--source", "infra")
	want := "note: the server would refuse these deletions (PruneSkipped, EmptyRender): folder " + dir + " renders no resources: not deleting the source's 5 resources"
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("err %v; stdout lacks %q:\n%s\nstderr:\n%s", err, want, out, stderr)
	}
}

// TestDiffInvalidWithoutListing: an invalid DIR is reported without listing the source's
// resources, which a valid one needs and an invalid one does not, so a failing list hides
// nothing.
func TestDiffInvalidWithoutListing(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	target, err := url.Parse(a.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/resources" {
			http.Error(w, `{"error":"listing resources is down"}`, http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	dir := writeDir(t, withFiles(map[string]string{"queues/q.yaml": "apiVersion: x.io/v1\nkind: Topic\nmetadata: {name: q}\nspec: {}\n"}))
	out, stderr, err := runCLI(t, "--server", srv.URL, "diff", dir, "--source", "infra")
	var code exitCode
	if !errors.As(err, &code) || code != 1 || !strings.Contains(out, "! invalid manifests/queues/q.yaml:2: kind: unknown kind Topic") {
		t.Errorf("invalid DIR: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	// A valid DIR needs the list, and says so when it fails.
	out, _, err = runCLI(t, "--server", srv.URL, "diff", writeDir(t, infraFiles("500")), "--source", "infra")
	if err == nil || !strings.Contains(err.Error(), "listing resources is down") {
		t.Errorf("valid DIR: %v\n%s", err, out)
	}
}

// TestDiffPruneGuardAsTheApply: a folder that removes 40 % of a source whose
// prune.maxFraction is 0.3 gets the note of the very refusal the apply makes of the same
// files (its reason and message, the folder named in place of the revision); under the
// default 0.5 the diff notes none.
func TestDiffPruneGuardAsTheApply(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	// Two of infra's five resources removed: orders-pg of staging and catalog-mysql.
	files := infraFiles("500")
	files["databases/clusters.yaml"] = strings.SplitN(files["databases/clusters.yaml"], "\n---\n", 2)[0] + "\n"
	dir := writeDir(t, files)
	prunedInfra(t, a, 0)
	if out, _, _ := a.run(t, "diff", dir, "--source", "infra"); strings.Contains(out, "note:") || !strings.Contains(out, "2 to remove") {
		t.Errorf("diff under the default maxFraction:\n%s", out)
	}
	prunedInfra(t, a, 0.3)
	out, stderr, err := a.run(t, "diff", dir, "--source", "infra")
	if err == nil || !strings.Contains(out, "- DatabaseCluster/staging/orders-pg") || !strings.Contains(out, "- DatabaseCluster/production/catalog-mysql") {
		t.Errorf("the removals are not listed: %v\n%s\nstderr:\n%s", err, out, stderr)
	}

	// The apply of the same files under the same settings.
	res, err := applyFiles(t, a, files, store.ApplyParams{Prune: true, MaxPruneFraction: 0.3})
	if err != nil || res.PruneSkipped != "TooManyDeletions" || !strings.Contains(res.PruneMessage, "would delete 2 of 5 resources (more than prune.maxFraction 0.30)") {
		t.Fatalf("the apply under maxFraction 0.3: %+v %v", res, err)
	}
	want := "note: the server would refuse these deletions (PruneSkipped, " + res.PruneSkipped + "): " +
		strings.Replace(res.PruneMessage, "revision ffffffffffff", "folder "+dir, 1) + "\n"
	if !strings.Contains(out, want) {
		t.Errorf("diff under maxFraction 0.3 lacks %q:\n%s", want, out)
	}
}

// A row an earlier non-pruning revision kept (orphaned) is not a deletion: the diff skips it
// and counts it out of the guard's share, as the apply does; an orphaned row whose manifest
// is back gets a new generation.
func TestDiffOrphanedAsTheApply(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	ctx := context.Background()
	prunedInfra(t, a, 0.3)
	if _, err := a.store.Pool().Exec(ctx, `UPDATE resources SET orphaned = true WHERE name IN ('orders-pg', 'catalog-mysql')`); err != nil {
		t.Fatal(err)
	}
	files := infraFiles("500")
	files["databases/clusters.yaml"] = strings.SplitN(files["databases/clusters.yaml"], "\n---\n", 2)[0] + "\n"
	dir := writeDir(t, files)
	out, stderr, _ := a.run(t, "diff", dir, "--source", "infra")
	if strings.Contains(out, "note:") || strings.Contains(out, "- DatabaseCluster/") || !strings.Contains(out, "0 to remove") {
		t.Errorf("diff lists orphaned rows as deletions:\n%s\nstderr:\n%s", out, stderr)
	}
	if !strings.Contains(out, "~ DatabaseCluster/production/orders-pg  manifests/databases/clusters.yaml:1  (generation 2 → 3)") {
		t.Errorf("the orphaned row still in DIR is not a change:\n%s", out)
	}

	res, err := applyFiles(t, a, files, store.ApplyParams{Prune: true, MaxPruneFraction: 0.3})
	if err != nil || res.PruneSkipped != "" || res.Deleted != 0 || res.Updated != 1 {
		t.Fatalf("the apply: %+v %v", res, err)
	}
}

// applyFiles applies files (named as in infra's manifests folder) to source infra through the
// store's apply, with the prune settings of p, as revision ffff….
func applyFiles(t *testing.T, a *api, files map[string]string, p store.ApplyParams) (store.ApplyResult, error) {
	t.Helper()
	var fs []sources.File
	for path, data := range files {
		fs = append(fs, sources.File{Path: "manifests/" + path, Data: []byte(data)})
	}
	set, err := manifest.NewLoader().Load(fs, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Source, p.Revision, p.Set = "infra", strings.Repeat("f", 40), set
	return a.store.ApplyRevision(context.Background(), p)
}

// TestDiffDependsOnAsTheApply: a dependsOn added or removed is a change of metadata in the
// diff as in the apply (no new generation), with the targets in the metadata's diff; once the
// apply took the folder, the diff finds nothing to change.
func TestDiffDependsOnAsTheApply(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	// The fixture's rows hash their files as the folder names them: the apply of the same
	// files names them from the repository root, as the diff does.
	if _, err := applyFiles(t, a, infraFiles("500"), store.ApplyParams{}); err != nil {
		t.Fatal(err)
	}
	withDeps := infraFiles("500")
	withDeps["databases/clusters.yaml"] = strings.Replace(withDeps["databases/clusters.yaml"], "spec:\n  engine: mysql",
		"dependsOn: [{kind: Bucket, name: invoices}]\nspec:\n  engine: mysql", 1)
	const changed = "~ DatabaseCluster/production/catalog-mysql  manifests/databases/clusters.yaml:13  (metadata only: no new generation, no reconcile)"
	for _, step := range []struct {
		name    string
		files   map[string]string
		diffHas string // a line of the metadata's diff
	}{
		{"dependsOn added", withDeps, `+    "Bucket/production/invoices"`},
		{"dependsOn removed", infraFiles("500"), `-    "Bucket/production/invoices"`},
	} {
		dir := writeDir(t, step.files)
		out, _, err := a.run(t, "diff", dir, "--source", "infra")
		var code exitCode
		if !errors.As(err, &code) || !strings.Contains(out, changed+"\n") || !strings.Contains(out, step.diffHas+"\n") ||
			!strings.Contains(out, "resources: 0 to add, 1 to change, 0 to remove") {
			t.Errorf("%s: diff %v:\n%s", step.name, err, out)
		}
		res, err := applyFiles(t, a, step.files, store.ApplyParams{})
		if err != nil || res.Relabelled != 1 || res.Updated != 0 || res.Created != 0 {
			t.Fatalf("%s: the apply: %+v %v", step.name, res, err)
		}
		if out, _, err := a.run(t, "diff", dir, "--source", "infra"); err != nil || !strings.Contains(out, "resources: 0 to add, 0 to change, 0 to remove") {
			t.Errorf("%s: diff after the apply %v:\n%s", step.name, err, out)
		}
	}
}

// prunedInfra registers source infra again, pruning with prune.maxFraction maxFraction.
func prunedInfra(t *testing.T, a *api, maxFraction float64) {
	t.Helper()
	if err := a.store.RegisterSource(context.Background(), store.SourceConfig{Name: "infra", URL: "https://github.com/acme/infra.git",
		Branch: "main", Path: "manifests", Prune: &store.SourcePrune{Enabled: true, MaxFraction: maxFraction}}); err != nil {
		t.Fatal(err)
	}
}

// TestDiffLargeSource: a source of more resources than the API's graph answers (10,000) diffs
// as a small one: the diff reads the live dependsOn from the resource list.
func TestDiffLargeSource(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	ctx := context.Background()
	var cols string
	if err := a.store.Pool().QueryRow(ctx, `SELECT string_agg(column_name, ',') FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'resources' AND column_name NOT IN ('id', 'name', 'uid')`).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Pool().Exec(ctx, `INSERT INTO resources (name, `+cols+`)
		SELECT 'bulk-' || g, `+cols+` FROM resources r, generate_series(1, 10001) g
		WHERE r.id = (SELECT min(id) FROM resources WHERE source = 'infra')`); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := a.run(t, "diff", writeDir(t, infraFiles("500")), "--source", "infra")
	var code exitCode
	if !errors.As(err, &code) || !strings.Contains(out, "10001 to remove") {
		t.Errorf("diff %v, stderr %q:\n%s", err, stderr, out[max(0, len(out)-500):])
	}
}

// TestDiffDependsOnSpelling: a dependsOn kind spelled otherwise than the target's type spells
// it (BUCKET for Bucket) is compared as the apply wrote it: once the apply took the folder,
// the diff finds nothing to change.
func TestDiffDependsOnSpelling(t *testing.T) {
	t.Parallel()
	a := setup(t)
	rootRelative(t, a)
	files := infraFiles("500")
	files["databases/clusters.yaml"] = strings.Replace(files["databases/clusters.yaml"], "spec:\n  engine: mysql",
		"dependsOn: [{kind: BUCKET, name: invoices}]\nspec:\n  engine: mysql", 1)
	if _, err := applyFiles(t, a, files, store.ApplyParams{}); err != nil {
		t.Fatal(err)
	}
	if res, err := applyFiles(t, a, files, store.ApplyParams{}); err != nil || res.Updated != 0 || res.Relabelled != 0 {
		t.Fatalf("the second apply: %+v %v", res, err)
	}
	out, _, err := a.run(t, "diff", writeDir(t, files), "--source", "infra")
	if err != nil || !strings.Contains(out, "resources: 0 to add, 0 to change, 0 to remove") {
		t.Errorf("diff %v:\n%s", err, out)
	}
}
