package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// nfpm is the Makefile's NFPM: the test builds a package with the same nfpm.
const nfpm = "github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2"

// debFiles is -deb, repeated: `make dist` runs TestDeb on each package it built.
type debFiles []string

func (d *debFiles) String() string     { return strings.Join(*d, ",") }
func (d *debFiles) Set(s string) error { *d = append(*d, s); return nil }

var debFlag debFiles

// debVersion is -version: the release the packages under -deb are built from, which their man
// pages carry.
var debVersion = flag.String("version", "", "the version the packages under -deb are built from (make dist's)")

func init() {
	flag.Var(&debFlag, "deb", "check this .deb (make dist's) instead of building one from stand-ins; repeatable")
}

// TestDeb reads a package's data archive and checks that it installs the binary, the unit,
// the config, the completion scripts where bash, zsh and fish look for them, and a man page
// per command. Without -deb the test builds a package with nfpm and packaging/nfpm.yaml from
// stand-in files (what the Makefile would have built), so the description itself is tested.
func TestDeb(t *testing.T) {
	t.Parallel()
	debs, real := []string(debFlag), len(debFlag) > 0
	if !real {
		debs = []string{buildStandInDeb(t)}
	}
	for _, deb := range debs {
		t.Run(filepath.Base(deb), func(t *testing.T) {
			files, err := debData(deb)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{
				"/usr/bin/trueup", "/etc/trueup/trueup.yaml", "/usr/lib/systemd/system/trueup.service",
				"/usr/share/bash-completion/completions/trueup", "/usr/share/zsh/vendor-completions/_trueup",
				"/usr/share/fish/vendor_completions.d/trueup.fish",
				"/usr/share/man/man1/trueup.1.gz", "/usr/share/man/man1/trueup-serve.1.gz",
				"/usr/share/man/man1/trueup-completion-bash.1.gz",
			} {
				f, ok := files[p]
				if !ok {
					t.Errorf("%s is not in the package", p)
					continue
				}
				if want := int64(0o644); p != "/usr/bin/trueup" && f.mode != want {
					t.Errorf("%s has mode %o, want %o", p, f.mode, want)
				}
			}
			if !real {
				return
			}
			for p, mark := range map[string]string{
				"/usr/share/bash-completion/completions/trueup":    "__start_trueup",
				"/usr/share/zsh/vendor-completions/_trueup":        "#compdef trueup",
				"/usr/share/fish/vendor_completions.d/trueup.fish": "complete -c trueup",
			} {
				if !bytes.Contains(files[p].data, []byte(mark)) {
					t.Errorf("%s lacks %q", p, mark)
				}
			}
			pages := 0
			for p, f := range files {
				if !strings.HasPrefix(p, "/usr/share/man/man1/") {
					continue
				}
				pages++
				zr, err := gzip.NewReader(bytes.NewReader(f.data))
				if err != nil {
					t.Errorf("%s: %v", p, err)
					continue
				}
				page, err := io.ReadAll(zr)
				if err != nil || !regexp.MustCompile(`\n\.TH "TRUEUP[^"]*" "1"`).Match(page) {
					t.Errorf("%s is not a section 1 man page (%v)", p, err)
				}
				if th := thLine(page); *debVersion != "" && !strings.Contains(th, `"trueup `+*debVersion+`"`) {
					t.Errorf("%s: %s, want the source \"trueup %s\"", p, th, *debVersion)
				}
			}
			if pages < 20 {
				t.Errorf("%d man pages, want one per command", pages)
			}
		})
	}
}

type debFile struct {
	mode int64
	data []byte
}

// debData returns the regular files of a .deb's data archive by absolute path. A .deb is an
// ar archive: debian-binary, control.tar.*, data.tar.* (nfpm writes gzip).
func debData(path string) (map[string]debFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	members, err := arMembers(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	data, ok := members["data.tar.gz"]
	if !ok {
		return nil, fmt.Errorf("%s: no data.tar.gz member", path)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	files := map[string]debFile{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files["/"+strings.TrimPrefix(h.Name, "./")] = debFile{mode: h.Mode & 0o7777, data: b}
	}
}

// arMembers splits a common ar archive (the .deb's outer format) into its members.
func arMembers(raw []byte) (map[string][]byte, error) {
	const magic = "!<arch>\n"
	if !bytes.HasPrefix(raw, []byte(magic)) {
		return nil, errors.New("not an ar archive")
	}
	members := map[string][]byte{}
	for rest := raw[len(magic):]; len(rest) > 0; {
		if len(rest) < 60 {
			return nil, errors.New("truncated ar header")
		}
		name := strings.TrimSuffix(strings.TrimSpace(string(rest[:16])), "/")
		size, err := strconv.ParseInt(strings.TrimSpace(string(rest[48:58])), 10, 64)
		if err != nil || size < 0 || int64(len(rest)-60) < size {
			return nil, fmt.Errorf("ar member %q: bad size", name)
		}
		members[name] = rest[60 : 60+size]
		rest = rest[60+size:]
		if size%2 == 1 && len(rest) > 0 {
			rest = rest[1:] // members are 2-byte aligned
		}
	}
	return members, nil
}

// buildStandInDeb runs nfpm on packaging/nfpm.yaml in a copy of the files it names, with
// stand-ins for what the Makefile builds (the binary, the man pages, the completion scripts).
func buildStandInDeb(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, name := range []string{"nfpm.yaml", "trueup.yaml", "trueup.service", "deb/postinst", "deb/prerm", "deb/postrm"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "packaging", name), data, fi.Mode().Perm())
	}
	build := filepath.Join(root, "dist", "build", "deb")
	writeFile(t, filepath.Join(build, "trueup"), []byte("#!/bin/sh\n"), 0o755)
	for _, name := range []string{"trueup.bash", "_trueup", "trueup.fish"} {
		writeFile(t, filepath.Join(build, "completion", name), []byte("# "+name+"\n"), 0o644)
	}
	for _, name := range []string{"trueup.1.gz", "trueup-serve.1.gz", "trueup-completion-bash.1.gz"} {
		writeFile(t, filepath.Join(build, "man", name), []byte("stand-in"), 0o644)
	}
	out := filepath.Join(root, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "run", nfpm, "package", "--config", "packaging/nfpm.yaml",
		"--packager", "deb", "--target", out+"/")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DEB_ARCH=amd64", "PKG_VERSION=0.0.0~test", "SOURCE_DATE_EPOCH=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nfpm: %v\n%s", err, b)
	}
	debs, err := filepath.Glob(filepath.Join(out, "*.deb"))
	if err != nil || len(debs) != 1 {
		t.Fatalf("nfpm wrote %v (%v), want one .deb", debs, err)
	}
	return debs[0]
}

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// thLine is a man page's .TH line (its title, section, date and source).
func thLine(page []byte) string {
	for line := range strings.Lines(string(page)) {
		if strings.HasPrefix(line, ".TH ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
