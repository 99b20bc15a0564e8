package dirsource

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
)

const resourceDoc = "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\n"

// loadErrors fetches the source's head and loads it, returning the problems as one string.
func (f *fixture) loadErrors() string {
	f.t.Helper()
	snap, err := f.src.Fetch(f.ctx, f.head())
	if err != nil {
		f.t.Fatalf("Fetch: %v", err)
	}
	_, err = manifest.NewLoader().Load(snap.Files, manifest.Options{})
	if err == nil {
		f.t.Fatal("Load accepted the revision")
	}
	return err.Error()
}

func TestHugeFileRefusedUnread(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	f := setup(t, 0, map[string]string{"a.yaml": resourceDoc})
	big := filepath.Join(f.dir, "big.yaml")
	if err := os.WriteFile(big, []byte("a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 300<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	msg := f.loadErrors()
	runtime.ReadMemStats(&after)
	if want := "big.yaml: file is 300.0 MiB, larger than the 1 MiB limit"; !strings.Contains(msg, want) {
		t.Errorf("errors %q, want %q", msg, want)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("300 MiB file: %d KiB allocated", alloc>>10)
	if alloc > 50<<20 {
		t.Errorf("allocated %d MiB, want under 50 MiB", alloc>>20)
	}
}

func TestSymlinksOutsideRootRefused(t *testing.T) {
	t.Parallel()
	const secret = "TOP-SECRET-LINE: [unclosed"
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "passwd"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "elsewhere.yaml"), []byte(resourceDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	f := setup(t, 0, map[string]string{"a.yaml": resourceDoc, "sub/inner.yaml": strings.Replace(resourceDoc, "name: a", "name: b", 1)})
	for link, target := range map[string]string{
		"leak.yaml":   filepath.Join(outside, "passwd"),
		"other.yaml":  filepath.Join(outside, "elsewhere.yaml"),
		"outdir":      outside,
		"inside.yaml": filepath.Join(f.dir, "sub", "inner.yaml"), // followed
		"insidedir":   filepath.Join(f.dir, "sub"),               // not followed
	} {
		if err := os.Symlink(target, filepath.Join(f.dir, link)); err != nil {
			t.Fatal(err)
		}
	}

	snap, err := f.src.Fetch(f.ctx, f.head())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	var paths []string
	for _, file := range snap.Files {
		paths = append(paths, file.Path)
		if strings.Contains(string(file.Data), "TOP-SECRET") {
			t.Errorf("%s: the link's target was read", file.Path)
		}
	}
	if want := "a.yaml inside.yaml leak.yaml other.yaml outdir sub/inner.yaml"; strings.Join(paths, " ") != want {
		t.Errorf("files = %q, want %q", paths, want)
	}
	_, err = manifest.NewLoader().Load(snap.Files, manifest.Options{})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{
		"leak.yaml: symlink leads outside the source folder",
		"other.yaml: symlink leads outside the source folder",
		"outdir: symlink leads outside the source folder",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors %q, want %q", msg, want)
		}
	}
	if strings.Contains(msg, "TOP-SECRET") {
		t.Errorf("errors quote the link's target: %q", msg)
	}
}
