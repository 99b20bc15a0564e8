package manifest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/sources"
)

// repo10k returns a repository of one type and 10,000 resources in 100 files, with a
// second version of file 0 in which one resource changed.
func repo10k() (all []sources.File, changed sources.File) {
	resourceFile := func(f int, storage int) string {
		var b strings.Builder
		for r := range 100 {
			fmt.Fprintf(&b, `---
apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: db-%d-%d
  namespace: team-%d
  labels: {team: team-%d, tier: gold}
spec:
  engine: postgres
  storage_gb: %d
  tags: [a, b]
  backup: {window: "01:00"}
`, f, r, f%10, f%10, storage+r)
		}
		return b.String()
	}
	pairs := []string{"types.yaml", dbType}
	for f := range 100 {
		pairs = append(pairs, fmt.Sprintf("apps/%02d.yaml", f), resourceFile(f, 100))
	}
	return files(pairs...), files("apps/00.yaml", resourceFile(0, 200))[0]
}

// BenchmarkLoad10k is a first sync: nothing cached.
func BenchmarkLoad10k(b *testing.B) {
	fs, _ := repo10k()
	b.ReportAllocs()
	for b.Loop() {
		set, err := NewLoader().Load(fs, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(set.Resources) != 10_000 {
			b.Fatalf("got %d resources", len(set.Resources))
		}
	}
}

// BenchmarkLoad10kOneChanged is a push that changes one file of a synced repository.
func BenchmarkLoad10kOneChanged(b *testing.B) {
	fs, changed := repo10k()
	alt := append([]sources.File(nil), fs...)
	alt[1] = changed
	l := NewLoader()
	if _, err := l.Load(fs, Options{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		in := fs
		if i%2 == 0 {
			in = alt
		}
		i++
		if _, err := l.Load(in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
