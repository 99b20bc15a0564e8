package syncer

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/sources"
)

// overlays is a base of one Database, with prod and staging overlays patching its size.
func overlays(prodSize int, prodBase string) map[string]string {
	return map[string]string{
		"deploy/types/kustomization.yaml":            "resources: [t.yaml]\n",
		"deploy/types/t.yaml":                        dbType,
		"deploy/base/kustomization.yaml":             "resources: [db.yaml]\n",
		"deploy/base/db.yaml":                        "apiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: db}\nspec: {size: 1}\n",
		"deploy/overlays/prod/kustomization.yaml":    "namePrefix: prod-\nresources:\n- " + prodBase + "\npatches:\n- path: size.yaml\n",
		"deploy/overlays/prod/size.yaml":             "apiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: db}\nspec: {size: " + strconv.Itoa(prodSize) + "}\n",
		"deploy/overlays/staging/kustomization.yaml": "namePrefix: staging-\nresources: [../../base]\n",
	}
}

// TestSyncRendersKustomize: a source with render: kustomize applies the overlays' output;
// a revision whose kustomization is refused is rejected at the kustomization, nothing
// applied; a revision is rendered once however often it is loaded.
func TestSyncRendersKustomize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), overlays(50, "../../base"))
	var renders atomic.Int32
	kust := render.Kustomizations("deploy", config.Kustomize{Paths: []string{"types", "overlays/*"}}, 0)
	s := New(b.store, Options{Name: "infra", Source: r.source(), Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: 15 * time.Second,
		Render: func(ctx context.Context, files []sources.File) ([]sources.File, error) {
			renders.Add(1)
			return kust(ctx, files)
		}}, slog.New(slog.DiscardHandler))
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]string{"prod-db": `{"size": 50}`, "staging-db": `{"size": 1}`} {
		res, err := b.store.GetResource(b.ctx, "default", "Database", name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(res.Spec) != spec || res.Source.Path != "deploy/base/db.yaml" {
			t.Errorf("%s: spec %s from %s, want %s from deploy/base/db.yaml", name, res.Spec, res.Source.Path, spec)
		}
	}

	r.set(rev(2), overlays(60, "github.com/example/infra//base?ref=v1"))
	_, err := s.SyncOnce(b.ctx)
	want := `deploy/overlays/prod/kustomization.yaml: resources[0]: "github.com/example/infra//base?ref=v1" is a remote base`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("SyncOnce error = %v, want %s", err, want)
	}
	got := b.source()
	c, _ := status.Get(got.Conditions, status.Ready)
	if got.Revision != rev(1) || c.Status != status.False || c.Reason != "RenderFailed" || len(got.Errors) != 1 ||
		got.Errors[0].File != "deploy/overlays/prod/kustomization.yaml" {
		t.Fatalf("after the refusal: revision %s, ready %+v, errors %+v", clip.Rev(got.Revision), c, got.Errors)
	}
	if res, _ := b.store.GetResource(b.ctx, "default", "Database", "prod-db"); string(res.Spec) != `{"size": 50}` {
		t.Errorf("prod-db spec %s after a refused revision", res.Spec)
	}

	// A revision loaded again is not rendered again.
	r.set(rev(3), overlays(70, "../../base"))
	n := renders.Load()
	if _, err := s.render(b.ctx, r.snapshot(rev(3))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	if got := renders.Load() - n; got != 1 {
		t.Errorf("revision 3 rendered %d times, want once", got)
	}
	if res, _ := b.store.GetResource(b.ctx, "default", "Database", "prod-db"); string(res.Spec) != `{"size": 70}` {
		t.Errorf("prod-db spec %s, want size 70", res.Spec)
	}
}

// TestSyncRendersResourceSetInputs: a ResourceSet in a kustomize base reads its inputsFrom
// folder from the revision as fetched (the folder is not a resource, so not in kustomize's
// output), resolved from the set's own file.
func TestSyncRendersResourceSetInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), map[string]string{
		"deploy/types/kustomization.yaml": "resources: [t.yaml]\n",
		"deploy/types/t.yaml":             dbType,
		"deploy/base/kustomization.yaml":  "resources: [set.yaml]\n",
		"deploy/base/set.yaml": `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: dbs, namespace: default}
spec:
  inputsFrom: [{path: tenants/}]
  resources:
    - apiVersion: infra.example.com/v1
      kind: Database
      metadata: {name: "db-<< inputs.tenant >>"}
      spec: {size: "<< inputs.size >>"}
`,
		"deploy/base/tenants/a.yaml":              "- {tenant: acme, size: 10}\n- {tenant: globex, size: 20}\n",
		"deploy/overlays/prod/kustomization.yaml": "resources: [../../base]\n",
	})
	s := New(b.store, Options{Name: "infra", Source: r.source(), Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: 15 * time.Second,
		Render: render.Kustomizations("deploy", config.Kustomize{Paths: []string{"types", "overlays/*"}}, 0)}, slog.New(slog.DiscardHandler))
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]string{"db-acme": `{"size": 10}`, "db-globex": `{"size": 20}`} {
		res, err := b.store.GetResource(b.ctx, "default", "Database", name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(res.Spec) != spec || res.Source.Path != "deploy/base/set.yaml" {
			t.Errorf("%s: spec %s from %s, want %s from deploy/base/set.yaml", name, res.Spec, res.Source.Path, spec)
		}
	}
}

// TestSyncRenderInterrupted: a render that runs out of time or is cancelled does not reject
// the revision; the next sync of the same head renders and applies it.
func TestSyncRenderInterrupted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), overlays(50, "../../base"))
	var interrupt atomic.Bool
	interrupt.Store(true)
	kust := render.Kustomizations("deploy", config.Kustomize{Paths: []string{"types", "overlays/*"}}, 0)
	s := New(b.store, Options{Name: "infra", Source: r.source(), Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: 15 * time.Second,
		Render: func(ctx context.Context, files []sources.File) ([]sources.File, error) {
			if interrupt.Load() {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			return kust(ctx, files)
		}}, slog.New(slog.DiscardHandler))
	_, err := s.SyncOnce(b.ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("SyncOnce error = %v, want the cancellation", err)
	}
	got := b.source()
	if c, _ := status.Get(got.Conditions, status.Ready); c.Reason == "RenderFailed" || len(got.Errors) != 0 {
		t.Fatalf("after an interrupted render: ready %+v, errors %+v", c, got.Errors)
	}
	interrupt.Store(false)
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := b.store.GetResource(b.ctx, "default", "Database", "prod-db"); err != nil || string(res.Spec) != `{"size": 50}` {
		t.Fatalf("prod-db after the retry: %+v, %v", res, err)
	}
}
