package gitsource

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
)

// newBenchRepo builds a repository with n manifests of ~300 bytes in 100 folders.
func newBenchRepo(b *testing.B, n int) *testRepo {
	b.Helper()
	r := newTestRepo(b)
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("manifests/team-%02d/db-%05d.yaml", i%100, i)] = fmt.Sprintf(`apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: db-%05d
  namespace: team-%02d
  labels: {team: team-%02d, tier: production}
spec:
  engine: postgres
  storage_gb: %d
  replicas: 2
  backup: {schedule: "0 3 * * *", retention_days: 14}
`, i, i%100, i%100, 10+i%1000)
	}
	r.commit(files)
	return r
}

// BenchmarkFetch10k measures Fetch on a 10,000-manifest repository over file://.
//
//	cold:     shallow clone into a new mirror + read every blob (first sync)
//	mirror:   same revision again: served from the mirror and the blob cache, no network
//	one-file: a new commit changing one file: re-clone, read one blob, the rest cached
//	head:     ls-remote only (the poll with no new commit)
func BenchmarkFetch10k(b *testing.B) {
	r := newBenchRepo(b, 10_000)
	url := "file://" + r.dir
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	newSrc := func(b *testing.B) *Source {
		s, err := New(Config{Name: "bench", URL: url, Path: "manifests", Dir: filepath.Join(b.TempDir(), "m")}, logger)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	}
	fetch := func(b *testing.B, s *Source, rev string) {
		snap, err := s.Fetch(ctx, rev)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Files) != 10_000 {
			b.Fatalf("%d files", len(snap.Files))
		}
	}

	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			s := newSrc(b)
			b.StartTimer()
			fetch(b, s, "")
		}
	})
	b.Run("mirror", func(b *testing.B) {
		b.ReportAllocs()
		s := newSrc(b)
		head, err := s.Head(ctx)
		if err != nil {
			b.Fatal(err)
		}
		fetch(b, s, head)
		for b.Loop() {
			fetch(b, s, head)
		}
	})
	b.Run("one-file", func(b *testing.B) {
		b.ReportAllocs()
		s := newSrc(b)
		fetch(b, s, "")
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			rev := r.commit(map[string]string{"manifests/team-00/db-00000.yaml": fmt.Sprintf("changed: %d\n", i)})
			b.StartTimer()
			fetch(b, s, rev)
		}
	})
	b.Run("head", func(b *testing.B) {
		b.ReportAllocs()
		s := newSrc(b)
		for b.Loop() {
			if _, err := s.Head(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
