package gitsource

import (
	"os"
	"strings"
	"testing"
)

// A pull request's head is read from its ref without moving what the source syncs: the
// mirror still serves the branch's commit, and Head still names it.
func TestFetchRefLeavesTheBranchAlone(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	main := r.commit(map[string]string{"manifests/a.yaml": "kind: A\n"})
	r.git("checkout", "-q", "-b", "feature")
	pr := r.commit(map[string]string{"manifests/a.yaml": "kind: A2\n", "manifests/b.yaml": "kind: B\n"})
	r.git("update-ref", "refs/pull/7/head", pr)
	r.git("checkout", "-q", "main")

	s := newSource(t, Config{URL: r.dir, Path: "manifests"})
	ctx := testContext(t)
	if _, err := s.Fetch(ctx, main); err != nil {
		t.Fatal(err)
	}
	fetches := s.Fetches()
	snap, err := s.FetchRef(ctx, "refs/pull/7/head", pr)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != pr || len(snap.Files) != 2 || string(snap.Files[0].Data) != "kind: A2\n" || snap.Files[1].Path != "manifests/b.yaml" {
		t.Fatalf("snapshot %s %+v", snap.Revision, snap.Files)
	}
	if head, err := s.Head(ctx); err != nil || head != main {
		t.Fatalf("Head = %s, %v; want %s", head, err, main)
	}
	again, err := s.Fetch(ctx, main)
	if err != nil || again.Revision != main || string(again.Files[0].Data) != "kind: A\n" {
		t.Fatalf("Fetch after FetchRef: %v %+v", err, again)
	}
	if s.Fetches() != fetches+1 {
		t.Errorf("fetches %d, want %d: the mirror was fetched again", s.Fetches(), fetches+1)
	}
	entries, _ := os.ReadDir(s.cfg.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), refPrefix) {
			t.Errorf("scratch repository %s left behind", e.Name())
		}
	}

	if _, err := s.FetchRef(ctx, "refs/pull/8/head", ""); err == nil || !strings.Contains(err.Error(), "ref refs/pull/8/head not found") {
		t.Errorf("missing ref: %v", err)
	}
	if _, err := s.FetchRef(ctx, "pull/7", ""); err == nil {
		t.Error("a short ref name was accepted")
	}
}
