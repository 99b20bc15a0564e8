package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/trueup-dev/trueup/internal/config"
)

// `make image` runs this test on what it wrote: go test ./tools/mkimage -args -layout=… -tarball=….
// Without the flags the test builds an image of stand-in binaries in a temporary folder.
var (
	layoutFlag  = flag.String("layout", "", "check this OCI image layout (make image's) instead of building one")
	tarballFlag = flag.String("tarball", "", "check this image tarball too")
)

func TestImage(t *testing.T) {
	t.Parallel()
	dir, tarPath, real := *layoutFlag, *tarballFlag, *layoutFlag != ""
	if !real {
		dir, tarPath = buildFake(t)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("read layout %s: %v", dir, err)
	}
	top, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] == "" {
		t.Fatalf("index.json: want one multi-platform index with a ref name, got %+v", top.Manifests)
	}
	multi, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := multi.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range im.Manifests {
		p := d.Platform.OS + "/" + d.Platform.Architecture
		got = append(got, p)
		img, err := multi.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(p, func(t *testing.T) { checkImage(t, img, d.Platform, real) })
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(got, want) {
		t.Errorf("platforms: got %v, want %v", got, want)
	}
	if tarPath != "" {
		img, err := tarball.ImageFromPath(tarPath, nil)
		if err != nil {
			t.Fatalf("read tarball %s: %v", tarPath, err)
		}
		t.Run("tarball", func(t *testing.T) { checkImage(t, img, &v1.Platform{OS: "linux", Architecture: "amd64"}, real) })
	}
}

// checkImage checks the config (non-root user, entrypoint, env) and the files the layers
// hold; real: the binary must be an ELF executable for the platform.
func checkImage(t *testing.T, img v1.Image, p *v1.Platform, real bool) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config platform %s/%s, index says %s/%s", cf.OS, cf.Architecture, p.OS, p.Architecture)
	}
	c := cf.Config
	uid, _, _ := strings.Cut(c.User, ":")
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("User = %q: the image must run as non-root", c.User)
	}
	if c.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532", c.User)
	}
	if cmd := append(slices.Clone(c.Entrypoint), c.Cmd...); !slices.Equal(cmd, []string{"/trueup", "serve", "--config", "/etc/trueup/trueup.yaml"}) {
		t.Errorf("Entrypoint+Cmd = %q", cmd)
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e, "TRUEUP_DATABASE_URL=") {
			t.Errorf("Env sets %s: the database URL must come from the deployment", e)
		}
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("Env = %q, want SSL_CERT_FILE", c.Env)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("ExposedPorts = %v, want 8080/tcp", c.ExposedPorts)
	}

	files := extract(t, img)
	bin, ok := files["trueup"]
	if !ok {
		t.Fatal("/trueup is not in the layers")
	}
	if bin.hdr.Typeflag != tar.TypeReg || bin.hdr.Mode&0o111 == 0 {
		t.Errorf("/trueup: type %c mode %o, want an executable regular file", bin.hdr.Typeflag, bin.hdr.Mode)
	}
	if real {
		f, err := elf.NewFile(bytes.NewReader(bin.data))
		if err != nil {
			t.Fatalf("/trueup is not an ELF binary: %v", err)
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
		if f.Machine != want {
			t.Errorf("/trueup is built for %v, want %v", f.Machine, want)
		}
		if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
			t.Error("/trueup is dynamically linked; the image has no libc (build with CGO_ENABLED=0)")
		}
	}
	if passwd := string(files["etc/passwd"].data); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user:\n%s", passwd)
	}
	if ca := files["etc/ssl/certs/ca-certificates.crt"].data; !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		t.Error("/etc/ssl/certs/ca-certificates.crt holds no certificate")
	}
	if d := files["var/lib/trueup"]; d == nil || d.hdr.Uid != UID {
		t.Errorf("/var/lib/trueup must exist and belong to %d", UID)
	}

	// The default config takes the database from the environment and refuses to start without it.
	yml, ok := files["etc/trueup/trueup.yaml"]
	if !ok {
		t.Fatal("/etc/trueup/trueup.yaml is not in the layers")
	}
	env := map[string]string{
		"TRUEUP_DATABASE_URL":       "postgres://trueup:pw@db:5432/trueup",
		"TRUEUP_ADMIN_TOKEN_SHA256": strings.Repeat("ab", 32),
	}
	cfg, err := config.Parse(yml.data, "/etc/trueup", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("default config: %v", err)
	}
	if cfg.Database.URL != env["TRUEUP_DATABASE_URL"] {
		t.Errorf("database.url = %q, want TRUEUP_DATABASE_URL's value", cfg.Database.URL)
	}
	if err := config.CheckExposure(cfg.Server.Listen, cfg.Auth); err != nil {
		t.Errorf("serve would refuse the default config: %v", err)
	}
	delete(env, "TRUEUP_DATABASE_URL")
	if _, err := config.Parse(yml.data, "/etc/trueup", func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "TRUEUP_DATABASE_URL") {
		t.Errorf("default config without TRUEUP_DATABASE_URL: got %v, want an error naming it", err)
	}
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

// extract reads the flattened filesystem, keyed by path without leading or trailing slashes.
func extract(t *testing.T, img v1.Image) map[string]*entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]*entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.Trim(h.Name, "/")] = &entry{hdr: h, data: data}
	}
}

// buildFake builds the image, with stand-in binaries, the way `make image` does.
func buildFake(t *testing.T) (layoutDir, tarPath string) {
	dir := t.TempDir()
	for _, arch := range []string{"amd64", "arm64"} {
		p := filepath.Join(dir, "build", "linux_"+arch, "trueup")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not really trueup for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	layoutDir, tarPath = filepath.Join(dir, "image"), filepath.Join(dir, "image.tar")
	err := run([]string{
		"-ca-certificates", ca,
		"-bin-dir", filepath.Join(dir, "build"),
		"-config", "../../packaging/image/trueup.yaml",
		"-version", "v1.2.3-4-gabcdef0+dirty",
		"-created", time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).Format(time.RFC3339),
		"-layout", layoutDir, "-tarball", tarPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	return layoutDir, tarPath
}

// TestBuildReproducible: the same inputs give the same digest.
func TestBuildReproducible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "linux_amd64", "trueup")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := Spec{
		Platforms: []Platform{{OS: "linux", Arch: "amd64", Binary: bin}},
		Config:    []byte("database: {url: x}\n"),
		CACerts:   []byte("certs"),
		Version:   "v1",
	}
	var digests []v1.Hash
	for range 2 {
		idx, _, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds: %s and %s", digests[0], digests[1])
	}
}

func TestTagFor(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"v1.2.3":                  "v1.2.3",
		"7f1618f-dirty":           "7f1618f-dirty",
		"v1.2.3-4-gabcdef0+dirty": "v1.2.3-4-gabcdef0-dirty",
		"":                        "v",
		"-x":                      "v-x",
	} {
		if got := TagFor(in); got != want {
			t.Errorf("TagFor(%q) = %q, want %q", in, got, want)
		}
	}
}
