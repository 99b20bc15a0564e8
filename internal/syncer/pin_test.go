package syncer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

// dbDoc is a Database manifest of name and size.
func dbDoc(name string, size int) string {
	return fmt.Sprintf("apiVersion: infra.example.com/v1\nkind: Database\nmetadata:\n  name: %s\nspec:\n  size: %d\n", name, size)
}

// live lists the source's resources not being deleted, as name=size.
func (b *bundle) live() string {
	b.t.Helper()
	rows, err := b.db.Query(b.ctx, `SELECT name || '=' || (spec->>'size') FROM resources WHERE deletion_timestamp IS NULL ORDER BY name`)
	if err != nil {
		b.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			b.t.Fatal(err)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func (b *bundle) events(reason string) int {
	b.t.Helper()
	var n int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM events WHERE source = 'infra' AND reason = $1`, reason).Scan(&n); err != nil {
		b.t.Fatal(err)
	}
	return n
}

// TestSyncPinned: a source pinned at an older commit (older than its shallow mirror holds)
// applies it, so a resource deleted since comes back; a push meanwhile is its pending
// revision, not applied; unpinned, it applies the newest at once.
func TestSyncPinned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	git := gitIn(t, dir)
	git("init", "-q", "-b", "main")
	commit := func(files map[string]string, rm ...string) string {
		t.Helper()
		writeFiles(t, dir, files)
		if len(rm) > 0 {
			git(append([]string{"rm", "-q"}, rm...)...)
		}
		git("add", "-A")
		git("commit", "-q", "-m", "change")
		return git("rev-parse", "HEAD")
	}
	c1 := commit(map[string]string{"t.yaml": dbType, "a.yaml": dbDoc("a", 1), "b.yaml": dbDoc("b", 1), "c.yaml": dbDoc("c", 1)})
	c2 := commit(nil, "b.yaml")
	src, err := gitsource.New(gitsource.Config{Name: "infra", URL: dir, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	s := b.syncer(src, "r1", time.Minute)
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Revision != c2 {
		t.Fatalf("first sync: %+v %v", out, err)
	}
	// b's delete completes (as the reconciler's would).
	if _, err := b.db.Exec(b.ctx, `DELETE FROM resources WHERE name = 'b'`); err != nil {
		t.Fatal(err)
	}

	if _, err := b.pinAt(c1, "alice", "incident"); err != nil {
		t.Fatal(err)
	}
	out, err := s.SyncOnce(b.ctx)
	if err != nil || out.Revision != c1 || out.Result.Created != 1 {
		t.Fatalf("pinned sync: %+v %v", out, err)
	}
	if got := b.live(); got != "a=1 b=1 c=1" {
		t.Errorf("pinned at c1: %s, want b back", got)
	}
	if src := b.source(); src.Revision != c1 || src.PendingRevision != c2 || src.Pin == nil || src.Pin.Revision != c1 {
		t.Errorf("pinned source: revision %s, pending %s, pin %+v", src.Revision, src.PendingRevision, src.Pin)
	}

	c3 := commit(map[string]string{"a.yaml": dbDoc("a", 3)})
	for range 2 {
		if out, err := s.SyncOnce(b.ctx); err != nil || !out.Unchanged {
			t.Fatalf("sync after a push while pinned: %+v %v", out, err)
		}
	}
	if src := b.source(); src.Revision != c1 || src.PendingRevision != c3 || b.live() != "a=1 b=1 c=1" {
		t.Errorf("after a push while pinned: revision %s, pending %s, %s", src.Revision, src.PendingRevision, b.live())
	}
	if n := b.events(store.ReasonRevisionPending); n != 2 {
		t.Errorf("%d RevisionPending events, want 2 (c2, c3)", n)
	}

	if err := b.store.UnpinSource(b.ctx, "infra", "alice", "fixed"); err != nil {
		t.Fatal(err)
	}
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Revision != c3 {
		t.Fatalf("unpinned sync: %+v %v", out, err)
	}
	if src, got := b.source(), b.live(); src.Revision != c3 || src.PendingRevision != "" || src.Pin != nil || got != "a=3 c=1" {
		t.Errorf("unpinned: revision %s, pending %q, pin %+v, %s", src.Revision, src.PendingRevision, src.Pin, got)
	}
}

// pinningSource is a repo whose FetchRevision runs before, once, when set: a pin changed
// while a revision is validated.
type pinningSource struct {
	*fakeSource
	r      *repo
	before func()
}

func (p *pinningSource) FetchRevision(_ context.Context, rev string) (*sources.Snapshot, error) {
	if f := p.before; f != nil {
		p.before = nil
		f()
	}
	return p.r.snapshot(rev), nil
}

// TestSyncPinChangedDuringSync: a revision validated under a pin that changed before it was
// written is not applied; the sync starts over under the pin in force.
func TestSyncPinChangedDuringSync(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), dbFiles(1))
	r.set(rev(2), dbFiles(2))
	r.set(rev(3), dbFiles(3))
	src := &pinningSource{fakeSource: r.source(), r: &r}
	s := b.syncer(src, "r1", time.Minute)
	rep := &reporter{}
	s.opts.Reporter = rep
	if _, err := b.pinAt(rev(1), "alice", "x"); err != nil {
		t.Fatal(err)
	}
	src.before = func() {
		if _, err := b.pinAt(rev(2), "bob", "y"); err != nil {
			t.Error(err)
		}
	}
	out, err := s.SyncOnce(b.ctx)
	if err != nil || out.Revision != rev(2) {
		t.Fatalf("sync: %+v %v, want %s applied", out, err, clip.Rev(rev(2)))
	}
	if src := b.source(); src.Revision != rev(2) || src.PendingRevision != rev(3) {
		t.Errorf("revision %s pending %s", src.Revision, src.PendingRevision)
	}
	// The revision the pin change stopped has no commit status left pending.
	if want := "picked " + rev(2) + ", applied " + rev(2); strings.Join(rep.calls, ", ") != want {
		t.Errorf("reporter told %q, want %q", rep.calls, want)
	}
}

// reporter records what a sync tells its Reporter.
type reporter struct{ calls []string }

func (r *reporter) Picked(_ context.Context, rev string) { r.calls = append(r.calls, "picked "+rev) }
func (r *reporter) Rejected(_ context.Context, rev string, _ []string) {
	r.calls = append(r.calls, "rejected "+rev)
}
func (r *reporter) Applied(_ context.Context, rev string) { r.calls = append(r.calls, "applied "+rev) }

// TestSyncPinnedFolderRefused: a source that cannot read past revisions shows why its pin is
// not applied, and applies nothing.
func TestSyncPinnedFolderRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), dbFiles(1))
	s := b.syncer(r.source(), "r1", time.Minute)
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	r.set(rev(2), dbFiles(2))
	if _, err := b.pinAt(rev(1), "alice", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pinAt(rev(2), "alice", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SyncOnce(b.ctx); err == nil {
		t.Fatal("a pin of a source without past revisions was applied")
	}
	src := b.source()
	c, _ := status.Get(src.Conditions, status.Ready)
	if src.Revision != rev(1) || c.Status != status.False || c.Reason != "PinUnsupported" || !strings.Contains(c.Message, "cannot be pinned") {
		t.Errorf("revision %s, Ready %+v", src.Revision, c)
	}
}

// TestSyncPinnedSuspended: a suspended source stays suspended when pinned (nothing applied);
// resumed, it applies the pinned revision, not its head.
func TestSyncPinnedSuspended(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), dbFiles(1))
	r.set(rev(2), dbFiles(2))
	src := &pinningSource{fakeSource: r.source(), r: &r}
	s := b.syncer(src, "r1", time.Minute)
	if err := b.store.SetSourceSuspended(b.ctx, "infra", true, "alice", "freeze"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pinAt(rev(1), "alice", "x"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if out, err := s.SyncOnce(b.ctx); err != nil || b.source().Revision != "" || (!out.Held && !out.Unchanged) {
			t.Fatalf("suspended and pinned: %+v %v, revision %q", out, err, b.source().Revision)
		}
	}
	if got := b.source().PendingRevision; got != rev(2) {
		t.Errorf("pending %q, want the head", got)
	}
	pending := b.events(store.ReasonRevisionPending)
	if err := b.store.SetSourceSuspended(b.ctx, "infra", false, "alice", ""); err != nil {
		t.Fatal(err)
	}
	// Still pinned, the source keeps the head it holds back.
	if got := b.source().PendingRevision; got != rev(2) {
		t.Errorf("pending after resume %q, want the head", got)
	}
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Revision != rev(1) || out.Result.Created != 1 {
		t.Fatalf("resumed: %+v %v", out, err)
	}
	if src := b.source(); src.Revision != rev(1) || src.PendingRevision != rev(2) {
		t.Errorf("resumed: revision %s pending %s", src.Revision, src.PendingRevision)
	}
	if got := b.events(store.ReasonRevisionPending); got != pending || got != 1 {
		t.Errorf("%d RevisionPending events after the resumed sync (%d before), want the one of head %s", got, pending, clip.Rev(rev(2)))
	}
}

// pinAt pins infra at rev, recorded first as a revision of its history (a pin names one).
func (b *bundle) pinAt(rev, actor, reason string) (store.SourcePin, error) {
	if _, err := b.db.Exec(b.ctx, `INSERT INTO source_revisions (source, revision) VALUES ('infra', $1) ON CONFLICT DO NOTHING`, rev); err != nil {
		return store.SourcePin{}, err
	}
	return b.store.PinSource(b.ctx, "infra", rev, actor, reason)
}
