package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image promises; the test reads them back from the written image.
const (
	UID        = 65532 // distroless's nonroot
	BinaryPath = "/trueup"
	ConfigPath = "/etc/trueup/trueup.yaml"
	DataDir    = "/var/lib/trueup"
	Port       = "8080/tcp"
)

// Entrypoint and Cmd: `docker run IMAGE` serves; `docker run IMAGE version` runs a CLI command.
var (
	Entrypoint = []string{BinaryPath}
	Cmd        = []string{"serve", "--config", ConfigPath}
)

// Platform is one image of the index, with the trueup binary built for it.
type Platform struct {
	OS, Arch string
	Binary   string // path of the static binary
}

// Spec is what Build puts in the image.
type Spec struct {
	Platforms []Platform
	Config    []byte // /etc/trueup/trueup.yaml
	CACerts   []byte // /etc/ssl/certs/ca-certificates.crt
	Version   string
	Revision  string
	Created   time.Time // every file's mtime and the config's created; zero: the Unix epoch
}

// Build returns the multi-platform index and its images, in Spec.Platforms' order.
func Build(s Spec) (v1.ImageIndex, []v1.Image, error) {
	if s.Created.IsZero() {
		s.Created = time.Unix(0, 0)
	}
	s.Created = s.Created.UTC()
	base, err := layer(s.Created, baseFiles(s.CACerts))
	if err != nil {
		return nil, nil, fmt.Errorf("base layer: %w", err)
	}
	conf, err := layer(s.Created, []file{{name: ConfigPath[1:], mode: 0o644, data: s.Config}})
	if err != nil {
		return nil, nil, fmt.Errorf("config layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var imgs []v1.Image
	for _, p := range s.Platforms {
		bin, err := os.ReadFile(p.Binary)
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%s binary: %w", p.OS, p.Arch, err)
		}
		app, err := layer(s.Created, []file{{name: BinaryPath[1:], mode: 0o755, data: bin}})
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%s binary layer: %w", p.OS, p.Arch, err)
		}
		img, err := image(s, p, base, conf, app)
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%s image: %w", p.OS, p.Arch, err)
		}
		imgs = append(imgs, img)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return idx, imgs, nil
}

func image(s Spec, p Platform, layers ...v1.Layer) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Created = v1.Time{Time: s.Created}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, UID),
		Entrypoint: Entrypoint,
		Cmd:        Cmd,
		WorkingDir: DataDir,
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"HOME=" + DataDir,
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
		ExposedPorts: map[string]struct{}{Port: {}},
		Volumes:      map[string]struct{}{DataDir: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "trueup",
			"org.opencontainers.image.description": "GitOps reconciler for infrastructure that does not live on Kubernetes",
			"org.opencontainers.image.version":     s.Version,
			"org.opencontainers.image.revision":    s.Revision,
			"org.opencontainers.image.created":     s.Created.Format(time.RFC3339),
		},
	}
	return mutate.ConfigFile(img, cf)
}

// file is one entry of a layer: a regular file, or a folder when dir is set.
type file struct {
	name string
	mode int64
	uid  int // and gid
	dir  bool
	data []byte
}

// baseFiles is the static base: what gcr.io/distroless/static has that a Go binary uses.
func baseFiles(caCerts []byte) []file {
	const passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	const group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
	return []file{
		{name: "etc", dir: true, mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		// Go's resolver reads it: files before DNS, as glibc's default.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl", dir: true, mode: 0o755},
		{name: "etc/ssl/certs", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caCerts},
		{name: "etc/trueup", dir: true, mode: 0o755},
		{name: "home", dir: true, mode: 0o755},
		{name: "home/nonroot", dir: true, mode: 0o700, uid: UID},
		{name: "root", dir: true, mode: 0o700},
		{name: "tmp", dir: true, mode: 0o1777},
		{name: "var", dir: true, mode: 0o755},
		{name: "var/lib", dir: true, mode: 0o755},
		{name: DataDir[1:], dir: true, mode: 0o700, uid: UID},
	}
}

// layer makes a gzipped OCI layer; the same files and time give the same digest.
func layer(mtime time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX,
			Uid: f.uid, Gid: f.uid, Typeflag: tar.TypeReg, Size: int64(len(f.data)),
		}
		if f.dir {
			h.Typeflag, h.Name, h.Size = tar.TypeDir, f.name+"/", 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.data); err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// tagRe is what a Docker tag may hold; TagFor maps anything else to '-'.
var tagRe = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// TagFor turns a version (git describe) into a valid image tag.
func TagFor(version string) string {
	t := tagRe.ReplaceAllString(version, "-")
	if t == "" || t[0] == '.' || t[0] == '-' {
		t = "v" + t
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}

// WriteLayout replaces dir with an OCI image layout whose index.json names the
// multi-platform index idx as ref (org.opencontainers.image.ref.name), as skopeo and
// `podman load` read it.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write %s: %w", dir, err)
	}
	tag := ref[strings.LastIndex(ref, ":")+1:]
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
	})); err != nil {
		return fmt.Errorf("write %s: %w", dir, err)
	}
	return nil
}

// WriteTarball writes img as a `docker load` tarball tagged ref.
func WriteTarball(file string, img v1.Image, ref string) error {
	tag, err := name.NewTag(ref, name.WithDefaultRegistry(""))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(path.Dir(file), 0o755); err != nil {
		return err
	}
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}
