package syncer

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/dirsource"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

// TestEmptyRevisionPruneSkipped: removing a source's last resource is refused without
// prune.allowEmpty, and the refusal is a source condition (PruneSkipped=True, its reason and
// numbers), not only an event. A syncer built with allowEmpty (as a reload that sets it
// builds one) applies the refused revision again and deletes the resource; the condition
// goes. A later revision that prunes normally clears a later refusal too.
func TestEmptyRevisionPruneSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := &repo{}
	r.set(rev(1), dbFiles(1))
	src := r.source()
	s := b.syncer(src, "r1", time.Minute)
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	r.set(rev(2), map[string]string{"t.yaml": dbType}) // a.yaml removed: no resource left
	out, err := s.SyncOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.PruneSkipped != "EmptyRender" || out.Result.Deleted != 0 {
		t.Fatalf("empty revision: %+v", out.Result)
	}
	c, ok := status.Get(b.source().Conditions, status.PruneSkipped)
	if !ok || c.Status != status.True || c.Reason != "EmptyRender" || c.Message == "" {
		t.Fatalf("no PruneSkipped=True/EmptyRender condition: %+v", b.source().Conditions)
	}
	if n := deleting(b); n != 0 {
		t.Fatalf("%d resources deleting after a refused prune", n)
	}
	if out, err := s.SyncOnce(b.ctx); err != nil || !out.Unchanged {
		t.Fatalf("the same head again under the same settings: %+v %v", out, err)
	}

	s2 := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, AllowEmpty: true, Replica: "r1", LeaseTTL: time.Minute},
		slog.New(slog.DiscardHandler))
	out, err = s2.SyncOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Deleted != 1 || out.Result.PruneSkipped != "" {
		t.Fatalf("the refused revision under allowEmpty: %+v", out)
	}
	if n := deleting(b); n != 1 {
		t.Fatalf("%d resources deleting, want 1", n)
	}
	conds := b.source().Conditions
	if _, ok := status.Get(conds, status.PruneSkipped); ok {
		t.Errorf("PruneSkipped kept after the revision pruned: %+v", conds)
	}
	if c, ok := status.Get(conds, "Pruned"); !ok || c.Status != status.True {
		t.Errorf("no Pruned=True: %+v", conds)
	}
}

// TestNormalPruneClearsPruneSkipped: a share-guard refusal shows until a revision that
// prunes within the guard.
func TestNormalPruneClearsPruneSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := &repo{}
	four := map[string]string{"t.yaml": dbType}
	for _, n := range []string{"a", "b", "c", "d"} {
		four[n+".yaml"] = "apiVersion: infra.example.com/v1\nkind: Database\nmetadata:\n  name: " + n + "\nspec:\n  size: 1\n"
	}
	r.set(rev(1), four)
	s := b.syncer(r.source(), "r1", time.Minute)
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	one := map[string]string{"t.yaml": dbType, "a.yaml": four["a.yaml"]}
	r.set(rev(2), one)
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Result.PruneSkipped != "TooManyDeletions" {
		t.Fatalf("3 of 4 removed: %+v %v", out, err)
	}
	if c, ok := status.Get(b.source().Conditions, status.PruneSkipped); !ok || c.Reason != "TooManyDeletions" {
		t.Fatalf("conditions %+v", b.source().Conditions)
	}
	two := map[string]string{"t.yaml": dbType, "a.yaml": four["a.yaml"], "b.yaml": four["b.yaml"], "c.yaml": four["c.yaml"]}
	r.set(rev(3), two)
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Result.Deleted != 1 {
		t.Fatalf("1 of 4 removed: %+v %v", out, err)
	}
	if _, ok := status.Get(b.source().Conditions, status.PruneSkipped); ok {
		t.Errorf("PruneSkipped kept after a normal prune: %+v", b.source().Conditions)
	}
}

