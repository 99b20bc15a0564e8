package gitsource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/sources"
)

func fileNames(snap *sources.Snapshot) []string {
	var names []string
	for _, f := range snap.Files {
		names = append(names, f.Path)
	}
	return names
}

func TestHead(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	first := r.commit(map[string]string{"a.yaml": "a: 1\n"})
	r.git("tag", "light")
	r.git("tag", "-a", "-m", "annotated", "v1.0.0")
	r.git("checkout", "-q", "-b", "feature")
	feature := r.commit(map[string]string{"a.yaml": "a: 2\n"})
	r.git("checkout", "-q", "main")
	main := r.commit(map[string]string{"b.yaml": "b: 1\n"})

	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"default branch is main", Config{}, main},
		{"branch", Config{Branch: "feature"}, feature},
		{"lightweight tag", Config{Tag: "light"}, first},
		{"annotated tag is peeled", Config{Tag: "v1.0.0"}, first},
		// The URL does not exist: a configured commit needs no network.
		{"commit", Config{Commit: strings.ToUpper(first), URL: "/nonexistent/repo"}, first},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			if cfg.URL == "" {
				cfg.URL = r.dir
			}
			s := newSource(t, cfg)
			got, err := s.Head(testContext(t))
			if err != nil {
				t.Fatalf("Head: %v", err)
			}
			if got != tt.want {
				t.Errorf("Head = %s, want %s", got, tt.want)
			}
			if n := s.Fetches(); n != 0 {
				t.Errorf("Head made %d fetches, want 0", n)
			}
		})
	}
}

