package ocisource_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/ocisource"
	"github.com/trueup-dev/trueup/sources/ocisource/ocitest"
)

const repo = "acme/config"

var files = map[string]string{
	"deploy/db.yaml":     "kind: Database\n",
	"deploy/app.json":    "{}",
	"deploy/README.md":   "# not a manifest\n",
	"other/ignored.yaml": "kind: Other\n",
}

// open builds a validated source of spec against reg (plain HTTP: insecure, loopback).
func open(t *testing.T, reg *ocitest.Registry, spec ocisource.Spec, env sources.Env) *ocisource.Source {
	t.Helper()
	spec.URL = "oci://" + reg.Host + "/" + repo
	spec.Insecure = true
	spec.Defaults(func(p string) string { return p })
	if err := spec.Validate("sources[0].oci"); err != nil {
		t.Fatal(err)
	}
	env.Name = "config"
	src, err := ocisource.New(&spec, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

func paths(snap *sources.Snapshot) []string {
	var out []string
	for _, f := range snap.Files {
		out = append(out, f.Path)
	}
	return out
}

func TestFluxArtifactHeadAndFetch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, nil)
	digest := reg.PushFiles(t, repo, "v1", files)
	src := open(t, reg, ocisource.Spec{Tag: "v1", Path: "deploy"}, sources.Env{})
	head, err := src.Head(ctx)
	if err != nil || head != digest {
		t.Fatalf("head %q, %v; want %q", head, err, digest)
	}
	snap, err := src.Fetch(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(snap), []string{"deploy/app.json", "deploy/db.yaml"}; snap.Revision != digest || !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot %s %q, want %s %q", snap.Revision, got, digest, want)
	}
	if string(snap.Files[1].Data) != "kind: Database\n" || len(snap.Files[1].Hash) != 64 {
		t.Errorf("file %+v", snap.Files[1])
	}

	all := open(t, reg, ocisource.Spec{Tag: "v1", Path: "deploy"}, sources.Env{AllFiles: true})
	snap, err = all.Fetch(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(snap), []string{"deploy/README.md", "deploy/app.json", "deploy/db.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("all files %q, want %q", got, want)
	}

	missing := open(t, reg, ocisource.Spec{Tag: "v1", Path: "nope"}, sources.Env{})
	if _, err := missing.Fetch(ctx, head); !errors.Is(err, sources.ErrPathNotFound) {
		t.Errorf("missing path: %v", err)
	}
}

// An unchanged tag costs one HEAD request and no download; a moved tag is a new revision.
func TestPollCostsOneHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, nil)
	first := reg.PushFiles(t, repo, "stable", files)
	src := open(t, reg, ocisource.Spec{Tag: "stable"}, sources.Env{})
	head, err := src.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Fetch(ctx, head); err != nil {
		t.Fatal(err)
	}
	reg.Reset()
	head, err = src.Head(ctx)
	if err != nil || head != first {
		t.Fatalf("head %q, %v", head, err)
	}
	if _, err := src.Fetch(ctx, head); err != nil {
		t.Fatal(err)
	}
	if got, want := reg.Requests(), map[string]int{"HEAD manifest": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("an unchanged poll made %v, want %v", got, want)
	}

	second := reg.PushFiles(t, repo, "stable", map[string]string{"db.yaml": "kind: Database\nspec: {size: 2}\n"})
	head, err = src.Head(ctx)
	if err != nil || head != second || head == first {
		t.Fatalf("head after a push %q, %v; want %q", head, err, second)
	}
	snap, err := src.Fetch(ctx, head)
	if err != nil || len(snap.Files) != 1 || !strings.Contains(string(snap.Files[0].Data), "size: 2") {
		t.Fatalf("fetch after a push: %+v, %v", snap, err)
	}
	// A pin reads an older artifact by its digest.
	old, err := src.FetchRevision(ctx, first)
	if err != nil || len(old.Files) != 3 {
		t.Fatalf("fetch of the first revision: %v, %v", old, err)
	}
}

func TestSemverPicksHighestRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, nil)
	var want string
	for _, tag := range []string{"latest", "v1.0.0", "v1.10.0-rc.1", "v1.2.0", "v2.0.0"} {
		d := reg.PushFiles(t, repo, tag, map[string]string{"v.yaml": "tag: " + tag + "\n"})
		if tag == "v1.2.0" {
			want = d
		}
	}
	src := open(t, reg, ocisource.Spec{Semver: ">=1.0.0 <2.0.0"}, sources.Env{})
	if head, err := src.Head(ctx); err != nil || head != want {
		t.Fatalf("head %q, %v; want v1.2.0's %q", head, err, want)
	}
	none := open(t, reg, ocisource.Spec{Semver: ">=3"}, sources.Env{})
	if _, err := none.Head(ctx); err == nil || !strings.Contains(err.Error(), `no tag matches semver ">=3"`) {
		t.Errorf("no match: %v", err)
	}
}

func TestDigestPinNeedsNoRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, nil)
	digest := reg.PushFiles(t, repo, "v1", files)
	src := open(t, reg, ocisource.Spec{Digest: digest}, sources.Env{})
	reg.Reset()
	if head, err := src.Head(ctx); err != nil || head != digest {
		t.Fatalf("head %q, %v", head, err)
	}
	if got := reg.Requests(); len(got) != 0 {
		t.Errorf("a digest's head made requests: %v", got)
	}
	if snap, err := src.Fetch(ctx, digest); err != nil || len(snap.Files) != 3 {
		t.Fatalf("fetch: %v, %v", snap, err)
	}
}

func TestArtifactShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, nil)
	tgz := ocitest.TarGz(t, map[string]string{"db.yaml": "kind: Database\n"})
	for _, tc := range []struct {
		name string
		push func() string
		err  string
	}{
		{"plain tar.gz layer", func() string { return reg.Push(t, repo, "plain", ocitest.Image(t, types.DockerLayer, tgz)) }, ""},
		{"OCI tar+gzip layer", func() string { return reg.Push(t, repo, "oci", ocitest.Image(t, types.OCILayer, tgz)) }, ""},
		{"two layers", func() string { return reg.Push(t, repo, "two", ocitest.Image(t, types.OCILayer, tgz, tgz)) },
			"2 layers and no Flux content layer"},
		{"an uncompressed layer", func() string { return reg.Push(t, repo, "tar", ocitest.Image(t, types.OCIUncompressedLayer, tgz)) },
			"not a tar.gz"},
		{"not gzip", func() string { return reg.Push(t, repo, "raw", ocitest.Image(t, types.OCILayer, []byte("plain text"))) },
			"not gzip"},
	} {
		digest := tc.push()
		src := open(t, reg, ocisource.Spec{Digest: digest}, sources.Env{})
		snap, err := src.Fetch(ctx, digest)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && (len(snap.Files) != 1 || snap.Files[0].Path != "db.yaml"):
			t.Errorf("%s: files %q", tc.name, paths(snap))
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// A layer over the limit is refused from the manifest's size: its blob is never requested.
func TestOversizeLayerRefusedBeforeDownload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, nil)
	digest := reg.PushLyingSize(t, repo, "big", ocitest.FluxArtifact(t, ocitest.TarGz(t, files)), ocisource.MaxLayerBytes+1)
	src := open(t, reg, ocisource.Spec{Tag: "big"}, sources.Env{})
	reg.Reset()
	_, err := src.Fetch(ctx, digest)
	if err == nil || !strings.Contains(err.Error(), "larger than the 64 MiB limit") {
		t.Fatalf("error %v", err)
	}
	if n := reg.Requests()["GET blob"]; n != 0 {
		t.Errorf("%d blob requests for a refused layer", n)
	}
}

func TestMissingTagIsNamed(t *testing.T) {
	t.Parallel()
	reg := ocitest.Start(t, nil)
	reg.PushFiles(t, repo, "v1", files)
	src := open(t, reg, ocisource.Spec{Tag: "nope"}, sources.Env{})
	_, err := src.Head(context.Background())
	if err == nil || !strings.Contains(err.Error(), `tag "nope" not found in oci://`) {
		t.Fatalf("error %v", err)
	}
}

