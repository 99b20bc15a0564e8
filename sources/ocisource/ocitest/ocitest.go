// Package ocitest serves an in-process OCI registry (go-containerregistry's) for tests, counts
// the requests it answers, and pushes artifacts to it as `flux push artifact` does.
package ocitest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/trueup-dev/trueup/sources/ocisource"
)

// Registry is a running in-process registry.
type Registry struct {
	// Host is host:port of the registry (127.0.0.1, plain HTTP).
	Host string
	URL  string

	mu       sync.Mutex
	requests map[string]int
}

// Start serves a registry until the test ends; wrap, when set, wraps its handler (basic auth).
func Start(t testing.TB, wrap func(http.Handler) http.Handler) *Registry {
	t.Helper()
	r := &Registry{requests: map[string]int{}}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests[Class(req)]++
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Class names a request by method and kind: "HEAD manifest", "GET blob", "GET tags", "GET ping".
func Class(req *http.Request) string {
	p := req.URL.Path
	kind := "other"
	switch {
	case p == "/v2/" || p == "/v2":
		kind = "ping"
	case strings.Contains(p, "/manifests/"):
		kind = "manifest"
	case strings.Contains(p, "/blobs/"):
		kind = "blob"
	case strings.HasSuffix(p, "/tags/list"):
		kind = "tags"
	}
	return req.Method + " " + kind
}

// Requests returns the counts by class since the last Reset.
func (r *Registry) Requests() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.requests))
	for k, v := range r.requests {
		out[k] = v
	}
	return out
}

// Reset zeroes the counts.
func (r *Registry) Reset() {
	r.mu.Lock()
	r.requests = map[string]int{}
	r.mu.Unlock()
}

// TarGz packs files (path → content) into a gzipped tar, sorted by path.
func TarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, files[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FluxArtifact is an artifact as `flux push artifact` makes it, of a tar.gz content.
func FluxArtifact(t testing.TB, tgz []byte) v1.Image {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ocisource.FluxConfigMediaType)
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(tgz, ocisource.FluxContentMediaType)})
	if err != nil {
		t.Fatal(err)
	}
	return mutate.Annotations(img, map[string]string{
		"org.opencontainers.image.source":   "https://github.com/acme/config",
		"org.opencontainers.image.revision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
	}).(v1.Image)
}

// Image is an image of the given layers (each a tar.gz content of mediaType).
func Image(t testing.TB, mediaType types.MediaType, layers ...[]byte) v1.Image {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	for _, l := range layers {
		var err error
		if img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(l, mediaType)}); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// Push pushes img to repo:tag (with opts, such as credentials) and returns its manifest
// digest.
func (r *Registry) Push(t testing.TB, repo, tag string, img v1.Image, opts ...remote.Option) string {
	t.Helper()
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// PushFiles pushes files as a Flux artifact to repo:tag and returns its digest.
func (r *Registry) PushFiles(t testing.TB, repo, tag string, files map[string]string) string {
	t.Helper()
	return r.Push(t, repo, tag, FluxArtifact(t, TarGz(t, files)))
}

// PushLyingSize pushes img to repo:tag with its manifest's first layer claiming size bytes
// (its blobs pushed as they are), and returns the manifest's digest: a client that trusts the
// manifest refuses the layer before fetching it.
func (r *Registry) PushLyingSize(t testing.TB, repo, tag string, img v1.Image, size int64) string {
	t.Helper()
	r.Push(t, repo, tag, img)
	mf, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	mf = mf.DeepCopy()
	mf.Layers[0].Size = size
	raw, err := json.Marshal(mf)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(ref, rawManifest{raw: raw, mediaType: mf.MediaType}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mediaType, nil }