func TestFetchReadsManifestsUnderPath(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.commit(map[string]string{
		"manifests/a.yaml":          "kind: A\n",
		"manifests/c.JSON":          `{"kind":"C"}`,
		"manifests/sub/b.yml":       "kind: B\n",
		"manifests/sub/deep/d.yaml": "kind: D\n",
		"manifests/README.md":       "# not a manifest\n",
		"manifests/.hidden/x.yaml":  "kind: Hidden\n",
		"manifests/.dot.yaml":       "kind: Dot\n",
		"manifests-other/e.yaml":    "kind: E\n",
		"root.yaml":                 "kind: Root\n",
	})
	if err := os.Symlink("a.yaml", filepath.Join(r.dir, "manifests", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	rev := r.commit(nil)

	s := newSource(t, Config{URL: r.dir, Path: "./manifests/"})
	ctx := testContext(t)
	head, err := s.Head(ctx)
	if err != nil || head != rev {
		t.Fatalf("Head = %s, %v; want %s", head, err, rev)
	}
	snap, err := s.Fetch(ctx, head)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if snap.Revision != rev {
		t.Errorf("Revision = %s, want %s", snap.Revision, rev)
	}
	want := []string{"manifests/a.yaml", "manifests/c.JSON", "manifests/sub/b.yml", "manifests/sub/deep/d.yaml"}
	if got := fileNames(snap); !reflect.DeepEqual(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
	for _, f := range snap.Files {
		if h := r.blob(rev, f.Path); f.Hash != h {
			t.Errorf("%s: hash %s, want blob %s", f.Path, f.Hash, h)
		}
		data, err := os.ReadFile(filepath.Join(r.dir, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if string(f.Data) != string(data) {
			t.Errorf("%s: data %q, want %q", f.Path, f.Data, data)
		}
	}
}

func TestFetchWholeRepository(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.commit(map[string]string{
		"a.yaml":                      "kind: A\n",
		"x/b.yaml":                    "kind: B\n",
		".github/workflows/ci.yml":    "on: push\n",
		".gitlab-ci.yml":              "stages: []\n",
		"x/.editor/settings.json":     "{}",
		"notes.txt":                   "text",
		"x/y/z/duplicate-of-a.yaml":   "kind: A\n",
		"x/y/z/not-a-manifest.yaml~":  "kind: A\n",
		"x/y/z/not-a-manifest.yaml.1": "kind: A\n",
	})
	s := newSource(t, Config{URL: r.dir})
	snap, err := s.Fetch(testContext(t), "")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	want := []string{"a.yaml", "x/b.yaml", "x/y/z/duplicate-of-a.yaml"}
	if got := fileNames(snap); !reflect.DeepEqual(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
	if snap.Files[0].Hash != snap.Files[2].Hash {
		t.Errorf("equal contents have different hashes %s and %s", snap.Files[0].Hash, snap.Files[2].Hash)
	}
}

func TestFetchSameRevisionUsesMirror(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"m/a.yaml": "a: 1\n"})
	dir := filepath.Join(t.TempDir(), "mirror")
	s := newSource(t, Config{URL: r.dir, Path: "m", Dir: dir})
	ctx := testContext(t)

	first, err := s.Fetch(ctx, rev)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	second, err := s.Fetch(ctx, rev)
	if err != nil {
		t.Fatalf("second Fetch: %v", err)
	}
	if n := s.Fetches(); n != 1 {
		t.Errorf("Fetches = %d after fetching the same revision twice, want 1", n)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("second snapshot %+v differs from first %+v", second, first)
	}

	// A restarted process serves the mirror left on disk without a clone.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := newSource(t, Config{URL: r.dir, Path: "m", Dir: dir})
	third, err := restarted.Fetch(ctx, rev)
	if err != nil {
		t.Fatalf("Fetch after restart: %v", err)
	}
	if n := restarted.Fetches(); n != 0 {
		t.Errorf("Fetches = %d after restart, want 0", n)
	}
	if !reflect.DeepEqual(first, third) {
		t.Errorf("snapshot after restart %+v differs from first %+v", third, first)
	}
}

// TestFetchAuthor: a snapshot carries its commit's author (not the committer), fetched, served
// again from the last snapshot and from the mirror of a restarted process.
func TestFetchAuthor(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write(map[string]string{"m/a.yaml": "a: 1\n"})
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "change", "--author", "Ada Lovelace <ada@example.com>")
	rev := r.git("rev-parse", "HEAD")
	dir := filepath.Join(t.TempDir(), "mirror")
	ctx := testContext(t)
	want := sources.Author{Name: "Ada Lovelace", Email: "ada@example.com"}
	s := newSource(t, Config{URL: r.dir, Path: "m", Dir: dir})
	for _, step := range []string{"fetched", "the last snapshot"} {
		snap, err := s.Fetch(ctx, rev)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if snap.Author != want {
			t.Errorf("%s: author %+v, want %+v", step, snap.Author, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := newSource(t, Config{URL: r.dir, Path: "m", Dir: dir}).Fetch(ctx, rev)
	if err != nil {
		t.Fatalf("from the mirror: %v", err)
	}
	if snap.Author != want {
		t.Errorf("from the mirror: author %+v, want %+v", snap.Author, want)
	}
}

func TestNewCommitIsFetched(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	dir := filepath.Join(t.TempDir(), "mirror")
	rev1 := r.commit(map[string]string{"same.yaml": "same: true\n", "changed.yaml": "v: 1\n", "gone.yaml": "g: 1\n"})
	s := newSource(t, Config{URL: r.dir, Dir: dir})
	ctx := testContext(t)
	snap1, err := s.Fetch(ctx, rev1)
	if err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(filepath.Join(r.dir, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	rev2 := r.commit(map[string]string{"changed.yaml": "v: 2\n", "new.yaml": "n: 1\n"})
	head, err := s.Head(ctx)
	if err != nil || head != rev2 {
		t.Fatalf("Head = %s, %v; want %s", head, err, rev2)
	}
	snap2, err := s.Fetch(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	if snap2.Revision != rev2 || s.Fetches() != 2 {
		t.Errorf("Revision %s after %d fetches, want %s after 2", snap2.Revision, s.Fetches(), rev2)
	}
	got := map[string]string{}
	for _, f := range snap2.Files {
		got[f.Path] = string(f.Data)
	}
	want := map[string]string{"same.yaml": "same: true\n", "changed.yaml": "v: 2\n", "new.yaml": "n: 1\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files = %v, want %v", got, want)
	}
	// The unchanged blob came from the cache, not from a second read.
	same := func(snap []sources.File) *byte {
		for _, f := range snap {
			if f.Path == "same.yaml" {
				return &f.Data[0]
			}
		}
		return nil
	}
	if same(snap1.Files) != same(snap2.Files) {
		t.Error("unchanged blob was read again instead of served from the cache")
	}
	// Only the current generation stays on disk.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("mirror dir holds %q, want the link and one generation", names)
	}
}

func TestFetchAfterRefMoved(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev1 := r.commit(map[string]string{"a.yaml": "v: 1\n"})
	s := newSource(t, Config{URL: r.dir})
	ctx := testContext(t)
	head, err := s.Head(ctx)
	if err != nil || head != rev1 {
		t.Fatalf("Head = %s, %v", head, err)
	}
	rev2 := r.commit(map[string]string{"a.yaml": "v: 2\n"})
	snap, err := s.Fetch(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != rev2 || string(snap.Files[0].Data) != "v: 2\n" {
		t.Errorf("Fetch(%s) = revision %s with %q, want the moved-on %s", head, snap.Revision, snap.Files[0].Data, rev2)
	}
}

func TestFetchTags(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	tagged := r.commit(map[string]string{"a.yaml": "v: 1\n"})
	r.git("tag", "-a", "-m", "release", "v1")
	r.git("tag", "light")
	r.commit(map[string]string{"a.yaml": "v: 2\n"})
	for _, tag := range []string{"v1", "light"} {
		t.Run(tag, func(t *testing.T) {
			t.Parallel()
			s := newSource(t, Config{URL: r.dir, Tag: tag})
			ctx := testContext(t)
			head, err := s.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := s.Fetch(ctx, head)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Revision != tagged || string(snap.Files[0].Data) != "v: 1\n" {
				t.Errorf("tag %s: revision %s data %q, want %s", tag, snap.Revision, snap.Files[0].Data, tagged)
			}
		})
	}
}

func TestFetchCommit(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.commit(map[string]string{"a.yaml": "main: 0\n"})
	r.git("checkout", "-q", "-b", "side")
	wanted := r.commit(map[string]string{"a.yaml": "side: 1\n"})
	r.commit(map[string]string{"a.yaml": "side: 2\n"})
	r.git("checkout", "-q", "main")
	r.commit(map[string]string{"a.yaml": "main: 1\n"})

	tests := []struct {
		name        string
		allowSHA1   bool
		wantFetches int64
	}{
		// git-upload-pack refuses unadvertised objects by default: one refused attempt, then a
		// full clone of all branches.
		{"full clone fallback", false, 2},
		{"single commit", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := r
			if tt.allowSHA1 {
				src = &testRepo{t: t, dir: filepath.Join(t.TempDir(), "copy")}
				r.git("clone", "-q", "--mirror", r.dir, src.dir)
				src.git("config", "uploadpack.allowReachableSHA1InWant", "true")
			}
			s := newSource(t, Config{URL: "file://" + src.dir, Commit: wanted})
			ctx := testContext(t)
			for range 2 {
				head, err := s.Head(ctx)
				if err != nil || head != wanted {
					t.Fatalf("Head = %s, %v", head, err)
				}
				snap, err := s.Fetch(ctx, head)
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				if snap.Revision != wanted || string(snap.Files[0].Data) != "side: 1\n" {
					t.Errorf("revision %s data %q, want %s", snap.Revision, snap.Files[0].Data, wanted)
				}
			}
			if n := s.Fetches(); n != tt.wantFetches {
				t.Errorf("Fetches = %d, want %d", n, tt.wantFetches)
			}
		})
	}

	t.Run("unknown commit", func(t *testing.T) {
		t.Parallel()
		s := newSource(t, Config{URL: r.dir, Commit: strings.Repeat("ab", 20)})
		_, err := s.Fetch(testContext(t), "")
		if err == nil || !strings.Contains(err.Error(), "commit "+strings.Repeat("ab", 20)+" not found at "+r.dir) {
			t.Errorf("Fetch error = %v, want commit not found", err)
		}
	})
}

func TestURLForms(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"a.yaml": "a: 1\n"})
	bare := filepath.Join(t.TempDir(), "bare.git")
	r.git("clone", "-q", "--bare", r.dir, bare)
	for name, url := range map[string]string{
		"local path":      r.dir,
		"file url":        "file://" + r.dir,
		"bare local path": bare,
		"bare file url":   "file://" + bare,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSource(t, Config{URL: url})
			ctx := testContext(t)
			head, err := s.Head(ctx)
			if err != nil || head != rev {
				t.Fatalf("Head = %s, %v; want %s", head, err, rev)
			}
			snap, err := s.Fetch(ctx, head)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Revision != rev || len(snap.Files) != 1 {
				t.Errorf("snapshot %+v", snap)
			}
		})
	}
}

func TestMissingPath(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"manifests/a.yaml": "a: 1\n", "file.yaml": "f: 1\n"})
	for _, p := range []string{"nope", "manifests/nope", "file.yaml", "manifests/a.yaml"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			s := newSource(t, Config{URL: r.dir, Path: p})
			_, err := s.Fetch(testContext(t), rev)
			if !errors.Is(err, sources.ErrPathNotFound) {
				t.Fatalf("Fetch error = %v, want ErrPathNotFound", err)
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), r.dir) {
				t.Errorf("error %q does not name the path and the url", err)
			}
		})
	}
}

