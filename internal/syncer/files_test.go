package syncer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/dirsource"
)

// TestSyncComparesChangedFiles: a sync compares only the changed files' resources, and a
// type's change still reaches every resource of its kind, in unchanged files too: a schema
// that no longer admits one rejects the revision at that resource's file, and a default the
// schema adds is a new spec for each.
func TestSyncComparesChangedFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	schema := "{type: object, required: [size], properties: {size: {type: integer, minimum: 1, maximum: %d}%s}}"
	typ := func(max int, more string) string {
		return manifesttest.TypeDoc("Database", "infra.example.com", fmt.Sprintf(schema, max, more), "provision")
	}
	db := func(name string, size int) string {
		return fmt.Sprintf("apiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: %s}\nspec: {size: %d}\n", name, size)
	}
	var r repo
	s := b.syncer(r.source(), "r1", time.Minute)
	sync := func(n int, files map[string]string) (Outcome, error) {
		t.Helper()
		r.set(rev(n), files)
		return s.SyncOnce(b.ctx)
	}

	out, err := sync(1, map[string]string{"t.yaml": typ(100, ""), "a.yaml": db("a", 5), "b.yaml": db("b", 5)})
	if err != nil || out.Result.Created != 2 {
		t.Fatalf("first sync: %+v %v", out, err)
	}
	out, err = sync(2, map[string]string{"t.yaml": typ(100, ""), "a.yaml": db("a", 6), "b.yaml": db("b", 5)})
	if err != nil || out.Result.Updated != 1 || out.Result.Unchanged != 1 {
		t.Fatalf("one file changed: %+v %v", out, err)
	}
	_, err = sync(3, map[string]string{"t.yaml": typ(5, ""), "a.yaml": db("a", 6), "b.yaml": db("b", 5)})
	if err == nil || !strings.Contains(err.Error(), "a.yaml:4") {
		t.Fatalf("a type that no longer admits a resource of an unchanged file: %v, want the revision rejected at a.yaml:4", err)
	}
	out, err = sync(4, map[string]string{"t.yaml": typ(100, ", color: {type: string, default: blue}"), "a.yaml": db("a", 6), "b.yaml": db("b", 5)})
	if err != nil || out.Result.Updated != 2 {
		t.Fatalf("a default added to the type: %+v %v, want both resources updated", out, err)
	}
	for _, name := range []string{"a", "b"} {
		var color string
		if err := b.db.QueryRow(b.ctx, `SELECT spec->>'color' FROM resources WHERE name = $1`, name).Scan(&color); err != nil || color != "blue" {
			t.Errorf("%s: color %q %v, want the default", name, color, err)
		}
	}
}

// TestSyncComparesAllWhenOtherTypesChange: a type another source declares is the basis of the
// resources using it; when it changes (a default added), the next sync of the source using it,
// though only one of its files changed, compares every resource, and each gets the default.
func TestSyncComparesAllWhenOtherTypesChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.store.RegisterSource(b.ctx, store.SourceConfig{Name: "types", URL: "test"}); err != nil {
		t.Fatal(err)
	}
	typ := func(more string) string {
		return manifesttest.TypeDoc("Database", "infra.example.com",
			"{type: object, required: [size], properties: {size: {type: integer}"+more+"}}", "provision")
	}
	db := func(name string, size int) string {
		return fmt.Sprintf("apiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: %s}\nspec: {size: %d}\n", name, size)
	}
	var types, infra repo
	ts := New(b.store, Options{Name: "types", Source: types.source(), Interval: time.Hour, Replica: "r1", LeaseTTL: time.Minute}, slog.New(slog.DiscardHandler))
	is := b.syncer(infra.source(), "r1", time.Minute)
	step := func(what string, s *Syncer, r *repo, n int, files map[string]string) Outcome {
		t.Helper()
		r.set(rev(n), files)
		out, err := s.SyncOnce(b.ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return out
	}
	step("types", ts, &types, 1, map[string]string{"t.yaml": typ("")})
	step("infra", is, &infra, 1, map[string]string{"a.yaml": db("a", 5), "b.yaml": db("b", 5)})
	step("a default added", ts, &types, 2, map[string]string{"t.yaml": typ(", color: {type: string, default: blue}")})
	out := step("one file of infra changed", is, &infra, 2, map[string]string{"a.yaml": db("a", 6), "b.yaml": db("b", 5)})
	if out.Result.Updated != 2 {
		t.Errorf("after another source's type changed: %+v, want both resources updated", out.Result)
	}
	var color string
	if err := b.db.QueryRow(b.ctx, `SELECT spec->>'color' FROM resources WHERE name = 'b'`).Scan(&color); err != nil || color != "blue" {
		t.Errorf("b (an unchanged file): color %q %v, want the default", color, err)
	}
}

