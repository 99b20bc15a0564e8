package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/trueup-dev/trueup/sources"
)

// A module folder is read at any commit of the tracked branch: from the mirror without a
// fetch when it holds the commit, else from a scratch repository that leaves the mirror alone.
func TestReadTree(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.write(map[string]string{
		"manifests/a.yaml":               "kind: A\n",
		"manifests/mod/main.tf.json":     "{\"output\": {}}\n",
		"modules/db/main.tf":             "# v1\n",
		"modules/db/sub/vars.tf":         "variable \"x\" {}\n",
		"modules/db/.terraform.lock.hcl": "# lock\n",
		"modules/db/run.sh":              "#!/bin/sh\n",
	})
	if err := os.Chmod(filepath.Join(r.dir, "modules/db/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../main.tf", filepath.Join(r.dir, "modules/db/sub/link.tf")); err != nil {
		t.Fatal(err)
	}
	c1 := r.commit(nil)
	s := newSource(t, Config{URL: r.dir, Path: "manifests"})
	ctx := testContext(t)
	snap, err := s.Fetch(ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 1 || snap.Files[0].Path != "manifests/a.yaml" {
		t.Fatalf("manifests %+v: a module's *.tf.json under the path is not one", snap.Files)
	}
	fetches := s.Fetches()
	c2 := r.commit(map[string]string{"modules/db/main.tf": "# v2\n"})
	r.git("checkout", "-q", "-b", "pr")
	pr := r.commit(map[string]string{"modules/db/main.tf": "# pr\n"})
	r.git("checkout", "-q", "main")

	files, err := s.ReadTree(ctx, c1, "modules/db")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path+"="+strings.TrimSpace(string(f.Data))+map[bool]string{true: "(x)"}[f.Executable])
	}
	want := []string{".terraform.lock.hcl=# lock", "main.tf=# v1", "run.sh=#!/bin/sh(x)", "sub/link.tf=# v1", "sub/vars.tf=variable \"x\" {}"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("files at c1:\n%v\nwant\n%v", got, want)
	}
	if s.Fetches() != fetches {
		t.Fatalf("the mirror's commit was fetched again")
	}

	// A later commit the mirror lacks: fetched aside (plain git cannot send a single commit:
	// one refused attempt, then the branch's history).
	files, err = s.ReadTree(ctx, c2, "modules/db/")
	if err != nil {
		t.Fatal(err)
	}
	if files[1].Path != "main.tf" || string(files[1].Data) != "# v2\n" {
		t.Fatalf("files at c2: %+v", files)
	}
	if n := s.Fetches(); n != fetches+2 {
		t.Errorf("fetches %d, want %d", n, fetches+2)
	}
	again, err := s.Fetch(ctx, c1)
	if err != nil || again.Revision != c1 {
		t.Fatalf("Fetch after ReadTree: %v %+v", err, again)
	}
	entries, _ := os.ReadDir(s.cfg.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), refPrefix) {
			t.Errorf("scratch repository %s left behind", e.Name())
		}
	}

	// A commit on no tracked branch, from a server that cannot send single commits.
	if _, err := s.ReadTree(ctx, pr, "modules/db"); !errors.Is(err, sources.ErrRevisionNotFound) || !strings.Contains(err.Error(), "commit "+pr+" not found") {
		t.Errorf("commit on another branch: %v", err)
	}

	for name, tc := range map[string]struct {
		dir  string
		want error
	}{
		"missing":         {"modules/nope", sources.ErrPathNotFound},
		"a file":          {"modules/db/main.tf", sources.ErrPathNotFound},
		"leaves the repo": {"../x", sources.ErrTreeRefused},
	} {
		if _, err := s.ReadTree(ctx, c1, tc.dir); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := s.ReadTree(ctx, "main", "modules/db"); err == nil {
		t.Error("a branch name was accepted as a revision")
	}
}

// Links out of the folder, huge files and submodules are refused, never read.
func TestReadTreeRefuses(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.commit(map[string]string{"secret.txt": "s3cr3t\n", "modules/ok/main.tf": "#\n"})
	for name, setup := range map[string]func(dir string){
		"link out": func(dir string) {
			if err := os.Symlink("../../secret.txt", filepath.Join(dir, "x.tf")); err != nil {
				t.Fatal(err)
			}
		},
		"absolute link": func(dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "x.tf")); err != nil {
				t.Fatal(err)
			}
		},
		"link to folder": func(dir string) {
			if err := os.Symlink(".", filepath.Join(dir, "self")); err != nil {
				t.Fatal(err)
			}
		},
		"too large": func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "big.tf"), make([]byte, sources.MaxFileBytes+1), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		dir := filepath.Join(r.dir, "modules", strings.ReplaceAll(name, " ", "-"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		setup(dir)
	}
	rev := r.commit(nil)
	s := newSource(t, Config{URL: r.dir})
	ctx := testContext(t)
	if _, err := s.Fetch(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"link-out", "absolute-link", "link-to-folder", "too-large"} {
		_, err := s.ReadTree(ctx, rev, "modules/"+dir)
		if !errors.Is(err, sources.ErrTreeRefused) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v; want refused", dir, err)
		}
	}
	if files, err := s.ReadTree(ctx, rev, "modules/ok"); err != nil || len(files) != 1 {
		t.Errorf("ok: %v %+v", err, files)
	}
}

