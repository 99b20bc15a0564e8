package syncer

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/sources"
)

// TestRejectKeepsOrigin: the source's errors of a rejected revision keep the input each comes
// from; here the kustomization that rendered the invalid document.
func TestRejectKeepsOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), overlays(500, "../../base"))
	kust := render.Kustomizations("deploy", config.Kustomize{Paths: []string{"types", "overlays/*"}}, 0)
	s := New(b.store, Options{Name: "infra", Source: r.source(), Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: 15 * time.Second,
		Render: func(ctx context.Context, files []sources.File) ([]sources.File, error) { return kust(ctx, files) }},
		slog.New(slog.DiscardHandler))
	if _, err := s.SyncOnce(b.ctx); err == nil {
		t.Fatal("a revision with size 500 was not rejected")
	}
	got := b.source().Errors
	if len(got) != 1 || got[0].Origin != "rendered by deploy/overlays/prod/kustomization.yaml" || !strings.Contains(got[0].Message, "100") {
		t.Fatalf("errors %+v, want one with origin rendered by deploy/overlays/prod/kustomization.yaml", got)
	}
}