func TestUnknownRef(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.commit(map[string]string{"a.yaml": "a: 1\n"})
	empty := newTestRepo(t)
	tests := []struct {
		name, url string
		cfg       Config
		want      string
	}{
		{"branch", r.dir, Config{Branch: "nope"}, "branch nope not found at " + r.dir},
		{"tag", r.dir, Config{Tag: "v9"}, "tag v9 not found at " + r.dir},
		{"empty repository", empty.dir, Config{}, "branch main not found at " + empty.dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.URL = tt.url
			s := newSource(t, cfg)
			ctx := testContext(t)
			if _, err := s.Head(ctx); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Head error = %v, want %q", err, tt.want)
			}
			if _, err := s.Fetch(ctx, ""); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Fetch error = %v, want %q", err, tt.want)
			}
		})
	}

	t.Run("missing repository", func(t *testing.T) {
		t.Parallel()
		s := newSource(t, Config{URL: filepath.Join(t.TempDir(), "none")})
		if _, err := s.Head(testContext(t)); err == nil || !strings.Contains(err.Error(), "ls-remote ") {
			t.Errorf("Head error = %v", err)
		}
	})
}

func TestContextCanceled(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"a.yaml": "a: 1\n"})
	s := newSource(t, Config{URL: r.dir})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Head(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Head error = %v, want context.Canceled", err)
	}
	if _, err := s.Fetch(ctx, rev); !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch error = %v, want context.Canceled", err)
	}
	if n := s.Fetches(); n != 0 {
		t.Errorf("Fetches = %d, want 0", n)
	}
	// Nothing was left behind, and the source still works.
	if _, err := s.Fetch(testContext(t), rev); err != nil {
		t.Fatal(err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no url", Config{Dir: dir}, "url is required"},
		{"no dir", Config{URL: "https://example.com/x.git"}, "dir is required"},
		{"two refs", Config{URL: "https://example.com/x.git", Dir: dir, Branch: "main", Tag: "v1"}, "at most one"},
		{"short commit", Config{URL: "https://example.com/x.git", Dir: dir, Commit: "abc123"}, "full 40-character"},
		{"bad branch", Config{URL: "https://example.com/x.git", Dir: dir, Branch: "a..b"}, "invalid branch"},
		{"path escapes", Config{URL: "https://example.com/x.git", Dir: dir, Path: "../x"}, "leaves the repository"},
		{"absolute path", Config{URL: "https://example.com/x.git", Dir: dir, Path: "/x"}, "relative"},
		{"scheme", Config{URL: "ftp://example.com/x.git", Dir: dir}, "unsupported protocol"},
		{"ssh key with https", Config{URL: "https://example.com/x.git", Dir: dir, Auth: Auth{SSHKeyFile: "k"}}, "ssh urls only"},
		{"password with ssh", Config{URL: "ssh://git@example.com/x.git", Dir: dir, Auth: Auth{Password: "hunter22"}}, "https urls only"},
		{"auth with local path", Config{URL: "/srv/repo", Dir: dir, Auth: Auth{Password: "hunter22"}}, "not supported"},
		{"missing key file", Config{URL: "git@example.com:org/x.git", Dir: dir,
			Auth: Auth{SSHKeyFile: filepath.Join(dir, "nokey"), KnownHostsFile: os.DevNull}}, "read ssh key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter22") {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"a.yaml": "a: 1\n"})
	s := newSource(t, Config{URL: r.dir})
	ctx := testContext(t)
	if _, err := s.Fetch(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if _, err := s.Head(ctx); err == nil {
		t.Error("Head after Close succeeded")
	}
	if _, err := s.Fetch(ctx, rev); err == nil {
		t.Error("Fetch after Close succeeded")
	}
}

// The first fetch of a folder in a process removes a crash's leftovers (old generations,
// an interrupted fetch's tmp-, an interrupted FetchRef's ref-), not other files.
func TestCrashLeftoversRemoved(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"a.yaml": "kind: A\n"})
	dir := t.TempDir()
	for _, name := range []string{"tmp-123", "gen-old", "ref-456"} {
		if err := os.MkdirAll(filepath.Join(dir, name, "objects"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keep := filepath.Join(dir, "unrelated")
	if err := os.WriteFile(keep, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSource(t, Config{URL: r.dir, Dir: dir})
	if _, err := s.Fetch(testContext(t), rev); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tmp-123", "gen-old", "ref-456"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s left after the first fetch: %v", name, err)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the unrelated file: %v", err)
	}
}

// Building a source touches nothing on disk, and a second instance of a folder already used
// in this process (a source changed by a config reload) leaves its tmp- and ref- work alone:
// an earlier instance's fetch or preview may be using them.
func TestNewTouchesNothing(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"a.yaml": "kind: A\n"})
	dir := filepath.Join(t.TempDir(), "git", "infra")
	newSource(t, Config{URL: r.dir, Dir: dir})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("New created its folder: %v", err)
	}
	running := newSource(t, Config{URL: r.dir, Dir: dir})
	if _, err := running.Fetch(testContext(t), rev); err != nil {
		t.Fatal(err)
	}
	mirror, err := os.Readlink(filepath.Join(dir, mirrorLink))
	if err != nil {
		t.Fatal(err)
	}
	inFlight := []string{"tmp-in-flight", "ref-preview"}
	for _, name := range inFlight {
		if err := os.MkdirAll(filepath.Join(dir, name, "objects"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, name := range append(inFlight, mirror) {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s: %s: %v", when, name, err)
			}
		}
	}
	next := newSource(t, Config{URL: r.dir, Dir: dir}) // what a reload or config check builds
	check("after New")
	_ = running.Close()
	// The new instance's first operations, once the old one is stopped.
	if _, err := next.Fetch(testContext(t), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := next.ReadTree(testContext(t), rev, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := next.FetchRef(testContext(t), "refs/heads/main", ""); err != nil {
		t.Fatal(err)
	}
	check("after the next instance's first use")
}

// With AllFiles (a source that renders), every regular file under the path is read:
// kustomizations, patches, generator inputs.
func TestFetchAllFiles(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{
		"deploy/kustomization.yaml": "resources: [a.yaml]\n",
		"deploy/a.yaml":             "kind: A\n",
		"deploy/app.env":            "A=1\n",
		"deploy/sub/Kustomization":  "resources: []\n",
		"deploy/.hidden":            "x\n",
		"other/b.txt":               "outside\n",
	})
	s := newSource(t, Config{URL: r.dir, Path: "deploy", AllFiles: true})
	snap, err := s.Fetch(testContext(t), rev)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"deploy/a.yaml", "deploy/app.env", "deploy/kustomization.yaml", "deploy/sub/Kustomization"}
	if got := fileNames(snap); !reflect.DeepEqual(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
}

// With AllFiles, a path over the snapshot limits (files, bytes) is an error that names the
// file that went over, not a snapshot held in memory.
func TestFetchAllFilesLimits(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{
		"deploy/a.yaml": "kind: A\n",
		"deploy/b.env":  "B=1\n",
		"deploy/c.txt":  strings.Repeat("c", 100),
	})
	for _, tc := range []struct {
		limits sources.SnapshotLimits
		want   string
	}{
		{sources.SnapshotLimits{Files: 2}, "deploy/c.txt: more than 2 files under the path"},
		{sources.SnapshotLimits{Bytes: 50}, "deploy/c.txt: more than 50 bytes under the path"},
	} {
		s := newSource(t, Config{URL: r.dir, Path: "deploy", AllFiles: true})
		s.limits = tc.limits
		_, err := s.Fetch(testContext(t), rev)
		if !errors.Is(err, sources.ErrTreeRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Fetch with %+v: %v, want %s", tc.limits, err, tc.want)
		}
		// Manifests alone are not capped by them.
		s = newSource(t, Config{URL: r.dir, Path: "deploy"})
		s.limits = tc.limits
		if _, err := s.Fetch(testContext(t), rev); err != nil {
			t.Errorf("Fetch without AllFiles: %v", err)
		}
	}
}