func deleting(b *bundle) int {
	b.t.Helper()
	var n int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM resources WHERE deletion_timestamp IS NOT NULL`).Scan(&n); err != nil {
		b.t.Fatal(err)
	}
	return n
}

// allowEmptySynced closes src when the test ends and returns a syncer of it with
// prune.allowEmpty (replica r1), after a first sync that created the one resource.
func (b *bundle) allowEmptySynced(src sources.Source) *Syncer {
	b.t.Helper()
	b.t.Cleanup(func() { _ = src.Close() })
	s := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, AllowEmpty: true, Replica: "r1", LeaseTTL: time.Minute},
		slog.New(slog.DiscardHandler))
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Result.Created != 1 {
		b.t.Fatalf("first sync: %+v %v", out, err)
	}
	return s
}

// TestEmptyFolderNeverPrunes: a folder source whose folder is emptied (an unmounted volume,
// `rm -rf dir/*` before a copy) yields a snapshot without any manifest file; even with
// prune.allowEmpty its resources stay (PruneSkipped=True, EmptySource). Emptying the source on
// purpose keeps one manifest file, an empty .yaml, and then allowEmpty deletes them.
func TestEmptyFolderNeverPrunes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range dbFiles(1) {
		write(name, data)
	}
	src, err := dirsource.New(dirsource.Config{Name: "infra", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := b.allowEmptySynced(src)
	for _, name := range []string{"a.yaml", "t.yaml"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := s.SyncOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.PruneSkipped != "EmptySource" || out.Result.Deleted != 0 {
		t.Fatalf("emptied folder: %+v", out.Result)
	}
	if c, ok := status.Get(b.source().Conditions, status.PruneSkipped); !ok || c.Status != status.True || c.Reason != "EmptySource" {
		t.Fatalf("no PruneSkipped=True/EmptySource: %+v", b.source().Conditions)
	}
	if n := deleting(b); n != 0 {
		t.Fatalf("%d resources deleting after an emptied folder", n)
	}

	write("empty.yaml", "")
	out, err = s.SyncOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.PruneSkipped != "" || out.Result.Deleted != 1 {
		t.Fatalf("emptied on purpose (one empty manifest file): %+v", out.Result)
	}
	if _, ok := status.Get(b.source().Conditions, status.PruneSkipped); ok {
		t.Errorf("PruneSkipped kept: %+v", b.source().Conditions)
	}
}

// emptiedSource syncs revision 1 (one Db) as replica r1, then makes revision 2 render no
// resource (only the type): the source the refusal tests start from.
func (b *bundle) emptiedSource() *fakeSource {
	b.t.Helper()
	r := &repo{}
	r.set(rev(1), dbFiles(1))
	src := r.source()
	if _, err := b.syncer(src, "r1", time.Minute).SyncOnce(b.ctx); err != nil {
		b.t.Fatal(err)
	}
	r.set(rev(2), map[string]string{"t.yaml": dbType})
	return src
}

// expireLeases lets every lease run out, as when its holder is gone: the next syncer takes over.
func (b *bundle) expireLeases() {
	b.t.Helper()
	if _, err := b.db.Exec(b.ctx, `UPDATE leases SET expires_at = now() - interval '1 second'`); err != nil {
		b.t.Fatal(err)
	}
}

// TestRefusalNotRepeated: syncers that start one after another (restarts, takeovers) with
// the settings the refusal was made under do not apply the refused revision again; one whose
// settings differ applies it again, and when it is refused the same way no second event or
// notification is recorded.
func TestRefusalNotRepeated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	src := b.emptiedSource()
	counts := func() (events, outbox int) {
		t.Helper()
		if err := b.db.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM events WHERE reason = 'PruneSkipped'),
			(SELECT count(*) FROM notification_outbox WHERE event = 'PruneSkipped')`).Scan(&events, &outbox); err != nil {
			t.Fatal(err)
		}
		return events, outbox
	}
	for i, replica := range []string{"r1", "r2", "r1", "r3"} {
		if i > 0 {
			// The previous holder is gone: its lease is taken over.
			b.expireLeases()
		}
		out, err := b.syncer(src, replica, time.Minute).SyncOnce(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && out.Result.PruneSkipped != "EmptyRender" {
			t.Fatalf("first syncer: %+v", out)
		}
		if i > 0 && !out.Unchanged {
			t.Errorf("syncer %d (%s) with unchanged settings applied the refused revision again: %+v", i, replica, out)
		}
	}
	if e, o := counts(); e != 1 || o != 1 {
		t.Fatalf("%d PruneSkipped events, %d outbox rows; want 1 and 1", e, o)
	}
	b.expireLeases()
	s := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, MaxPruneFraction: 0.6, Replica: "r4", LeaseTTL: time.Minute},
		slog.New(slog.DiscardHandler))
	out, err := s.SyncOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Unchanged || out.Result.PruneSkipped != "EmptyRender" {
		t.Fatalf("changed settings: %+v", out)
	}
	if e, o := counts(); e != 1 || o != 1 {
		t.Errorf("the same refusal again: %d PruneSkipped events, %d outbox rows; want 1 and 1", e, o)
	}
	if c, ok := status.Get(b.source().Conditions, status.PruneSkipped); !ok || c.Status != status.True {
		t.Errorf("PruneSkipped gone: %+v", b.source().Conditions)
	}
}

// TestSuspendedRefusalNotPending: a suspended source that shows PruneSkipped is not applied
// again when a syncer with other settings takes it over: that would hold back, and show as
// pending, the revision it already applied.
func TestSuspendedRefusalNotPending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	src := b.emptiedSource()
	if out, err := b.syncer(src, "r1", time.Minute).SyncOnce(b.ctx); err != nil || out.Result.PruneSkipped != "EmptyRender" {
		t.Fatalf("%+v %v", out, err)
	}
	if err := b.store.SetSourceSuspended(b.ctx, "infra", true, "user:ann", "freeze"); err != nil {
		t.Fatal(err)
	}
	b.expireLeases()
	s := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, AllowEmpty: true, Replica: "r2", LeaseTTL: time.Minute},
		slog.New(slog.DiscardHandler))
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.source(); got.PendingRevision != "" || got.Revision != rev(2) {
		t.Errorf("suspended source after a takeover: revision %q, pending %q", got.Revision, got.PendingRevision)
	}
}

// TestGitPathWithoutManifestsNeverPrunes: a Git source whose path is left with no manifest
// file (only a README) deletes nothing, even with prune.allowEmpty (EmptySource).
func TestGitPathWithoutManifestsNeverPrunes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	git := gitIn(t, dir)
	git("init", "-q", "-b", "main")
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range dbFiles(1) {
		if err := os.WriteFile(filepath.Join(dir, "manifests", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "one")
	src, err := gitsource.New(gitsource.Config{Name: "infra", URL: dir, Path: "manifests", Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := b.allowEmptySynced(src)
	if err := os.WriteFile(filepath.Join(dir, "manifests", "README.md"), []byte("# moved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("rm", "-q", "manifests/a.yaml", "manifests/t.yaml")
	git("add", "-A")
	git("commit", "-q", "-m", "emptied")
	out, err := s.SyncOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.PruneSkipped != "EmptySource" || out.Result.Deleted != 0 || deleting(b) != 0 {
		t.Fatalf("path without manifests: %+v", out.Result)
	}
}