// countingFolder is a folder source that counts the files its fetches leave unread and its
// full fetches.
type countingFolder struct {
	*dirsource.Source
	unread, full int
}

func (c *countingFolder) Fetch(ctx context.Context, rev string) (*sources.Snapshot, error) {
	c.full++
	return c.Source.Fetch(ctx, rev)
}

func (c *countingFolder) FetchPartial(ctx context.Context, rev string, held func(path, hash string) bool) (*sources.Snapshot, error) {
	snap, err := c.Source.FetchPartial(ctx, rev, held)
	if err == nil {
		for _, f := range snap.Files {
			if f.Unread {
				c.unread++
			}
		}
	}
	return snap, err
}

// TestSyncFolderReadsChangedFiles: a sync of a folder reads only the files changed since the
// last (the others' resources are the last load's), and a revision the loader cannot build
// from its last Set (a type changed) reads every file and applies as a full load does.
func TestSyncFolderReadsChangedFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	typ := func(more string) string {
		return manifesttest.TypeDoc("Database", "infra.example.com",
			"{type: object, required: [size], properties: {size: {type: integer}"+more+"}}", "provision")
	}
	db := func(name string, size int) string {
		return fmt.Sprintf("apiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: %s}\nspec: {size: %d}\n", name, size)
	}
	writeFiles(t, dir, map[string]string{"t.yaml": typ(""), "a.yaml": db("a", 5), "b.yaml": db("b", 5)})
	// Out of the racy window, so that the stat data of files left alone proves them unchanged.
	time.Sleep(2100 * time.Millisecond)
	ds, err := dirsource.New(dirsource.Config{Name: "infra", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ds.Close() })
	src := &countingFolder{Source: ds}
	var logs syncBuffer
	s := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: time.Minute},
		slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	sync := func(step string, files map[string]string) Outcome {
		t.Helper()
		writeFiles(t, dir, files)
		out, err := s.SyncOnce(b.ctx)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return out
	}
	if out := sync("first sync", nil); out.Result.Created != 2 || src.unread != 0 {
		t.Fatalf("first sync: %+v, %d files unread", out.Result, src.unread)
	}
	if out := sync("one file changed", map[string]string{"a.yaml": db("a", 6)}); out.Result.Updated != 1 || src.unread != 2 || src.full != 0 {
		t.Fatalf("one file changed: %+v, %d files unread, %d full fetches; want a updated, the two others unread", out.Result, src.unread, src.full)
	}
	if line := lastLine(logs.String(), `msg="applied revision"`); !strings.Contains(line, "refetched=false") {
		t.Errorf("one file changed: the applied revision's line %q, want refetched=false", line)
	}
	out := sync("a default added to the type", map[string]string{"t.yaml": typ(", color: {type: string, default: blue}")})
	if out.Result.Updated != 2 || src.full != 1 {
		t.Fatalf("a default added to the type: %+v, %d full fetches; want both updated after one full fetch", out.Result, src.full)
	}
	// The second fetch is told apart from the load it interrupts.
	if line := lastLine(logs.String(), `msg="applied revision"`); !strings.Contains(line, "refetched=true") || !strings.Contains(line, "refetch_ms=") {
		t.Errorf("a default added to the type: the applied revision's line %q, want refetched=true and refetch_ms", line)
	}
	for _, name := range []string{"a", "b"} {
		var color string
		if err := b.db.QueryRow(b.ctx, `SELECT spec->>'color' FROM resources WHERE name = $1`, name).Scan(&color); err != nil || color != "blue" {
			t.Errorf("%s: color %q %v, want the default", name, color, err)
		}
	}
}

