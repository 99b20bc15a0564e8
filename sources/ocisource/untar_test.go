package ocisource

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/sources"
)

type tarEntry struct {
	name string
	typ  byte
	size int64 // of a regular file; its content is that many 'a's
	link string
}

func tarOf(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Linkname: e.link}
		if e.typ == tar.TypeReg {
			h.Size = e.size
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("a"), int(e.size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Hostile entries are refused one by one: the revision is rejected with the file named, and
// nothing is written anywhere (the artifact is read in memory).
func TestUntarRefusesHostileEntries(t *testing.T) {
	t.Parallel()
	reg := func(name string, size int64) tarEntry { return tarEntry{name: name, typ: tar.TypeReg, size: size} }
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		path    string // of the refused file
		refused string
	}{
		{"dot-dot", []tarEntry{reg("../evil.yaml", 3)}, "../evil.yaml", "unsafe name"},
		{"dot-dot inside", []tarEntry{reg("a/../../evil.yaml", 3)}, "a/../../evil.yaml", "unsafe name"},
		{"absolute", []tarEntry{reg("/etc/evil.yaml", 3)}, "/etc/evil.yaml", "unsafe name"},
		{"symlink", []tarEntry{{name: "db.yaml", typ: tar.TypeSymlink, link: "/etc/passwd"}}, "db.yaml", "links are not followed"},
		{"hardlink", []tarEntry{reg("a.yaml", 3), {name: "db.yaml", typ: tar.TypeLink, link: "a.yaml"}}, "db.yaml", "links are not followed"},
		{"huge file", []tarEntry{reg("db.yaml", sources.MaxFileBytes+1)}, "db.yaml", "larger than the 1 MiB limit"},
		{"twice", []tarEntry{reg("db.yaml", 3), reg("./db.yaml", 4)}, "db.yaml", "twice"},
	} {
		u, err := untar(context.Background(), bytes.NewReader(tarOf(t, tc.entries...)), artifactLimits)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		files, err := u.files("", false)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		found := false
		for _, f := range files {
			if f.Path == tc.path {
				found = true
				if !strings.Contains(f.Refused, tc.refused) || len(f.Data) != 0 {
					t.Errorf("%s: %s refused %q with %d bytes, want %q", tc.name, f.Path, f.Refused, len(f.Data), tc.refused)
				}
			}
		}
		if !found {
			t.Errorf("%s: %s not among %+v", tc.name, tc.path, files)
		}
	}
}

// An unsafe name is reported whatever the path, so that a hostile artifact cannot hide it.
func TestUnsafeNameReportedOutsidePath(t *testing.T) {
	t.Parallel()
	u, err := untar(context.Background(), bytes.NewReader(tarOf(t, tarEntry{name: "deploy/db.yaml", typ: tar.TypeReg, size: 1}, tarEntry{name: "../x.txt", typ: tar.TypeReg, size: 1})), artifactLimits)
	if err != nil {
		t.Fatal(err)
	}
	files, err := u.files("deploy", false)
	if err != nil || len(files) != 2 || files[0].Path != "../x.txt" || files[0].Refused == "" {
		t.Fatalf("files %+v, %v", files, err)
	}
}

func TestUntarCaps(t *testing.T) {
	t.Parallel()
	reg := func(name string, size int64) tarEntry { return tarEntry{name: name, typ: tar.TypeReg, size: size} }
	lim := limits{entries: 3, bytes: 100}
	if _, err := untar(context.Background(), bytes.NewReader(tarOf(t, reg("a", 1), reg("b", 1), reg("c", 1), reg("d", 1))), lim); err == nil || !strings.Contains(err.Error(), "more than 3 entries") {
		t.Errorf("count cap: %v", err)
	}
	// Skipped files count: their bytes are decompressed all the same.
	if _, err := untar(context.Background(), bytes.NewReader(tarOf(t, reg("a.txt", 60), reg("b.txt", 60))), lim); err == nil || !strings.Contains(err.Error(), "files and names exceed 100 bytes") {
		t.Errorf("size cap: %v", err)
	}
	// The stream is capped too, not only the files' data: here a PAX record of a 10 KB name.
	long := strings.Repeat("d/", 5000) + "x.yaml"
	if _, err := untar(context.Background(), bytes.NewReader(tarOf(t, reg(long, 0))), limits{entries: 1, bytes: 1}); err == nil || !strings.Contains(err.Error(), "unpacks to more than") {
		t.Errorf("stream cap: %v", err)
	}
	if _, err := untar(context.Background(), bytes.NewReader([]byte("not a tar at all, but long enough to be read as a header block by the reader: "+strings.Repeat("x", 600))), lim); err == nil {
		t.Error("garbage read as a tar")
	}
}

func TestContentLayerAndDirs(t *testing.T) {
	t.Parallel()
	u, err := untar(context.Background(), bytes.NewReader(tarOf(t, tarEntry{name: "./a/b/c.yaml", typ: tar.TypeReg, size: 1}, tarEntry{name: "empty/", typ: tar.TypeDir})), artifactLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", ".", "a", "a/b", "/a/b/", "empty"} {
		if _, err := u.files(d, false); err != nil {
			t.Errorf("folder %q: %v", d, err)
		}
	}
	if _, err := u.files("a/c", false); err == nil {
		t.Error("a missing folder was found")
	}
}

// hostileDirs is 2,000 folder entries 1,400 levels deep (50 KB compressed): a set of the
// folders above them would hold 2.8 million names.
func hostileDirs(t testing.TB) []byte {
	t.Helper()
	deep := strings.Repeat("d/", 1400)
	entries := make([]tarEntry, 2000)
	for i := range entries {
		entries[i] = tarEntry{name: fmt.Sprintf("%d/%s", i, deep), typ: tar.TypeDir}
	}
	return tarOf(t, entries...)
}

// Deep and long names are refused as unsafe, shortened: what is kept is bounded by the
// entries, not by the depth of their names.
func TestUntarRefusesDeepAndLongNames(t *testing.T) {
	t.Parallel()
	u, err := untar(context.Background(), bytes.NewReader(hostileDirs(t)), artifactLimits)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, e := range u.entries {
		kept += len(e.name)
		if !strings.Contains(e.refused, "longer than 1024 bytes") {
			t.Fatalf("entry %.40q refused %q", e.name, e.refused)
		}
	}
	if len(u.entries) != 2000 || kept > 2000*260 {
		t.Fatalf("%d entries, %d bytes of names kept", len(u.entries), kept)
	}
	if files, err := u.files("deploy", false); err == nil || len(files) != 0 {
		t.Errorf("a folder of the hostile artifact: %d files, %v", len(files), err)
	}

	reg := func(name string) tarEntry { return tarEntry{name: name, typ: tar.TypeReg, size: 1} }
	deepest := strings.Repeat("d/", MaxNameDepth-1) + "x.yaml"
	tooDeep := strings.Repeat("d/", MaxNameDepth) + "x.yaml"
	u, err = untar(context.Background(), bytes.NewReader(tarOf(t, reg(deepest), reg(tooDeep))), artifactLimits)
	if err != nil {
		t.Fatal(err)
	}
	files, err := u.files("", false)
	if err != nil || len(files) != 2 {
		t.Fatalf("files %+v, %v", files, err)
	}
	for _, f := range files {
		if want := f.Path == tooDeep; want != strings.Contains(f.Refused, "deeper than 64 levels") {
			t.Errorf("%s refused %q", f.Path, f.Refused)
		}
	}
}

// The names kept count against the byte cap, and a cancelled context stops the read.
func TestUntarCountsNamesAndChecksContext(t *testing.T) {
	t.Parallel()
	name := func(c string) tarEntry { return tarEntry{name: strings.Repeat(c, 60), typ: tar.TypeReg} }
	if _, err := untar(context.Background(), bytes.NewReader(tarOf(t, name("a"), name("b"))), limits{entries: 10, bytes: 100}); err == nil || !strings.Contains(err.Error(), "files and names exceed 100 bytes") {
		t.Errorf("names cap: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := untar(ctx, bytes.NewReader(hostileDirs(t)), artifactLimits); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// A folder exists by its own entry or by an entry under it, not by a sibling sharing its
// start.
func TestHasDir(t *testing.T) {
	t.Parallel()
	u, err := untar(context.Background(), bytes.NewReader(tarOf(t,
		tarEntry{name: "a-b/x.yaml", typ: tar.TypeReg, size: 1},
		tarEntry{name: "a", typ: tar.TypeReg, size: 1},
		tarEntry{name: "c/d/e.yaml", typ: tar.TypeReg, size: 1},
		tarEntry{name: "f/", typ: tar.TypeDir},
	)), artifactLimits)
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{"": true, "a": false, "a-b": true, "c": true, "c/d": true, "c/d/e.yaml": false, "f": true, "g": false} {
		if got := u.hasDir(dir); got != want {
			t.Errorf("hasDir(%q) = %v, want %v", dir, got, want)
		}
	}
}
