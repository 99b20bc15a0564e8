package syncer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/sources/dirsource"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

// gitIn returns a runner of the git CLI in dir, with a committer of its own; it returns the
// command's output.
func gitIn(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// writeFiles writes files into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSyncRecordsAuthor: a git source's sync records each applied revision's commit author
// (the author, not the committer), one row per revision whatever the number of resources; a
// revision never applied has no author.
func TestSyncRecordsAuthor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	git := gitIn(t, dir)
	git("init", "-q", "-b", "main")
	commit := func(size int, author string) string {
		writeFiles(t, dir, dbFiles(size))
		git("add", "-A")
		git("commit", "-q", "-m", "size", "--author", author)
		return git("rev-parse", "HEAD")
	}
	src, err := gitsource.New(gitsource.Config{Name: "infra", URL: dir, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	s := b.syncer(src, "r1", time.Minute)
	ada, grace := policy.Author{Name: "Ada Lovelace", Email: "ada@example.com"}, policy.Author{Name: "Grace Hopper", Email: "grace@example.com"}
	first := commit(1, "Ada Lovelace <ada@example.com>")
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	second := commit(2, "Grace Hopper <grace@example.com>")
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Result.Updated != 1 {
		t.Fatalf("second sync: %+v %v", out, err)
	}
	for rev, want := range map[string]policy.Author{first: ada, second: grace, rev(7): {}} {
		got, err := b.store.RevisionAuthor(b.ctx, "infra", rev)
		if err != nil || got != want {
			t.Errorf("RevisionAuthor(%s) = %+v, %v; want %+v", rev[:7], got, err, want)
		}
	}
	var rows int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM source_revisions WHERE source = 'infra'`).Scan(&rows); err != nil || rows != 2 {
		t.Errorf("source_revisions rows = %d (%v), want 2", rows, err)
	}
}

// TestSyncFolderHasNoAuthor: a folder source's revisions have no author.
func TestSyncFolderHasNoAuthor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	writeFiles(t, dir, dbFiles(1))
	src, err := dirsource.New(dirsource.Config{Name: "infra", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	out, err := b.syncer(src, "r1", time.Minute).SyncOnce(b.ctx)
	if err != nil || out.Result.Created != 1 {
		t.Fatalf("sync: %+v %v", out, err)
	}
	if got, err := b.store.RevisionAuthor(b.ctx, "infra", out.Revision); err != nil || got != (policy.Author{}) {
		t.Errorf("RevisionAuthor = %+v, %v; want none", got, err)
	}
}
