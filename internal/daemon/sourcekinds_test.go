package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/dirsource"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

// memorySource serves one fixed revision from memory.
type memorySource struct{ files []sources.File }

func (m memorySource) Head(context.Context) (string, error) { return "mem-1", nil }
func (m memorySource) Fetch(_ context.Context, rev string) (*sources.Snapshot, error) {
	return &sources.Snapshot{Revision: rev, Files: m.files}, nil
}
func (m memorySource) Close() error { return nil }

// TestDaemonInjectedSourceKind: a daemon builds its sources with the kinds of Deps.Sources; a
// kind injected for "dir" serves the source from memory (the start's check of the config
// builds it too), and the registration is what the
// kind's spec reports.
func TestDaemonInjectedSourceKind(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	doc := "apiVersion: trueup.dev/v1\nkind: ResourceType\nmetadata:\n  name: ThingM\nspec:\n  group: example.com\n" +
		"  versions:\n    - name: v1\n      schema:\n        type: object\n  action:\n    name: act\n"
	reg := sources.NewRegistry()
	var opened []string
	if err := reg.Register(dirsource.Kind, func(spec sources.Spec, env sources.Env) (sources.Source, error) {
		opened = append(opened, env.Name)
		return memorySource{files: []sources.File{{Path: "t.yaml", Hash: "h1", Data: []byte(doc)}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var logs logbuf.Buffer
	d, err := New(e.config(map[string]string{"m": "/nowhere"}), Deps{Stderr: &logs, Version: "test", Replica: "r1", Sources: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	defer d.Stop()
	waitFor(t, "m synced", func() bool { return e.revision(ctx, "m") == "mem-1" })
	// Once to check it before the database opens (CheckSources), once to run it.
	if !slices.Equal(opened, []string{"m", "m"}) {
		t.Errorf("opened %v", opened)
	}
	src, err := e.st.GetSource(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if src.URL != "dir:///nowhere" {
		t.Errorf("registered url %q", src.URL)
	}
}

// TestNewSourceEnv: the daemon hands a source kind the folder dataDir/<kind>/<name> and a
// timeout of two thirds of the source lease's TTL, so that a hung server fails the sync
// before the lease lapses.
func TestNewSourceEnv(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	cfg, err := config.Parse([]byte("dataDir: "+dataDir+"\nreconcile: {leaseTTL: 90s}\n"+
		"sources:\n  - name: infra\n    git: {url: \"https://example.com/infra.git\"}\n"), t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	reg := sources.NewRegistry()
	var got sources.Env
	if err := reg.Register(gitsource.Kind, func(spec sources.Spec, env sources.Env) (sources.Source, error) {
		got = env
		return memorySource{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := NewSource(reg, cfg, cfg.Sources[0], slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dataDir, "git", "infra"); got.Name != "infra" || got.Dir != want {
		t.Errorf("env name %q dir %q, want infra and %q", got.Name, got.Dir, want)
	}
	if got.Timeout != 60*time.Second {
		t.Errorf("timeout %v, want 60s (leaseTTL 90s * 2/3)", got.Timeout)
	}
}

// An OCI source's webhook reads registry notifications of its repository and followed tag.
func TestWebhookSourcesOCI(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(`sources:
  - name: tagged
    oci: {url: oci://ghcr.io/acme/config, tag: v1}
    webhook: {secret: s}
  - name: ranged
    oci: {url: oci://ghcr.io/acme/config, semver: ">=1"}
    webhook: {secret: s}
  - name: git
    git: {url: https://example.com/r.git}
    webhook: {secret: s}
`), t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	got := webhookSources(cfg)
	if w := got["tagged"]; w.Repository != "acme/config" || w.Tag != "v1" || w.Branch != "" {
		t.Errorf("tagged %+v", w)
	}
	if w := got["ranged"]; w.Repository != "acme/config" || w.Tag != "" {
		t.Errorf("ranged %+v", w)
	}
	if w := got["git"]; w.Repository != "" || w.Branch != "main" {
		t.Errorf("git %+v", w)
	}
}
