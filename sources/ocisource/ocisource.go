// Package ocisource owns the OCI artifact kind of manifests source (`oci:`; its fields are in
// docs/reference/config.md): the manifests are the files of an artifact in a container
// registry, pushed with `flux push artifact` (Flux's config and content media types) or as
// any image of a single tar.gz layer. The revision is the artifact's manifest digest
// (sha256:…): Head costs one HEAD request of the followed tag (a tag list first for a semver
// range, nothing for a pinned digest), and Fetch of the revision last read is served from
// memory, so that an unchanged artifact is never downloaded twice.
package ocisource

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/plaintext"
	"github.com/trueup-dev/trueup/sources"
)

// Flux's media types of `flux push artifact` (stable since Flux 2.6).
const (
	FluxConfigMediaType  types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	FluxContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// DefaultTimeout bounds one registry call when the host sets none.
const DefaultTimeout = 30 * time.Second

// Source is an OCI artifact source. Its methods may be called from several goroutines.
type Source struct {
	name    string
	spec    Spec
	repo    name.Repository
	puller  *remote.Puller
	all     bool
	timeout time.Duration
	logger  *slog.Logger

	mu   sync.Mutex // serialises downloads; guards last and tree
	last *artifact  // the artifact Fetch read last
	tree *artifact  // the artifact ReadTree read last, when it is not last
}

// artifact is one unpacked revision.
type artifact struct {
	revision string
	files    *unpacked
}

// New builds the source of a validated spec; it reads the docker config file, if any, and
// does no network I/O.
func New(spec *Spec, env sources.Env) (*Source, error) {
	repo, err := spec.repository()
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %w", env.Name, err)
	}
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	auth := authn.Anonymous
	switch {
	case spec.SecretRef != nil:
		if auth, err = authFromFile(spec.SecretRef.File, repo.RegistryStr(), logger.With("source", env.Name)); err != nil {
			return nil, fmt.Errorf("oci source %q: %w", env.Name, err)
		}
	case spec.Username != "":
		auth = &authn.Basic{Username: spec.Username, Password: spec.Password}
	}
	timeout := env.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// One puller for the source's life: its transport (the /v2/ ping, a bearer token) is made
	// once, so that a poll costs the HEAD alone.
	puller, err := remote.NewPuller(remote.WithAuth(auth), remote.WithUserAgent("trueup"),
		remote.WithTransport(&schemeGuard{insecure: spec.Insecure, next: http.DefaultTransport}))
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %w", env.Name, err)
	}
	return &Source{name: env.Name, spec: *spec, repo: repo, puller: puller, all: env.AllFiles, timeout: timeout,
		logger: logger.With("source", env.Name, "repository", repo.String())}, nil
}

// schemeGuard refuses plain HTTP but to a loopback host of an insecure source (validation
// allows insecure for a loopback registry only): go-containerregistry falls back to http by
// itself for private (RFC 1918) and .local hosts, and a token realm or a redirect may name
// another host, any of which would send the credentials in the clear.
type schemeGuard struct {
	insecure bool
	next     http.RoundTripper
}

func (g *schemeGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" && !(g.insecure && plaintext.Loopback(r.URL.Hostname())) {
		return nil, fmt.Errorf("plain http to %s refused (insecure is only for a loopback registry)", r.URL.Host)
	}
	return g.next.RoundTrip(r)
}

// Head returns the manifest digest of the followed artifact: one HEAD request for a tag, the
// tag list and a HEAD for a semver range, no request for a pinned digest.
func (s *Source) Head(ctx context.Context) (string, error) {
	if s.spec.Digest != "" {
		return s.spec.Digest, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	tag := s.spec.Tag
	if s.spec.Semver != "" {
		tags, err := s.puller.List(ctx, s.repo)
		if err != nil {
			return "", s.errorf("list tags", err)
		}
		if tag, err = pickSemver(s.spec.Semver, tags); err != nil {
			return "", fmt.Errorf("oci source %q: %w", s.name, err)
		}
	}
	desc, err := s.puller.Head(ctx, s.repo.Tag(tag))
	if err != nil {
		if statusIs(err, http.StatusNotFound) {
			return "", fmt.Errorf("oci source %q: tag %q not found in %s", s.name, tag, s.spec.URL)
		}
		return "", s.errorf("head tag "+tag, err)
	}
	return desc.Digest.String(), nil
}

// Fetch returns the manifests under the path of the artifact revision (a digest Head
// returned); the revision read last is served from memory.
func (s *Source) Fetch(ctx context.Context, revision string) (*sources.Snapshot, error) {
	a, err := s.artifact(ctx, revision, true)
	if err != nil {
		return nil, err
	}
	files, err := a.files.files(s.spec.Path, s.all)
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %s: %w", s.name, clip.Rev(revision), err)
	}
	return &sources.Snapshot{Revision: a.revision, Files: files}, nil
}

// FetchRevision reads any artifact of the repository by its digest (a pin).
func (s *Source) FetchRevision(ctx context.Context, revision string) (*sources.Snapshot, error) {
	return s.Fetch(ctx, revision)
}

// ReadTree returns the files under dir (relative to the artifact's root) of revision: a
// terraform module shipped in the artifact.
func (s *Source) ReadTree(ctx context.Context, revision, dir string) ([]sources.TreeFile, error) {
	a, err := s.artifact(ctx, revision, false)
	if err != nil {
		return nil, err
	}
	files, err := a.files.tree(dir)
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %s: %w", s.name, clip.Rev(revision), err)
	}
	return files, nil
}

