package preview

import (
	"context"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// TestPreviewRendersKustomize: a pull request of a source with render: kustomize is rendered
// as a push of it would be: a changed patch shows as the change of the patched resource; a
// remote base is the one error, at the kustomization.
func TestPreviewRendersKustomize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	files := func(prodSize, prodBase string) []sources.File {
		return []sources.File{
			{Path: "types/kustomization.yaml", Data: []byte("resources: [t.yaml]\n")},
			{Path: "types/t.yaml", Data: []byte(typeDoc)},
			{Path: "base/kustomization.yaml", Data: []byte("resources: [q.yaml]\n")},
			{Path: "base/q.yaml", Data: []byte(queueDoc("q", 1))},
			{Path: "overlays/prod/kustomization.yaml", Data: []byte("namePrefix: prod-\nresources:\n- " + prodBase + "\npatches: [{path: size.yaml}]\n")},
			{Path: "overlays/prod/size.yaml", Data: []byte(queueDoc("q", prodSize))},
		}
	}
	fn := render.Kustomizations("", config.Kustomize{Paths: []string{"types", "overlays/*"}}, 0)
	out, err := fn(ctx, files("5", "../../base"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := manifest.NewLoader().Load(out, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true, Render: fn}
	res, _, err := c.Check(ctx, &sources.Snapshot{Revision: "pr", Files: files("7", "../../base")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 0 || len(res.Changes) != 1 || res.Changes[0].Name != "prod-q" || res.Changes[0].Op != "change" ||
		res.Changes[0].File != "base/q.yaml" || !strings.Contains(res.Changes[0].Diff, `+  "size": 7`) {
		t.Fatalf("preview of a changed patch: errors %+v, changes %+v", res.Errors, res.Changes)
	}
	res, _, err = c.Check(ctx, &sources.Snapshot{Revision: "pr2", Files: files("7", "https://example.com/base.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 1 || res.Errors[0].File != "overlays/prod/kustomization.yaml" ||
		!strings.Contains(res.Errors[0].Message, `resources[0]: "https://example.com/base.yaml" is a remote base`) {
		t.Fatalf("preview of a remote base: errors %+v", res.Errors)
	}
}
