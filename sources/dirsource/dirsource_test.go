package dirsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

type fixture struct {
	t   *testing.T
	dir string
	src *Source
	ctx context.Context
}

// setup creates a folder with files and a source on it; debounce 0 means the default.
func setup(t *testing.T, debounce time.Duration, files map[string]string) *fixture {
	t.Helper()
	return setupWith(t, Config{Debounce: debounce}, files)
}

// setupWith is setup with a config whose Name and Path it fills.
func setupWith(t *testing.T, cfg Config, files map[string]string) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir()}
	f.write(files)
	cfg.Name, cfg.Path = "test", f.dir
	src, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	f.src, f.ctx = src, ctx
	return f
}

func (f *fixture) write(files map[string]string) {
	f.t.Helper()
	for name, data := range files {
		p := filepath.Join(f.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) head() string {
	f.t.Helper()
	rev, err := f.src.Head(f.ctx)
	if err != nil {
		f.t.Fatalf("Head: %v", err)
	}
	return rev
}

func (f *fixture) start() {
	f.t.Helper()
	if err := f.src.Start(f.ctx); err != nil {
		f.t.Fatalf("Start: %v", err)
	}
}

// waitChange waits for a notification and fails after the timeout.
func (f *fixture) waitChange(timeout time.Duration) {
	f.t.Helper()
	select {
	case <-f.src.Changes():
	case <-time.After(timeout):
		f.t.Fatalf("no change notification within %v", timeout)
	}
}

// noChange asserts that no notification arrives within d.
func (f *fixture) noChange(d time.Duration) {
	f.t.Helper()
	select {
	case <-f.src.Changes():
		f.t.Fatal("unexpected change notification")
	case <-time.After(d):
	}
}

func TestHeadAndFetch(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{
		"a.yaml":             "kind: A\n",
		"sub/b.yml":          "kind: B\n",
		"sub/deep/c.json":    `{"kind":"C"}`,
		"a.yaml~":            "backup",
		".a.yaml.swp":        "swap",
		".#a.yaml":           "emacs lock",
		"notes.md":           "text",
		".git/config.yaml":   "hidden",
		"sub/.cache/x.yaml":  "hidden",
		"sub/x.yaml.tmp":     "temp",
		"sub.yaml/inner.txt": "a folder named like a manifest",
	})
	if err := os.Symlink("a.yaml", filepath.Join(f.dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(f.dir, "linked-dir")); err != nil {
		t.Fatal(err)
	}

	rev := f.head()
	if !strings.HasPrefix(rev, "sha256:") || len(rev) != len("sha256:")+64 {
		t.Errorf("Head = %q, want sha256:<hex>", rev)
	}
	if again := f.head(); again != rev {
		t.Errorf("Head changed without a change: %s then %s", rev, again)
	}
	snap, err := f.src.Fetch(f.ctx, rev)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if snap.Revision != rev {
		t.Errorf("Fetch revision %s, Head %s", snap.Revision, rev)
	}
	var names []string
	for _, file := range snap.Files {
		names = append(names, file.Path)
	}
	want := []string{"a.yaml", "link.yaml", "sub/b.yml", "sub/deep/c.json"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("files = %q, want %q", names, want)
	}
	if string(snap.Files[0].Data) != "kind: A\n" || snap.Files[0].Hash != snap.Files[1].Hash {
		t.Errorf("a.yaml and its link: %+v, %+v", snap.Files[0], snap.Files[1])
	}

	// Non-manifest and hidden files do not move the head; manifests do.
	f.write(map[string]string{"notes.md": "more", ".git/config.yaml": "x", "a.yaml~": "y"})
	if got := f.head(); got != rev {
		t.Errorf("Head moved on a non-manifest change")
	}
	f.write(map[string]string{"sub/b.yml": "kind: B2\n"})
	changed := f.head()
	if changed == rev {
		t.Fatal("Head did not change with content")
	}
	// A rename changes the head even with equal contents.
	if err := os.Rename(filepath.Join(f.dir, "sub/b.yml"), filepath.Join(f.dir, "sub/b2.yml")); err != nil {
		t.Fatal(err)
	}
	if renamed := f.head(); renamed == changed {
		t.Error("Head did not change with a rename")
	}
}

// The stat cache must not hide a same-size rewrite that keeps the modification time.
func TestHeadSeesRewriteWithSameStat(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{"a.yaml": "v: 1\n"})
	p := filepath.Join(f.dir, "a.yaml")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	rev1 := f.head()
	rev1again := f.head() // now trusted from the cache
	f.write(map[string]string{"a.yaml": "v: 2\n"})
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	// Same size and mtime: undetectable by stat alone, as in git. Fetch reads anyway.
	snap, err := f.src.Fetch(f.ctx, rev1)
	if err != nil {
		t.Fatal(err)
	}
	if rev1 != rev1again || snap.Revision == rev1 || string(snap.Files[0].Data) != "v: 2\n" {
		t.Errorf("Fetch revision %s data %q after rewrite; head was %s", snap.Revision, snap.Files[0].Data, rev1)
	}
	// The recently modified file is re-read by Head.
	f.write(map[string]string{"a.yaml": "v: 3\n"})
	if rev3 := f.head(); rev3 == snap.Revision || rev3 == rev1 {
		t.Error("Head did not see a fresh write")
	}
}

func TestChangesDebounced(t *testing.T) {
	t.Parallel()
	const debounce = 150 * time.Millisecond
	f := setup(t, debounce, map[string]string{"a.yaml": "v: 0\n"})
	f.start()
	before := f.head()

	start := time.Now()
	for i := range 20 {
		f.write(map[string]string{"a.yaml": fmt.Sprintf("v: %d\n", i+1), "b/c.yaml": fmt.Sprintf("c: %d\n", i)})
	}
	f.waitChange(5 * time.Second)
	if elapsed := time.Since(start); elapsed < debounce {
		t.Errorf("notified after %v, before the debounce period %v", elapsed, debounce)
	}
	// One burst, one notification.
	f.noChange(3 * debounce)
	if after := f.head(); after == before {
		t.Error("Head did not change after the burst")
	}
}

func TestTempFilesIgnored(t *testing.T) {
	t.Parallel()
	f := setup(t, 50*time.Millisecond, map[string]string{"a.yaml": "v: 0\n", "sub/b.yaml": "b: 0\n"})
	f.start()
	before := f.head()
	f.write(map[string]string{
		".a.yaml.swp":        "vim swap",
		".a.yaml.swx":        "vim swap",
		"4913":               "vim write test",
		"a.yaml~":            "backup",
		"sub/.#b.yaml":       "emacs lock",
		"sub/b.yaml.tmp":     "partial write",
		"notes.txt":          "not a manifest",
		".hidden/x.yaml":     "hidden folder",
		"a.yaml___jb_tmp___": "jetbrains",
	})
	if err := os.Chmod(filepath.Join(f.dir, "a.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.noChange(500 * time.Millisecond)
	if after := f.head(); after != before {
		t.Error("Head changed on ignored files")
	}

	// An editor's atomic save: write a temp file, rename it over the manifest.
	tmp := filepath.Join(f.dir, "sub", ".b.yaml.tmp")
	if err := os.WriteFile(tmp, []byte("b: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, "sub", "b.yaml")); err != nil {
		t.Fatal(err)
	}
	f.waitChange(5 * time.Second)
}

func TestNewSubdirectoryWatched(t *testing.T) {
	t.Parallel()
	f := setup(t, 50*time.Millisecond, map[string]string{"a.yaml": "v: 0\n"})
	f.start()

	// A new folder tree, with a manifest written before its watch could exist.
	f.write(map[string]string{"new/deeper/x.yaml": "x: 1\n"})
	f.waitChange(5 * time.Second)

	// Later writes inside the new folders are seen.
	f.write(map[string]string{"new/deeper/y.yaml": "y: 1\n"})
	f.waitChange(5 * time.Second)

	// So is the removal of a folder holding manifests.
	if err := os.RemoveAll(filepath.Join(f.dir, "new")); err != nil {
		t.Fatal(err)
	}
	f.waitChange(5 * time.Second)

	// A folder moved in from outside.
	outside := filepath.Join(t.TempDir(), "moved")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "m.yaml"), []byte("m: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(outside, filepath.Join(f.dir, "moved")); err != nil {
		t.Fatal(err)
	}
	f.waitChange(5 * time.Second)
	f.write(map[string]string{"moved/n.yaml": "n: 1\n"})
	f.waitChange(5 * time.Second)

	// An empty folder is no change.
	if err := os.Mkdir(filepath.Join(f.dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.noChange(300 * time.Millisecond)
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	t.Run("close without start, twice", func(t *testing.T) {
		t.Parallel()
		src, err := New(Config{Path: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := src.Start(context.Background()); err == nil {
			t.Error("Start after Close succeeded")
		}
	})
	t.Run("start twice, close twice", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 0, nil)
		f.start()
		if err := f.src.Start(f.ctx); err == nil {
			t.Error("second Start succeeded")
		}
		for range 2 {
			if err := f.src.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("context ends the watcher", func(t *testing.T) {
		t.Parallel()
		f := setup(t, 0, nil)
		ctx, cancel := context.WithCancel(f.ctx)
		if err := f.src.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case <-f.src.done:
		case <-time.After(5 * time.Second):
			t.Fatal("watcher goroutine still running after its context ended")
		}
	})
	t.Run("canceled scan", func(t *testing.T) {
		t.Parallel()
		files := map[string]string{}
		for i := range 600 {
			files[fmt.Sprintf("f%03d.yaml", i)] = "x: 1\n"
		}
		f := setup(t, 0, files)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := f.src.Fetch(ctx, ""); !errors.Is(err, context.Canceled) {
			t.Errorf("Fetch error = %v, want context.Canceled", err)
		}
	})
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{
		{},
		{Path: filepath.Join(t.TempDir(), "missing")},
		{Path: file},
		{Path: t.TempDir(), Debounce: -time.Second},
	} {
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	src, err := New(Config{Path: t.TempDir()}, nil)
	if err != nil || src.cfg.Debounce != DefaultDebounce {
		t.Errorf("New = %v, debounce %v", err, src.cfg.Debounce)
	}
}

func TestRemovedRootFailsHead(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{"a.yaml": "a: 1\n"})
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	if _, err := f.src.Head(f.ctx); err == nil {
		t.Error("Head succeeded on a removed folder")
	}
	var _ sources.Notifier = f.src
}

// With AllFiles (a source that renders), every regular file is read, and a change to any
// of them is a change.
func TestAllFiles(t *testing.T) {
	t.Parallel()
	f := setupWith(t, Config{AllFiles: true, Debounce: 10 * time.Millisecond}, map[string]string{
		"kustomization.yaml": "resources: [a.yaml]\n",
		"a.yaml":             "kind: A\n",
		"sub/app.env":        "A=1\n",
		"a.yaml~":            "backup",
		".hidden/x.env":      "hidden",
	})
	snap, err := f.src.Fetch(f.ctx, f.head())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, file := range snap.Files {
		got = append(got, file.Path)
	}
	if want := []string{"a.yaml", "kustomization.yaml", "sub/app.env"}; !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
	f.start()
	f.write(map[string]string{"sub/app.env": "A=2\n"})
	f.waitChange(10 * time.Second)
}

// With AllFiles, a folder over the snapshot limits (files, bytes) is an error that names
// the file that went over.
func TestAllFilesLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limits sources.SnapshotLimits
		want   string
	}{
		{sources.SnapshotLimits{Files: 2}, "c.txt: more than 2 files under the path"},
		{sources.SnapshotLimits{Bytes: 50}, "c.txt: more than 50 bytes under the path"},
	} {
		f := setupWith(t, Config{AllFiles: true, Debounce: 10 * time.Millisecond}, map[string]string{
			"a.yaml": "kind: A\n",
			"b.env":  "B=1\n",
			"c.txt":  strings.Repeat("c", 100),
		})
		f.src.limits = tc.limits
		_, err := f.src.Fetch(f.ctx, "")
		if !errors.Is(err, sources.ErrTreeRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fetch with %+v: %v, want %s", tc.limits, err, tc.want)
		}
	}
}

// ageFiles sets the files' modification times an hour back, out of the racy window.
func (f *fixture) ageFiles(names ...string) {
	f.t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, name := range names {
		if err := os.Chtimes(filepath.Join(f.dir, name), old, old); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) fetch() map[string]sources.File {
	f.t.Helper()
	snap, err := f.src.Fetch(f.ctx, "")
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]sources.File{}
	for _, file := range snap.Files {
		out[file.Path] = file
	}
	return out
}

// Fetch hashes only the files whose stat data moved: the others keep the hash they were
// read under (the racy window is made negative so that files just written count).
func TestFetchHashesOnlyChangedFiles(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{"a.yaml": "v: 1\n", "b.yaml": "v: 2\n"})
	f.src.racy = -time.Second // files just written count, at the clock file's timestamp too
	f.ageFiles("a.yaml", "b.yaml")
	first := f.fetch()
	hashedAt := f.src.stats["a.yaml"].hashedAt

	f.write(map[string]string{"b.yaml": "v: 22\n"})
	second := f.fetch()
	if f.src.stats["a.yaml"].hashedAt != hashedAt {
		t.Error("an unchanged file was hashed again")
	}
	if second["a.yaml"].Hash != first["a.yaml"].Hash || string(second["a.yaml"].Data) != "v: 1\n" {
		t.Errorf("unchanged file fetched as %+v", second["a.yaml"])
	}
	if second["b.yaml"].Hash == first["b.yaml"].Hash || string(second["b.yaml"].Data) != "v: 22\n" {
		t.Errorf("changed file fetched as %+v", second["b.yaml"])
	}

	// A file moved keeps its content's hash under its new path; one removed is gone.
	if err := os.Rename(filepath.Join(f.dir, "a.yaml"), filepath.Join(f.dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	third := f.fetch()
	if _, ok := third["a.yaml"]; ok || len(third) != 1 || third["c.yaml"].Hash != first["a.yaml"].Hash {
		t.Errorf("after a move and a removal: %+v", third)
	}
}

// A same-size rewrite that sets the modification time back (cp -p, tar) moves the change
// time: Fetch hashes the file again, however long ago it was modified.
func TestFetchSeesRewriteWithOldModTime(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{"a.yaml": "v: 1\n"})
	f.src.racy = -time.Second // files just written count, at the clock file's timestamp too
	f.ageFiles("a.yaml")
	f.fetch()
	before := f.src.stats["a.yaml"]
	// The change time has the file system's clock granularity: write until it moves.
	deadline := time.Now().Add(10 * time.Second)
	for v := 2; ; v++ {
		f.write(map[string]string{"a.yaml": fmt.Sprintf("v: %d\n", v%10)})
		f.ageFiles("a.yaml")
		fi, err := os.Stat(filepath.Join(f.dir, "a.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if ctime, _, _, ok := changeStat(fi); !ok || !ctime.Equal(before.ctime) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the change time did not move")
		}
	}
	got := f.fetch()["a.yaml"]
	want, _ := os.ReadFile(filepath.Join(f.dir, "a.yaml"))
	if string(got.Data) != string(want) || got.Hash == before.hash {
		t.Errorf("after a same-size rewrite: %q hash %s, want %q and a new hash", got.Data, got.Hash, want)
	}
}

// A file modified within the racy window of its hashing is hashed again by every scan.
func TestStatEntryRacy(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{"a.yaml": "v: 1\n"})
	fi, err := os.Stat(filepath.Join(f.dir, "a.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fresh := newStatEntry(fi, time.Now(), "h")
	for _, c := range []struct {
		name   string
		e      statEntry
		strict bool
		want   bool
	}{
		{"hashed just after the write", fresh, false, false},
		{"hashed just after the write, strict", fresh, true, false},
		{"hashed long after", newStatEntry(fi, time.Now().Add(time.Hour), "h"), true, true},
		{"other size", func() statEntry { e := newStatEntry(fi, time.Now().Add(time.Hour), "h"); e.size++; return e }(), false, false},
		{"other inode", func() statEntry { e := newStatEntry(fi, time.Now().Add(time.Hour), "h"); e.ino++; return e }(), true, false},
		{"no change time, strict", func() statEntry {
			e := newStatEntry(fi, time.Now().Add(time.Hour), "h")
			e.ctime = time.Time{}
			return e
		}(), true, false},
		{"no change time", func() statEntry {
			e := newStatEntry(fi, time.Now().Add(time.Hour), "h")
			e.ctime = time.Time{}
			return e
		}(), false, true},
	} {
		if got := c.e.matches(fi, c.strict, racyWindow); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
}

// The racy window is measured by the file system's clock, not the process's: with a file
// system whose clock is behind (a network file system's server), a file just written is
// still within the window, and the next Fetch hashes it again.
func TestRacyWindowByFileSystemClock(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{"a.yaml": "v: 1\n"})
	f.src.now = func() time.Time { return time.Now().Add(time.Hour) } // the file system an hour behind
	f.write(map[string]string{"a.yaml": "v: 2\n"})
	f.fetch()
	fi, err := os.Stat(filepath.Join(f.dir, "a.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if e := f.src.stats["a.yaml"]; e.matches(fi, true, racyWindow) {
		t.Errorf("a file just written is trusted: hashed at %v, modified at %v", e.hashedAt, e.modTime)
	}
	// The clock file is neither left behind nor fetched.
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".trueup-clock-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// Every fullScanEvery scans hash every file: a change the stat rule missed (here, a cached
// hash made wrong) lasts that many scans at most.
func TestFullScanEvery(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{"a.yaml": "v: 1\n"})
	f.src.racy = -time.Second // files just written count, at the clock file's timestamp too
	f.ageFiles("a.yaml")
	want := f.fetch()["a.yaml"].Hash
	e := f.src.stats["a.yaml"]
	e.hash = "missed"
	f.src.stats["a.yaml"] = e
	for i := 0; ; i++ {
		if got := f.fetch()["a.yaml"].Hash; got == want {
			break
		}
		if i == fullScanEvery {
			t.Fatalf("%d fetches kept the missed hash", i+1)
		}
	}
}

// A clock probe left behind by a process that ended between writing and removing it is
// removed when the source starts.
func TestStartRemovesLeftClockProbe(t *testing.T) {
	t.Parallel()
	f := setup(t, 50*time.Millisecond, map[string]string{"a.yaml": "v: 0\n"})
	left := filepath.Join(f.dir, sources.ClockProbePrefix+"123")
	if err := os.WriteFile(left, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.start()
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a left clock probe after Start: %v", err)
	}
}

// FetchPartial leaves unread the files unchanged by the stat rule whose content the caller
// holds; a changed file, one whose content the caller does not hold and a file just written
// (in the racy window) are read, and the revision is Fetch's.
func TestFetchPartialReadsOnlyWhatTheCallerLacks(t *testing.T) {
	t.Parallel()
	f := setup(t, 0, map[string]string{"a.yaml": "v: 1\n", "b.yaml": "v: 2\n", "c.yaml": "v: 3\n"})
	f.src.racy = -time.Second // files just written count, at the clock file's timestamp too
	f.ageFiles("a.yaml", "b.yaml", "c.yaml")
	first := f.fetch()
	f.write(map[string]string{"b.yaml": "v: 22\n"})
	held := func(path, hash string) bool { return path != "c.yaml" && hash == first[path].Hash }
	snap, err := f.src.FetchPartial(f.ctx, "", held)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sources.File{}
	for _, file := range snap.Files {
		got[file.Path] = file
	}
	if a := got["a.yaml"]; !a.Unread || a.Data != nil || a.Hash != first["a.yaml"].Hash {
		t.Errorf("an unchanged file the caller holds: %+v, want it unread with its hash", a)
	}
	if b := got["b.yaml"]; b.Unread || string(b.Data) != "v: 22\n" {
		t.Errorf("a changed file: %+v, want it read", b)
	}
	if c := got["c.yaml"]; c.Unread || string(c.Data) != "v: 3\n" {
		t.Errorf("an unchanged file the caller lacks: %+v, want it read", c)
	}
	full, err := f.src.Fetch(f.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != full.Revision || snap.Revision != f.head() {
		t.Errorf("revision %s, Fetch's %s, Head's %s: want one", snap.Revision, full.Revision, f.head())
	}

	// In the racy window the stat data proves nothing: the file is read.
	f.src.racy = time.Hour
	snap, err = f.src.FetchPartial(f.ctx, "", func(string, string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range snap.Files {
		if file.Unread {
			t.Errorf("%s unread within the racy window", file.Path)
		}
	}
}
