package manifest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/cputime"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/sources"
)

// rulesType is dbType with two x-trueup-validations rules on the spec, for the cost of CEL.
var rulesType = strings.Replace(dbType, "        required: [engine, storage_gb]\n", `        required: [engine, storage_gb]
        x-trueup-validations:
          - {rule: "self.engine != 'mysql' || self.storage_gb >= 20", message: "mysql needs 20 GB"}
          - {rule: "self.tags.all(t, t.size() <= 63)", message: "tags are at most 63 characters", fieldPath: ".tags"}
`, 1)

// repo10kOf returns a repository of one type and 10,000 resources in 100 files, with a
// second version of file 0 in which one resource changed.
func repo10kOf(typeYAML string) (all []sources.File, changed sources.File) {
	return repoOf(typeYAML, 100)
}

// repoOf is repo10kOf with n files of 100 resources.
func repoOf(typeYAML string, n int) (all []sources.File, changed sources.File) {
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
	pairs := []string{"types.yaml", typeYAML}
	for f := range n {
		pairs = append(pairs, fmt.Sprintf("apps/%02d.yaml", f), resourceFile(f, 100))
	}
	return files(pairs...), files("apps/00.yaml", resourceFile(0, 200))[0]
}

// BenchmarkLoad10k is a first sync: nothing cached.
func BenchmarkLoad10k(b *testing.B) { benchLoad(b, dbType) }

// BenchmarkLoad10kRules is a first sync of a type with two CEL rules.
func BenchmarkLoad10kRules(b *testing.B) { benchLoad(b, rulesType) }

func benchLoad(b *testing.B, typeYAML string) {
	fs, _ := repo10kOf(typeYAML)
	b.ReportAllocs()
	defer reportCPU(b, cputime.Self())
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
func BenchmarkLoad10kOneChanged(b *testing.B) { benchOneChanged(b, dbType, 100, Options{}) }

// BenchmarkLoad10kOneChangedRules is that push with a type of two CEL rules.
func BenchmarkLoad10kOneChangedRules(b *testing.B) { benchOneChanged(b, rulesType, 100, Options{}) }

// BenchmarkLoad100kOneChanged is that push to a repository of 100,000 resources: what
// grows with the revision rather than with the change.
func BenchmarkLoad100kOneChanged(b *testing.B) { benchOneChanged(b, dbType, 1000, Options{}) }

// BenchmarkLoad100kOneChangedReuse is that push loaded as a syncer loads (Options.ReuseSet):
// the changed resources are written into the last Set.
func BenchmarkLoad100kOneChangedReuse(b *testing.B) {
	benchOneChanged(b, dbType, 1000, Options{ReuseSet: true})
}

// BenchmarkLoad100kOneChangedAtRest is that push to a source at rest: the last Set was
// encoded once handed back (compactAfter), and the load decodes it.
func BenchmarkLoad100kOneChangedAtRest(b *testing.B) {
	fs, changed := repoOf(dbType, 1000)
	benchAlternateWith(b, fs, changed, Options{}, Options{ReuseSet: true}, func(l *Loader) { l.compactAfter = 0 })
}

// BenchmarkLoad100kOneChangedPacked is that push loaded as the syncer loads (Options.Packed):
// the basis stays encoded, and only the chunks that hold the changed file's resources are
// decoded and encoded again.
func BenchmarkLoad100kOneChangedPacked(b *testing.B) {
	fs, changed := repoOf(dbType, 1000)
	opts := Options{ReuseSet: true, Packed: true}
	benchAlternateWith(b, fs, changed, opts, opts, func(*Loader) {})
}

// BenchmarkLoad100kOneAddedReuse is a push that adds a resource to one file of 100,000, and
// the next one that removes it, loaded as a syncer loads: the others move aside in the last
// Set.
func BenchmarkLoad100kOneAddedReuse(b *testing.B) {
	fs, _ := repoOf(dbType, 1000)
	added := string(fs[1].Data) + "---\napiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: db-added, namespace: team-0}\n" +
		"spec: {engine: postgres, storage_gb: 50, tags: [a], backup: {window: \"01:00\"}}\n"
	benchAlternate(b, fs, files(fs[1].Path, added)[0], Options{ReuseSet: true})
}

// BenchmarkLoad100kOneAddedReuseDeps is BenchmarkLoad100kOneAddedReuse in a revision where a
// resource has a dependency: the cycle check walks every resource, the Set is not copied.
func BenchmarkLoad100kOneAddedReuseDeps(b *testing.B) {
	fs, _ := repoOf(dbType, 1000)
	fs[2] = files(fs[2].Path, string(fs[2].Data)+"---\napiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: db-1-dep, namespace: team-1}\n"+
		"dependsOn: [{kind: DatabaseCluster, name: db-1-0}]\nspec: {engine: postgres, storage_gb: 50, tags: [a], backup: {window: \"01:00\"}}\n")[0]
	added := string(fs[1].Data) + "---\napiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: db-added, namespace: team-0}\n" +
		"spec: {engine: postgres, storage_gb: 50, tags: [a], backup: {window: \"01:00\"}}\n"
	benchAlternate(b, fs, files(fs[1].Path, added)[0], Options{ReuseSet: true})
}

func benchOneChanged(b *testing.B, typeYAML string, files int, opts Options) {
	fs, changed := repoOf(typeYAML, files)
	benchAlternate(b, fs, changed, opts)
}

// benchAlternate loads fs, then, timed, fs with changed in place of its second file and fs
// again, in turns.
func benchAlternate(b *testing.B, fs []sources.File, changed sources.File, opts Options) {
	benchAlternateWith(b, fs, changed, Options{}, opts, func(*Loader) {})
}

// benchAlternateWith is benchAlternate with a Loader that set configures, whose untimed first
// load of fs takes first (its Set is handed back when packed).
func benchAlternateWith(b *testing.B, fs []sources.File, changed sources.File, first, opts Options, set func(*Loader)) {
	alt := append([]sources.File(nil), fs...)
	alt[1] = changed
	l := NewLoader()
	set(l)
	if s, err := l.Load(fs, first); err != nil {
		b.Fatal(err)
	} else if s.Packed() {
		l.Release(s)
	}
	b.ReportAllocs()
	defer reportCPU(b, cputime.Self())
	i := 0
	for b.Loop() {
		in := fs
		if i%2 == 0 {
			in = alt
		}
		i++
		set, err := l.Load(in, opts)
		if err != nil {
			b.Fatal(err)
		}
		l.Release(set)
	}
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cputime.Self()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkLoadResourceSet100k is a first sync of one ResourceSet generating 100,000
// resources (resourceset_expand_100k of make bench).
func BenchmarkLoadResourceSet100k(b *testing.B) {
	fs := files(manifesttest.Fleet(1000, 100)...)
	b.ReportAllocs()
	defer reportCPU(b, cputime.Self())
	for b.Loop() {
		set, err := NewLoader().Load(fs, Options{Limits: Limits{MaxResourcesPerSet: 100_000}})
		if err != nil {
			b.Fatal(err)
		}
		if len(set.Resources) != 100_100 {
			b.Fatalf("got %d resources", len(set.Resources))
		}
	}
}
