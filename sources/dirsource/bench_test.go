package dirsource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkDir10k measures Head (stat cache warm) and Fetch over 10,000 manifests.
func BenchmarkDir10k(b *testing.B) {
	dir := b.TempDir()
	old := time.Now().Add(-time.Hour) // older than the racy window: the stat cache applies
	for i := range 10_000 {
		p := filepath.Join(dir, fmt.Sprintf("team-%02d", i%100), fmt.Sprintf("db-%05d.yaml", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "kind: DatabaseCluster\nmetadata: {name: db-%05d}\nspec: {storage_gb: %d}\n", i, i), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	src, err := New(Config{Path: dir}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("head", func(b *testing.B) {
		if _, err := src.Head(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := src.Head(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fetch", func(b *testing.B) {
		for b.Loop() {
			snap, err := src.Fetch(ctx, "")
			if err != nil || len(snap.Files) != 10_000 {
				b.Fatal(err)
			}
		}
	})
}