// Close has nothing to release; it drops the artifacts kept in memory.
func (s *Source) Close() error {
	s.mu.Lock()
	s.last, s.tree = nil, nil
	s.mu.Unlock()
	return nil
}

// artifact returns revision unpacked, from memory when Fetch or ReadTree read it last.
// fetch makes it the one Fetch read last; else it is the one ReadTree read last: a working
// copy read of a revision other than the one fetched (the one applied, or any after a
// restart, when an unchanged digest is never fetched) downloads once.
func (s *Source) artifact(ctx context.Context, revision string, fetch bool) (*artifact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range []*artifact{s.last, s.tree} {
		if a != nil && a.revision == revision {
			return a, nil
		}
	}
	if !digestRe.MatchString(revision) {
		return nil, fmt.Errorf("oci source %q: revision %q is not a sha256 digest: %w", s.name, revision, sources.ErrRevisionNotFound)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	files, err := s.download(ctx, revision)
	if err != nil {
		return nil, err
	}
	a := &artifact{revision: revision, files: files}
	if fetch {
		s.last = a
	} else {
		s.tree = a
	}
	return a, nil
}

// download reads the artifact's manifest and unpacks its content layer.
func (s *Source) download(ctx context.Context, revision string) (*unpacked, error) {
	ref := s.repo.Digest(revision)
	desc, err := s.puller.Get(ctx, ref)
	if err != nil {
		if statusIs(err, http.StatusNotFound) {
			return nil, fmt.Errorf("oci source %q: artifact %s not found in %s: %w", s.name, revision, s.spec.URL, sources.ErrRevisionNotFound)
		}
		return nil, s.errorf("get manifest "+clip.Rev(revision), err)
	}
	if !desc.MediaType.IsImage() {
		return nil, fmt.Errorf("oci source %q: %s is a %s, not an artifact (an image manifest)", s.name, clip.Rev(revision), desc.MediaType)
	}
	mf, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, s.errorf("parse manifest "+clip.Rev(revision), err)
	}
	layer, err := contentLayer(mf)
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %s: %w", s.name, clip.Rev(revision), err)
	}
	if layer.Size > MaxLayerBytes || layer.Size < 0 {
		return nil, fmt.Errorf("oci source %q: %s: the content layer is %d bytes, larger than the %d MiB limit", s.name, clip.Rev(revision), layer.Size, MaxLayerBytes>>20)
	}
	s.logger.Info("downloading artifact", "revision", clip.Rev(revision), "bytes", layer.Size,
		"origin_source", clip.Storable(mf.Annotations["org.opencontainers.image.source"], 256),
		"origin_revision", clip.Storable(mf.Annotations["org.opencontainers.image.revision"], 256))
	l, err := s.puller.Layer(ctx, s.repo.Digest(layer.Digest.String()))
	if err != nil {
		return nil, s.errorf("get layer", err)
	}
	rc, err := l.Compressed() // verifies the digest at EOF
	if err != nil {
		return nil, s.errorf("get layer", err)
	}
	defer rc.Close()
	// One byte past the manifest's size: a layer that is longer is refused below; one that is
	// exactly as long reaches the end, where its digest is checked.
	counted := &capReader{r: rc, left: layer.Size + 1}
	body := io.Reader(counted)
	zr, err := gzip.NewReader(body)
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %s: the content layer is not gzip: %w", s.name, clip.Rev(revision), err)
	}
	files, err := untar(ctx, zr, artifactLimits)
	if err != nil && counted.over {
		return nil, fmt.Errorf("oci source %q: %s: the content layer is longer than the %d bytes its manifest says", s.name, clip.Rev(revision), layer.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("oci source %q: %s: %w", s.name, clip.Rev(revision), err)
	}
	// Read to the end, so that the digest is checked.
	if _, err := io.Copy(io.Discard, body); err != nil && !counted.over {
		return nil, s.errorf("read layer", err)
	}
	if counted.read > layer.Size {
		return nil, fmt.Errorf("oci source %q: %s: the content layer is longer than the %d bytes its manifest says", s.name, clip.Rev(revision), layer.Size)
	}
	return files, nil
}

// contentLayer picks the layer to unpack: Flux's content layer, or the only layer when it is
// a tar.gz.
func contentLayer(mf *v1.Manifest) (v1.Descriptor, error) {
	var flux []v1.Descriptor
	for _, l := range mf.Layers {
		if l.MediaType == FluxContentMediaType {
			flux = append(flux, l)
		}
	}
	switch {
	case len(flux) == 1:
		return flux[0], nil
	case len(flux) > 1:
		return v1.Descriptor{}, fmt.Errorf("the artifact has %d Flux content layers; one is read", len(flux))
	case len(mf.Layers) == 1 && isTarGzip(mf.Layers[0].MediaType):
		return mf.Layers[0], nil
	case len(mf.Layers) == 1:
		return v1.Descriptor{}, fmt.Errorf("the artifact's layer is a %s, not a tar.gz", mf.Layers[0].MediaType)
	}
	return v1.Descriptor{}, fmt.Errorf("the artifact has %d layers and no Flux content layer; trueup reads a Flux artifact or a single tar.gz layer", len(mf.Layers))
}

func isTarGzip(mt types.MediaType) bool {
	s := string(mt)
	return strings.HasSuffix(s, "tar+gzip") || strings.HasSuffix(s, "tar.gzip")
}

func statusIs(err error, code int) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == code
}

func (s *Source) errorf(what string, err error) error {
	return fmt.Errorf("oci source %q: %s: %w", s.name, what, err)
}

var (
	_ sources.Source          = (*Source)(nil)
	_ sources.RevisionFetcher = (*Source)(nil)
	_ sources.TreeReader      = (*Source)(nil)
)