// Without insecure, the plain-HTTP fallback go-containerregistry makes for a local registry
// is refused.
func TestPlainHTTPNeedsInsecure(t *testing.T) {
	t.Parallel()
	reg := ocitest.Start(t, nil)
	reg.PushFiles(t, repo, "v1", files)
	spec := ocisource.Spec{URL: "oci://" + reg.Host + "/" + repo, Tag: "v1"}
	spec.Defaults(func(p string) string { return p })
	src, err := ocisource.New(&spec, sources.Env{Name: "config"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Head(context.Background()); err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Fatalf("error %v", err)
	}
}

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "robot" || p != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	digest := reg.Push(t, repo, "v1", ocitest.FluxArtifact(t, ocitest.TarGz(t, files)),
		remote.WithAuth(&authn.Basic{Username: "robot", Password: "s3cret"}))

	anon := open(t, reg, ocisource.Spec{Tag: "v1"}, sources.Env{})
	if _, err := anon.Head(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("anonymous head: %v", err)
	}
	withPassword := open(t, reg, ocisource.Spec{Tag: "v1", Username: "robot", Password: "s3cret"}, sources.Env{})
	if head, err := withPassword.Head(ctx); err != nil || head != digest {
		t.Errorf("head with a password %q, %v", head, err)
	}
	if _, err := withPassword.Fetch(ctx, digest); err != nil {
		t.Errorf("fetch with a password: %v", err)
	}

	cfg := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	if err := os.WriteFile(cfg, []byte(`{"auths":{"other.example":{"auth":"eDp5"},"http://`+reg.Host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := open(t, reg, ocisource.Spec{Tag: "v1", SecretRef: &ocisource.SecretRef{File: cfg}}, sources.Env{})
	if head, err := fromFile.Head(ctx); err != nil || head != digest {
		t.Errorf("head with a docker config %q, %v", head, err)
	}
}

func TestReadTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, nil)
	digest := reg.PushFiles(t, repo, "v1", map[string]string{"modules/db/main.tf": "resource {}\n", "modules/db/vars.tf": "", "db.yaml": "kind: Database\n"})
	src := open(t, reg, ocisource.Spec{Tag: "v1"}, sources.Env{})
	tree, err := src.ReadTree(ctx, digest, "modules/db")
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 2 || tree[0].Path != "main.tf" || string(tree[0].Data) != "resource {}\n" {
		t.Errorf("tree %+v", tree)
	}
	if _, err := src.ReadTree(ctx, digest, "modules/nope"); !errors.Is(err, sources.ErrPathNotFound) {
		t.Errorf("missing folder: %v", err)
	}
	if _, err := src.ReadTree(ctx, "sha256:"+strings.Repeat("0", 64), "modules/db"); !errors.Is(err, sources.ErrRevisionNotFound) {
		t.Errorf("unknown artifact: %v", err)
	}
}

// ReadTree of a revision Fetch did not read (after a restart, Fetch reads no unchanged
// digest) downloads once, not once a call, also while Fetch reads another revision.
func TestReadTreeKeepsItsArtifact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := ocitest.Start(t, nil)
	old := reg.PushFiles(t, repo, "v1", map[string]string{"modules/db/main.tf": "resource {}\n"})
	current := reg.PushFiles(t, repo, "v2", map[string]string{"modules/db/main.tf": "resource { v2 }\n"})
	src := open(t, reg, ocisource.Spec{Tag: "v2"}, sources.Env{})
	if _, err := src.ReadTree(ctx, old, "modules/db"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Fetch(ctx, current); err != nil {
		t.Fatal(err)
	}
	reg.Reset()
	for range 3 {
		if _, err := src.ReadTree(ctx, old, "modules/db"); err != nil {
			t.Fatal(err)
		}
		if _, err := src.ReadTree(ctx, current, "modules/db"); err != nil {
			t.Fatal(err)
		}
	}
	if got := reg.Requests(); len(got) != 0 {
		t.Errorf("reads of kept artifacts made %v", got)
	}
}

// A layer longer than its manifest says is refused, not read on.
func TestLayerLongerThanManifestRefused(t *testing.T) {
	t.Parallel()
	reg := ocitest.Start(t, nil)
	tgz := ocitest.TarGz(t, files)
	digest := reg.PushLyingSize(t, repo, "short", ocitest.FluxArtifact(t, tgz), int64(len(tgz)-20))
	src := open(t, reg, ocisource.Spec{Digest: digest}, sources.Env{})
	if _, err := src.Fetch(context.Background(), digest); err == nil || !strings.Contains(err.Error(), "longer than the") {
		t.Fatalf("error %v", err)
	}
}