// A commit gone from a server that sends single commits (uploadpack.allowReachableSHA1InWant,
// as GitHub and GitLab do): the server refuses the want ("not our ref"), which is a revision
// not found, as for a server that cannot send single commits.
func TestReadTreeGoneCommitSingleCommitServer(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	r.git("config", "uploadpack.allowReachableSHA1InWant", "true")
	r.write(map[string]string{"manifests/a.yaml": "kind: A\n", "modules/db/main.tf": "# v1\n"})
	c1 := r.commit(nil)
	s := newSource(t, Config{URL: "file://" + r.dir, Path: "manifests"})
	ctx := testContext(t)
	if _, err := s.Fetch(ctx, c1); err != nil {
		t.Fatal(err)
	}
	// A pushed commit, then history rewritten (force push) and the commit pruned.
	gone := r.commit(map[string]string{"modules/db/main.tf": "# v2\n"})
	r.git("reset", "-q", "--hard", c1)
	r.git("reflog", "expire", "--expire=now", "--all")
	r.git("gc", "-q", "--prune=now")
	c3 := r.commit(map[string]string{"modules/db/main.tf": "# v3\n"})

	// The server sends a single commit it has, without the branch's history.
	fetches := s.Fetches()
	files, err := s.ReadTree(ctx, c3, "modules/db")
	if err != nil || len(files) != 1 || string(files[0].Data) != "# v3\n" {
		t.Fatalf("ReadTree at the branch's head: %v %+v", err, files)
	}
	if n := s.Fetches(); n != fetches+1 {
		t.Errorf("fetches %d, want %d (the single commit)", n, fetches+1)
	}
	if _, err := s.ReadTree(ctx, gone, "modules/db"); !errors.Is(err, sources.ErrRevisionNotFound) || !strings.Contains(err.Error(), "commit "+gone) {
		t.Errorf("ReadTree at a commit gone from the server: %v, want ErrRevisionNotFound", err)
	}
}

// Which failures of a single-commit fetch fall back to the tracked ref's history
// (singleCommitRefused), and which say the commit is gone (commitRefused).
func TestCommitRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		err               error
		fallBack, refused bool
	}{
		{"cannot send single commits", fmt.Errorf("fetch: %w", git.ErrExactSHA1NotSupported), true, false},
		{"no matching refspec", fmt.Errorf("fetch: %w", git.NoMatchingRefSpecError{}), true, true},
		{"not our ref", errors.New("upload-pack: not our ref 7a5a16ac"), true, true},
		{"hung up: EPIPE", fmt.Errorf("sending upload-req message: %w", syscall.EPIPE), true, false},
		{"hung up: text", errors.New("encoding depth 1: write |1: broken pipe"), true, false},
		{"timeout", fmt.Errorf("fetch: %w", context.DeadlineExceeded), false, false},
		{"reset", errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer"), false, false},
	} {
		if got := singleCommitRefused(tc.err); got != tc.fallBack {
			t.Errorf("%s: singleCommitRefused = %v, want %v", tc.name, got, tc.fallBack)
		}
		if got := commitRefused(tc.err); got != tc.refused {
			t.Errorf("%s: commitRefused = %v, want %v", tc.name, got, tc.refused)
		}
	}
}

// A pinned source reads the manifests of any commit of its branch: the mirror's (depth 1)
// without a fetch, an older one through a scratch repository that leaves the mirror alone.
func TestFetchRevision(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	c1 := r.commit(map[string]string{"manifests/a.yaml": "kind: A\n", "manifests/b.yaml": "kind: B\n", "other/x.yaml": "kind: X\n"})
	r.git("rm", "-q", "manifests/b.yaml")
	c2 := r.commit(nil)
	c3 := r.commit(map[string]string{"manifests/a.yaml": "kind: A3\n"})
	s := newSource(t, Config{URL: r.dir, Path: "manifests"})
	ctx := testContext(t)
	if _, err := s.Fetch(ctx, c3); err != nil {
		t.Fatal(err)
	}
	fetches := s.Fetches()
	files := func(snap *sources.Snapshot) string {
		var out []string
		for _, f := range snap.Files {
			out = append(out, f.Path+"="+strings.TrimSpace(string(f.Data)))
		}
		return strings.Join(out, "|")
	}
	snap, err := s.FetchRevision(ctx, c3)
	if err != nil || snap.Revision != c3 || files(snap) != "manifests/a.yaml=kind: A3" || s.Fetches() != fetches {
		t.Fatalf("head from the mirror: %v %+v (fetches %d → %d)", err, snap, fetches, s.Fetches())
	}
	// c1 is older than the shallow mirror holds.
	snap, err = s.FetchRevision(ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != c1 || files(snap) != "manifests/a.yaml=kind: A|manifests/b.yaml=kind: B" || snap.Author.Email != "test@trueup.dev" {
		t.Fatalf("older commit: %+v", snap)
	}
	head, err := s.Fetch(ctx, c3)
	if err != nil || head.Revision != c3 || files(head) != "manifests/a.yaml=kind: A3" {
		t.Fatalf("the mirror moved: %v %+v", err, head)
	}
	if snap, err := s.FetchRevision(ctx, c2); err != nil || files(snap) != "manifests/a.yaml=kind: A" {
		t.Fatalf("c2: %v %+v", err, snap)
	}
	gone := strings.Repeat("ab", 20)
	if _, err := s.FetchRevision(ctx, gone); !errors.Is(err, sources.ErrRevisionNotFound) {
		t.Errorf("unknown commit: %v, want ErrRevisionNotFound", err)
	}
	if _, err := s.FetchRevision(ctx, "main"); err == nil {
		t.Error("a branch name was accepted as a revision")
	}
}