// syncBuffer is a log's buffer that the syncer's goroutines may write while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lastLine is the last line of log holding sub, or "".
func lastLine(log, sub string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return lines[i]
		}
	}
	return ""
}

// largePerFile databases in each of largeFiles files: 50,500 resources, past the 50,000 whose
// documents the loader keeps.
const largePerFile, largeFiles = 500, 101

// largeFile is the f-th file of such a source; bad gives its 11th database (its spec on line
// 55) a size that is not an integer.
func largeFile(f int, bad bool) string {
	var s strings.Builder
	for i := f * largePerFile; i < (f+1)*largePerFile; i++ {
		size := fmt.Sprint(i)
		if bad && i == f*largePerFile+10 {
			size = "nope"
		}
		fmt.Fprintf(&s, "---\napiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: db%06d}\nspec: {size: %s}\n", i, size)
	}
	return s.String()
}

// TestSyncLargeRevisionLocatesProblems: a first sync past the loader's kept documents gives
// the files' data up once parsed (manifest.Options.DropData); a problem found then is
// located by a load with every file read again, at its line, and nothing is applied; the
// fixed revision applies. A rendered revision keeps its data.
func TestSyncLargeRevisionLocatesProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	files := map[string]string{"t.yaml": manifesttest.TypeDoc("Database", "infra.example.com",
		"{type: object, required: [size], properties: {size: {type: integer}}}", "provision")}
	for f := range largeFiles {
		files[fmt.Sprintf("db-%03d.yaml", f)] = largeFile(f, f == 50)
	}
	writeFiles(t, dir, files)
	ds, err := dirsource.New(dirsource.Config{Name: "infra", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ds.Close() })
	// Rendered (here: each file as it is, its renderer named), the revision keeps its data:
	// its problems are the rendered files' (a rendered file has no lines of its own).
	rendered := New(b.store, Options{Name: "infra", Source: ds, Interval: time.Hour, Replica: "r1", LeaseTTL: time.Minute,
		Render: func(_ context.Context, files []sources.File) ([]sources.File, error) {
			out := slices.Clone(files)
			for i := range out {
				out[i].RenderedBy = "overlays/prod"
			}
			return out, nil
		}}, slog.New(slog.DiscardHandler))
	if _, err := rendered.SyncOnce(b.ctx); err == nil || !strings.Contains(err.Error(), "db-050.yaml (rendered by overlays/prod): spec.size: expected integer") {
		t.Fatalf("first sync, rendered: %v, want the rejection of db-050.yaml, rendered", err)
	}
	src := &countingFolder{Source: ds}
	s := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Replica: "r1", LeaseTTL: time.Minute}, slog.New(slog.DiscardHandler))
	// The 11th document of db-050.yaml: its spec on line 5 + 5×10.
	if _, err := s.SyncOnce(b.ctx); err == nil || !strings.Contains(err.Error(), "db-050.yaml:55: spec.size") {
		t.Fatalf("first sync: %v, want the rejection at db-050.yaml:55", err)
	}
	if src.full != 1 {
		t.Fatalf("%d full fetches, want one after the load that gave the data up", src.full)
	}
	var n int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM resources WHERE source = 'infra'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d resources (%v) after a rejected revision", n, err)
	}
	writeFiles(t, dir, map[string]string{"db-050.yaml": largeFile(50, false)})
	out, err := s.SyncOnce(b.ctx)
	if err != nil || out.Result.Created != largePerFile*largeFiles {
		t.Fatalf("the fixed revision: %+v, %v", out.Result, err)
	}
	// Applied from the Set as the loader encoded it (manifest.Options.Packed): each row is
	// its document's, in every chunk of the Set.
	for _, i := range []int{0, 4095, 4096, 25_250, largePerFile*largeFiles - 1} {
		var file, spec, hash string
		var line int
		if err := b.db.QueryRow(b.ctx, `SELECT file_path, file_line, spec::text, spec_hash FROM resources WHERE name = $1`,
			fmt.Sprintf("db%06d", i)).Scan(&file, &line, &spec, &hash); err != nil {
			t.Fatal(err)
		}
		wantSpec := fmt.Sprintf(`{"size": %d}`, i)
		if f := fmt.Sprintf("db-%03d.yaml", i/largePerFile); file != f || line != 2+5*(i%largePerFile) || spec != wantSpec ||
			hash != manifest.HashJSON([]byte(fmt.Sprintf(`{"size":%d}`, i))) {
			t.Fatalf("db%06d: %s:%d, spec %s, hash %s; want %s:%d, spec %s and its hash", i, file, line, spec, hash, f, 2+5*(i%largePerFile), wantSpec)
		}
	}
}

