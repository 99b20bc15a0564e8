package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// `make dist` runs TestPackageDocs to write what the .deb installs beside the binary:
//
//	go test -run '^TestPackageDocs$' ./cmd/trueup -args -package-docs=DIR
//
// DIR/man holds a gzipped man page per command (cobra/doc, from the same command tree as
// docs/reference/cli.md), DIR/completion the bash, zsh and fish completion scripts. They are
// written here rather than by the binary so that cobra/doc stays out of it; without the flag
// the test writes them to a temporary folder and checks them.
var packageDocs = flag.String("package-docs", "", "write the man pages and completion scripts into this folder (make dist)")

// completionFiles are the scripts' file names under DIR/completion, as packaging/nfpm.yaml
// installs them.
var completionFiles = map[string]func(*cobra.Command, io.Writer) error{
	"trueup.bash": func(c *cobra.Command, w io.Writer) error { return c.GenBashCompletionV2(w, true) },
	"_trueup":     (*cobra.Command).GenZshCompletion,
	"trueup.fish": func(c *cobra.Command, w io.Writer) error { return c.GenFishCompletion(w, true) },
}

// writePackageDocs writes DIR/man/*.1.gz and DIR/completion/*. The pages' date is
// SOURCE_DATE_EPOCH's when set (cobra/doc reads it), and gzip records no name or time, so two
// builds of one commit write the same bytes.
func writePackageDocs(root *cobra.Command, dir string) error {
	manDir, compDir := filepath.Join(dir, "man"), filepath.Join(dir, "completion")
	for _, d := range []string{manDir, compDir} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// No "Auto generated" HISTORY section: its date would be the build's.
	var noTag func(*cobra.Command)
	noTag = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, s := range c.Commands() {
			noTag(s)
		}
	}
	noTag(root)
	// No Title: cobra/doc titles each page with its command's path (TRUEUP-SERVE).
	header := &doc.GenManHeader{Section: "1", Source: "trueup " + version, Manual: "trueup manual"}
	err := doc.GenManTreeFromOpts(root, doc.GenManTreeOptions{Header: header, Path: manDir, CommandSeparator: "-"})
	if err != nil {
		return err
	}
	pages, err := filepath.Glob(filepath.Join(manDir, "*.1"))
	if err != nil {
		return err
	}
	for _, p := range pages {
		if err := gzipFile(p); err != nil {
			return err
		}
	}
	for name, gen := range completionFiles {
		var buf bytes.Buffer
		if err := gen(root, &buf); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(compDir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// gzipFile replaces path with path.gz, compressed as `gzip -9n` would (Debian's policy for
// man pages).
func gzipFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(path+".gz", buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Remove(path)
}

func TestPackageDocs(t *testing.T) {
	// Flag defaults that read the environment show what they are without it (as the CLI page).
	t.Setenv("TRUEUP_SERVER", "")
	dir := *packageDocs
	if dir == "" {
		dir = t.TempDir()
	}
	root := newRootCmd()
	if err := writePackageDocs(root, dir); err != nil {
		t.Fatal(err)
	}
	// A page for every command the CLI page lists, completion's among them.
	var want []string
	var walk func(*cobra.Command)
	titles := map[string]string{}
	walk = func(c *cobra.Command) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1.gz"
		want = append(want, name)
		titles[name] = strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-"))
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				walk(s)
			}
		}
	}
	walk(root)
	for _, name := range []string{"trueup.1.gz", "trueup-serve.1.gz", "trueup-completion-bash.1.gz", "trueup-source-pin.1.gz"} {
		if !slices.Contains(want, name) {
			t.Errorf("no command for the page %s", name)
		}
	}
	// Written for a package, the pages carry the release's version, as the binary does.
	if *packageDocs != "" && version == "dev" {
		t.Errorf("the man pages are written for a package with version %q: build the test with "+
			"-ldflags \"-X github.com/trueup-dev/trueup/cmd/trueup.version=…\"", version)
	}
	for _, name := range want {
		page := readGzip(t, filepath.Join(dir, "man", name))
		if !strings.Contains(page, `"trueup `+version+`"`) {
			t.Errorf("%s does not carry version %s:\n%.300s", name, version, page)
		}
		if !strings.HasPrefix(page, `.nh`) || !strings.Contains(page, "\n.TH \""+titles[name]+"\" \"1\"") || !strings.Contains(page, "\n.SH NAME\n") {
			t.Errorf("%s is not a section 1 man page:\n%.300s", name, page)
		}
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "man", "*")); len(got) != len(want) {
		t.Errorf("%d files under man/, want %d pages", len(got), len(want))
	}
	serve := readGzip(t, filepath.Join(dir, "man", "trueup-serve.1.gz"))
	if !strings.Contains(serve, `\fB--config\fP`) {
		t.Errorf("trueup-serve(1) does not name --config:\n%s", serve)
	}
	for name, mark := range map[string]string{"trueup.bash": "__start_trueup", "_trueup": "#compdef trueup", "trueup.fish": "complete -c trueup"} {
		data, err := os.ReadFile(filepath.Join(dir, "completion", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(mark)) {
			t.Errorf("completion/%s lacks %q", name, mark)
		}
	}
}

func readGzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("%s: gzip header records name %q, time %v", path, zr.Name, zr.ModTime)
	}
	return string(data)
}
