package gitsource

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
)

func TestLargeBlobRefusedBeforeReading(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	const blobSize = 20 << 20
	r := newTestRepo(t)
	rev := r.commit(map[string]string{
		"m/a.yaml":   "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: a}\n",
		"m/big.yaml": "a: |\n" + strings.Repeat("  0123456789abcdef0123456789abcdef\n", blobSize/35),
	})
	dir := filepath.Join(t.TempDir(), "mirror")
	ctx := testContext(t)
	s := newSource(t, Config{URL: r.dir, Path: "m", Dir: dir})
	if _, err := s.Fetch(ctx, rev); err != nil { // clones the mirror
		t.Fatalf("Fetch: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A restarted process reads the snapshot from the mirror, with no blob cached.
	restarted := newSource(t, Config{URL: r.dir, Path: "m", Dir: dir})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	snap, err := restarted.Fetch(ctx, rev)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("20 MiB blob: %d KiB allocated", alloc>>10)
	if alloc > blobSize/4 {
		t.Errorf("allocated %d KiB reading a snapshot with a %d MiB blob: the blob was read", alloc>>10, blobSize>>20)
	}
	_, err = manifest.NewLoader().Load(snap.Files, manifest.Options{})
	if err == nil || !strings.Contains(err.Error(), "m/big.yaml: file is") || !strings.Contains(err.Error(), "larger than the 1 MiB limit") {
		t.Errorf("Load: %v, want m/big.yaml refused", err)
	}
}