// TestSyncTypeChangeOnLargeSourceGivesDataUp: on a source past the loader's kept documents,
// a changed type makes the loader ask for every file (manifest.ErrUnread); the load that
// follows gives their data up once parsed, as a first sync does. A problem it then finds
// (manifest.ErrDataNeeded) is located by a third fetch and load, with the data kept.
func TestSyncTypeChangeOnLargeSourceGivesDataUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	typ := func(more string) string {
		return manifesttest.TypeDoc("Database", "infra.example.com",
			"{type: object, required: [size], properties: {size: {type: integer}"+more+"}}", "provision")
	}
	files := map[string]string{"t.yaml": typ("")}
	for f := range largeFiles {
		files[fmt.Sprintf("db-%03d.yaml", f)] = largeFile(f, false)
	}
	writeFiles(t, dir, files)
	// Out of the racy window, so that the stat data of files left alone proves them unchanged.
	time.Sleep(2100 * time.Millisecond)
	ds, err := dirsource.New(dirsource.Config{Name: "infra", Path: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ds.Close() })
	src := &keptFolder{countingFolder: countingFolder{Source: ds}}
	s := New(b.store, Options{Name: "infra", Source: src, Interval: time.Hour, Replica: "r1", LeaseTTL: time.Minute}, slog.New(slog.DiscardHandler))
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Result.Created != largePerFile*largeFiles {
		t.Fatalf("first sync: %+v, %v", out.Result, err)
	}
	writeFiles(t, dir, map[string]string{"t.yaml": typ(", color: {type: string, default: blue}")})
	if out, err := s.SyncOnce(b.ctx); err != nil || out.Result.Updated != largePerFile*largeFiles {
		t.Fatalf("a default added to the type: %+v, %v", out.Result, err)
	}
	if src.full != 1 {
		t.Fatalf("a default added to the type: %d full fetches, want one", src.full)
	}
	for _, f := range src.last {
		if f.Path != "t.yaml" && f.Data != nil {
			t.Fatalf("a default added to the type: %s kept its data through the load after the full fetch", f.Path)
		}
	}
	writeFiles(t, dir, map[string]string{"t.yaml": typ(", color: {type: string, default: red}"), "db-050.yaml": largeFile(50, true)})
	// The 11th document of db-050.yaml: its spec on line 5 + 5×10.
	if _, err := s.SyncOnce(b.ctx); err == nil || !strings.Contains(err.Error(), "db-050.yaml:55: spec.size") {
		t.Fatalf("a type changed and a widget of size nope: %v, want the rejection at db-050.yaml:55", err)
	}
	if src.full != 3 {
		t.Fatalf("a type changed and a widget of size nope: %d full fetches in all, want 3 (this sync's: one to load every file, one to locate the problem)", src.full)
	}
}

// keptFolder is a countingFolder that keeps the files of its last full fetch, as handed to
// the syncer.
type keptFolder struct {
	countingFolder
	last []sources.File
}

func (k *keptFolder) Fetch(ctx context.Context, rev string) (*sources.Snapshot, error) {
	snap, err := k.countingFolder.Fetch(ctx, rev)
	if err == nil {
		k.last = snap.Files
	}
	return snap, err
}
