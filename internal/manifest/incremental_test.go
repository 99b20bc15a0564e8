package manifest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/sources"
)

// TestIncrementalMatchesFull: a Loader that loads revisions one after another (from its
// basis when it can) gives, at every step, the Set or the problems a fresh Loader gives for
// the same files. The revisions come from random sequences of files added, changed (specs,
// labels, dependencies, duplicates, invalid values), removed and renamed, with a type change,
// an encrypted file and a rendered file now and then; resources of two kinds that differ
// only in case, which the dependency graph takes for one.
func TestIncrementalMatchesFull(t *testing.T) {
	t.Parallel()
	var incrementals, inPlace, unread, refetched, packed atomic.Int64
	t.Cleanup(func() {
		if packed.Load() == 0 {
			t.Error("no incremental load started from a basis kept encoded (compactResources)")
		}
		if unread.Load() == 0 || refetched.Load() == 0 {
			t.Errorf("%d loads with unread files were incremental, %d loaded again: want some of each", unread.Load(), refetched.Load())
		}
		if inPlace.Load() == 0 {
			t.Error("no load wrote into the last Set")
		}
		if incrementals.Load() < 200 {
			t.Errorf("%d loads were incremental, want most of those not rejected", incrementals.Load())
		}
	})
	// Seeds from 40 on load with a Loader that keeps no parsed documents once it has a
	// basis (defaultKeepDocuments): its full loads parse every file again, its incremental
	// ones find dropped files' resources in the basis's Set, or, once a Set is handed back,
	// in its resources encoded.
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 26))
			repo := map[string]sources.File{}
			put := func(path, data string) {
				repo[path] = sources.File{Path: path, Hash: hashJSON([]byte(data)), Data: []byte(data)}
			}
			typeYAML := dbType
			if seed%3 == 2 {
				typeYAML = rulesType // rules whose costs add up over the revision
			}
			// A kind of another case: the dependency graph knows kinds case-insensitively.
			typeYAML += "---\n" + strings.ReplaceAll(dbType, "DatabaseCluster", "DatabaseCLUSTER")
			put("types.yaml", typeYAML)
			for f := range 6 {
				put(fmt.Sprintf("apps/%d.yaml", f), randomResources(rng, f))
			}
			opts := Options{ReuseSet: seed%4 < 2}
			encrypted := map[string]bool{} // the caller rewrites these files' resources
			if seed%2 == 1 {
				// A grant refuses one direction across namespaces.
				opts.CheckReference = func(from string, target graph.ID, _ []string) error {
					if from == "ns-1" && target.Namespace == "ns-0" && target.Name == "db-1-0" {
						return errors.New("no grant")
					}
					return nil
				}
			}
			l := NewLoader()
			if seed >= 40 {
				l.keepDocuments, l.compactAfter = 0, 0
			}
			if seed%6 == 5 {
				l.revisionBudget = 3000 // some revisions go over it
			}
			fast, failed := 0, 0
			handed := false // the last Set was handed back (Release)
			for step := range 60 {
				switch op := rng.IntN(20); {
				case op < 10: // a file changes
					f := rng.IntN(8)
					put(fmt.Sprintf("apps/%d.yaml", f), randomResources(rng, f))
				case op < 12: // a file goes
					delete(repo, fmt.Sprintf("apps/%d.yaml", rng.IntN(8)))
				case op < 14: // a file moves
					from, to := fmt.Sprintf("apps/%d.yaml", rng.IntN(8)), fmt.Sprintf("apps/%d.yaml", rng.IntN(8))
					if f, ok := repo[from]; ok {
						delete(repo, from)
						f.Path = to
						repo[to] = f
						encrypted[to] = encrypted[from]
						delete(encrypted, from)
					}
				case op < 15: // the type changes, or changes back
					min := []string{"10", "11", "12"}[rng.IntN(3)]
					put("types.yaml", strings.Replace(typeYAML, "minimum: 10,", "minimum: "+min+",", 1))
				case op < 16: // a file is encrypted (its resources are redacted by the caller)
					for _, p := range slices.Sorted(maps.Keys(repo)) {
						if p != "types.yaml" && !encrypted[p] {
							encrypted[p] = true
							break
						}
					}
				case op < 17: // a file is rendered by a kustomization
					for _, p := range rotate(slices.Sorted(maps.Keys(repo)), rng.IntN(8)) {
						if f := repo[p]; p != "types.yaml" {
							f.RenderedBy = []string{"", "k/a.yaml", "k/b.yaml"}[rng.IntN(3)]
							repo[p] = f
							break
						}
					}
				case op < 18: // a file with a type of its own comes, or goes
					if _, ok := repo["apps/extra-type.yaml"]; ok {
						delete(repo, "apps/extra-type.yaml")
					} else {
						put("apps/extra-type.yaml", strings.ReplaceAll(dbType, "DatabaseCluster", "Other"))
					}
				default: // nothing changes
				}
				fs := slices.Collect(maps.Values(repo))
				slices.SortFunc(fs, func(a, b sources.File) int { return strings.Compare(a.Path, b.Path) })
				rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
				before := l.incrementals
				var last *Resource
				fromPacked := l.last != nil && l.last.packed != nil
				if l.last != nil && l.last.set != nil && len(l.last.set.Resources) > 0 {
					last = &l.last.set.Resources[0]
				}
				opts.Rewritten = maps.Clone(encrypted)
				// As a folder source's partial fetch: most files the loader holds come
				// unread; a load that needs them is made again with every file read.
				partial, left := slices.Clone(fs), 0
				for i, f := range partial {
					if !encrypted[f.Path] && l.Holds(f.Path, f.Hash) && rng.IntN(4) > 0 {
						partial[i].Data, partial[i].Unread = nil, true
						left++
					}
				}
				got, gotErr := l.Load(partial, opts)
				if errors.Is(gotErr, ErrUnread) {
					refetched.Add(1)
					got, gotErr = l.Load(fs, opts)
				} else if left > 0 && l.incrementals > before {
					unread.Add(1)
				}
				if got != nil && len(got.Resources) > 0 && &got.Resources[0] == last {
					if !opts.ReuseSet || !handed {
						t.Fatalf("step %d: the last Set was changed in place without ReuseSet and its Release", step)
					}
					inPlace.Add(1)
				}
				if got != nil {
					handed = false // a failed load leaves the basis handed back
				}
				if l.incrementals > before {
					fast++
					if fromPacked {
						packed.Add(1)
					}
				}
				cold := NewLoader()
				cold.revisionBudget = l.revisionBudget
				want, wantErr := cold.Load(fs, opts)
				if wantErr != nil {
					failed++
				}
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("step %d: problems\n%v\nwant\n%v", step, gotErr, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: Set differs from a full load's:\n%s", step, setDiff(got, want))
				}
				if got != nil {
					// The caller redacts encrypted files' resources (sealed.Revision.Redact).
					for i := range got.Resources {
						if encrypted[got.Resources[i].File] {
							got.Resources[i].Spec = []byte(`{"redacted":true}`)
						}
					}
					if rng.IntN(4) > 0 {
						l.Release(got) // mostly handed back
						handed = true
					}
				}
			}
			t.Logf("%d loads, %d incremental, %d rejected", 60, fast, failed)
			incrementals.Add(int64(fast))
		})
	}
}

// randomResources is file f's content: a few resources whose names may clash with another
// file's, whose values may be invalid, and which may depend on each other (in cycles too).
func randomResources(rng *rand.Rand, f int) string {
	var b strings.Builder
	for k := range rng.IntN(5) {
		name := fmt.Sprintf("db-%d-%d", f, k)
		if rng.IntN(30) == 0 {
			name = fmt.Sprintf("db-%d-0", rng.IntN(6)) // perhaps another file's
		}
		storage := 12 + rng.IntN(200)
		if rng.IntN(30) == 0 {
			storage = 5 // under the minimum
		}
		fmt.Fprintf(&b, "---\napiVersion: example.com/v1\nkind: %s\nmetadata: {name: %s, namespace: ns-%d, labels: {team: t%d}}\n",
			caseKind(rng), name, rng.IntN(2), rng.IntN(3))
		if rng.IntN(4) == 0 {
			// Mostly on an earlier file's, which makes no cycle.
			target := rng.IntN(f + 1)
			if rng.IntN(10) == 0 {
				target = rng.IntN(8)
			}
			fmt.Fprintf(&b, "dependsOn: [{kind: %s, name: db-%d-0, namespace: ns-%d}]\n", caseKind(rng), target, rng.IntN(2))
		}
		fmt.Fprintf(&b, "spec: {engine: postgres, storage_gb: %d, tags: [a, b]}\n", storage)
	}
	return b.String()
}

// caseKind is mostly DatabaseCluster, now and then the kind of the other case.
func caseKind(rng *rand.Rand) string {
	if rng.IntN(4) == 0 {
		return "DatabaseCLUSTER"
	}
	return "DatabaseCluster"
}

// setDiff names the first difference between two Sets.
func setDiff(got, want *Set) string {
	if got == nil || want == nil {
		return fmt.Sprintf("%v vs %v", got, want)
	}
	if len(got.Resources) != len(want.Resources) {
		return fmt.Sprintf("%d resources, want %d", len(got.Resources), len(want.Resources))
	}
	for i := range got.Resources {
		if !reflect.DeepEqual(got.Resources[i], want.Resources[i]) {
			return fmt.Sprintf("resource %d: %+v\nwant %+v", i, got.Resources[i], want.Resources[i])
		}
	}
	return fmt.Sprintf("%+v\nwant %+v", got, want)
}

// rotate is s from index k on, then the rest.
func rotate(s []string, k int) []string {
	if len(s) == 0 {
		return s
	}
	k %= len(s)
	return append(s[k:], s[:k]...)
}

// TestReviewCaseCycle: the dependency graph knows kinds case-insensitively, so resources of
// kinds DB and Db of one name are one node, the first's. A revision that removes the first
// hands the node to the other, whose dependencies close a cycle; the incremental load
// reports it as a full load does, though no resource it builds has dependencies.
func TestReviewCaseCycle(t *testing.T) {
	t.Parallel()
	types := strings.ReplaceAll(dbType, "DatabaseCluster", "DB") + "---\n" + strings.ReplaceAll(dbType, "DatabaseCluster", "Db")
	res := func(kind, name, deps string) string {
		return fmt.Sprintf("apiVersion: example.com/v1\nkind: %s\nmetadata: {name: %s, namespace: n}\n%sspec: {engine: postgres, storage_gb: 20}\n", kind, name, deps)
	}
	b := res("Db", "a", "dependsOn: [{kind: DB, name: r, namespace: n}]\n")
	c := res("DB", "r", "dependsOn: [{kind: DB, name: a, namespace: n}]\n")
	l := NewLoader()
	if _, err := l.Load(files("types.yaml", types, "a.yaml", res("DB", "a", ""), "b.yaml", b, "c.yaml", c), Options{}); err != nil {
		t.Fatal(err)
	}
	next := files("types.yaml", types, "a.yaml", res("DB", "z", ""), "b.yaml", b, "c.yaml", c)
	_, want := NewLoader().Load(next, Options{})
	if want == nil || !strings.Contains(want.Error(), "dependency cycle") {
		t.Fatalf("a full load: %v, want a dependency cycle", want)
	}
	if _, err := l.Load(next, Options{}); fmt.Sprint(err) != fmt.Sprint(want) {
		t.Errorf("after the first revision: %v\nwant %v", err, want)
	}
	// The same with each Set handed back: the rejected revision leaves the basis, from which
	// the first revision loads again.
	l = NewLoader()
	first := files("types.yaml", types, "a.yaml", res("DB", "a", ""), "b.yaml", b, "c.yaml", c)
	opts := Options{ReuseSet: true}
	set, err := l.Load(first, opts)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(set)
	if _, err := l.Load(next, opts); fmt.Sprint(err) != fmt.Sprint(want) {
		t.Errorf("handed back, after the first revision: %v\nwant %v", err, want)
	}
	got, err := l.Load(first, opts)
	if wantSet, _ := NewLoader().Load(first, Options{}); err != nil || !reflect.DeepEqual(got, wantSet) {
		t.Errorf("the first revision again: %v; Set differs from a full load's:\n%s", err, setDiff(got, wantSet))
	}
}

// TestLoadLeavesEarlierSet: a load, incremental or full, leaves a Set returned before as it
// was, though the two share resources, unless the Set was handed back (Release) for a load
// with ReuseSet.
func TestLoadLeavesEarlierSet(t *testing.T) {
	t.Parallel()
	db := func(name string, storage int) string {
		return fmt.Sprintf("apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: %s, labels: {team: a}}\nspec: {engine: postgres, storage_gb: %d}\n", name, storage)
	}
	revs := [][]sources.File{
		files("types.yaml", dbType, "a.yaml", db("a", 20), "b.yaml", db("b", 20)),
		files("types.yaml", dbType, "a.yaml", db("a", 30), "b.yaml", db("b", 20)),                                                     // same identities
		files("types.yaml", dbType, "a.yaml", db("c", 30), "b.yaml", db("b", 20)),                                                     // another identity
		files("types.yaml", strings.Replace(dbType, "minimum: 10,", "minimum: 11,", 1), "a.yaml", db("c", 30), "b.yaml", db("b", 20)), // in full
	}
	// ReuseSet without Release: the Sets were not handed back.
	for _, opts := range []Options{{}, {ReuseSet: true}} {
		l := NewLoader()
		var held []*Set
		var copies []string
		for i, fs := range revs {
			before := l.incrementals
			set, err := l.Load(fs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if (i == 1 || i == 2) && l.incrementals == before {
				t.Errorf("load %d was not incremental", i)
			}
			for j, h := range held {
				if got, _ := json.Marshal(h); string(got) != copies[j] {
					t.Errorf("%+v: load %d changed the Set of load %d:\n%s\nwas\n%s", opts, i, j, got, copies[j])
				}
			}
			c, _ := json.Marshal(set)
			held, copies = append(held, set), append(copies, string(c))
		}
	}
}

// mergeInPlace gives what mergeResources gives, in kept's own array when it has room, and
// leaves kept as it was when it has none.
func TestMergeInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 26))
	res := func(ns, name string) Resource {
		return Resource{Namespace: ns, Kind: "K", Name: name, SpecHash: ns + name}
	}
	for round := range 2000 {
		var universe []Resource
		for _, ns := range []string{"a", "b", "c"} {
			for i := range rng.IntN(12) {
				universe = append(universe, res(ns, fmt.Sprintf("n%02d", i)))
			}
		}
		var kept, others []Resource
		for _, r := range universe {
			if rng.IntN(2) == 0 {
				kept = append(kept, r)
			} else {
				others = append(others, r)
			}
		}
		var gone []int
		var made []Resource
		for i, r := range kept {
			if rng.IntN(4) == 0 {
				gone = append(gone, i)
				if rng.IntN(2) == 0 {
					r.SpecHash += "'"
					made = append(made, r) // the same identity, made again
				}
			}
		}
		for _, r := range others {
			if rng.IntN(3) == 0 {
				made = append(made, r)
			}
		}
		slices.SortFunc(made, func(x, y Resource) int {
			return cmp.Or(strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name))
		})
		want := mergeResources(slices.Clone(kept), gone, made, false)
		room := slices.Grow(slices.Clone(kept), rng.IntN(4))
		before := slices.Clone(room)
		got, ok := mergeInPlace(room, gone, made)
		if len(want) > cap(room) || len(want) < len(room)/2 {
			if ok || !slices.EqualFunc(room, before, func(x, y Resource) bool { return reflect.DeepEqual(x, y) }) {
				t.Fatalf("round %d: no room (or less than half kept), but merged (%v) or changed kept", round, ok)
			}
			continue
		}
		if !ok || len(got) != len(want) || len(got) > 0 && (!reflect.DeepEqual(got, want) || &got[0] != &room[:1][0]) {
			t.Fatalf("round %d: kept %v gone %v made %v:\n got %v (%v)\nwant %v", round, kept, gone, made, got, ok, want)
		}
		if tail := room[len(got):cap(room)][:max(0, len(room)-len(got))]; slices.ContainsFunc(tail, func(r Resource) bool { return r.Name != "" }) {
			t.Fatalf("round %d: the tail a shrink left holds %v", round, tail)
		}
	}
}

// A syncer's loads (ReuseSet, each Set handed back) that add a resource to a file and then
// remove it write into the last Set's array, and give what a full load gives.
func TestIncrementalAddRemoveInPlace(t *testing.T) {
	fs, _ := repoOf(dbType, 10)
	added := append([]sources.File(nil), fs...)
	added[1] = files(fs[1].Path, string(fs[1].Data)+"---\napiVersion: example.com/v1\nkind: DatabaseCluster\n"+
		"metadata: {name: db-0-added, namespace: team-0}\nspec: {engine: postgres, storage_gb: 50, tags: [a], backup: {window: \"01:00\"}}\n")[0]
	l := NewLoader()
	opts := Options{ReuseSet: true}
	set, err := l.Load(fs, opts)
	if err != nil {
		t.Fatal(err)
	}
	for step, in := range [][]sources.File{added, fs, added} {
		first := &set.Resources[0]
		l.Release(set)
		if set, err = l.Load(in, opts); err != nil {
			t.Fatal(err)
		}
		want, err := NewLoader().Load(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(set, want) {
			t.Fatalf("step %d: Set differs from a full load's:\n%s", step, setDiff(set, want))
		}
		if &set.Resources[0] != first {
			t.Fatalf("step %d: %d resources copied, not moved in place", step, len(set.Resources))
		}
	}
}

// TestLoaderWithoutDocuments: past keepDocuments resources the Loader drops the parsed
// documents of its basis. A revision that changes files of resources still loads from the
// basis (files the source leaves unread included); one with a problem is reported by a full
// load and leaves the basis, so that the revision fixing it loads from the basis again; a
// type change parses every file again. Each Set is the one a fresh Loader gives.
func TestLoaderWithoutDocuments(t *testing.T) {
	t.Parallel()
	db := func(name string, storage int) string {
		return fmt.Sprintf("---\napiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: %s, namespace: ns}\nspec: {engine: postgres, storage_gb: %d}\n", name, storage)
	}
	l := NewLoader()
	l.keepDocuments = 2 // the revisions hold three resources or more
	steps := []struct {
		name        string
		files       []sources.File
		incremental bool
		problems    []string
	}{
		{"first", files("types.yaml", dbType, "a.yaml", db("a", 20), "b.yaml", db("b", 30)+db("b2", 31)), false, nil},
		{"a file changes", files("types.yaml", dbType, "a.yaml", db("a", 21), "b.yaml", db("b", 30)+db("b2", 31)), true, nil},
		{"a problem", files("types.yaml", dbType, "a.yaml", db("a", 5), "b.yaml", db("b", 30)+db("b2", 31)), false,
			[]string{"a.yaml:5: spec.storage_gb: must be >= 10 but found 5"}},
		{"fixed", files("types.yaml", dbType, "a.yaml", db("a", 22), "b.yaml", db("b", 30)+db("b2", 31)), true, nil},
		{"a file goes, one comes", files("types.yaml", dbType, "a.yaml", db("a", 22), "c.yaml", db("c", 40)+db("c2", 41)), true, nil},
		{"the type changes", files("types.yaml", strings.Replace(dbType, "default: 1}", "default: 3}", 1), "a.yaml", db("a", 22), "c.yaml", db("c", 40)+db("c2", 41)), false, nil},
		{"a file changes again", files("types.yaml", strings.Replace(dbType, "default: 1}", "default: 3}", 1), "a.yaml", db("a", 23), "c.yaml", db("c", 40)+db("c2", 41)), true, nil},
	}
	for _, st := range steps {
		before := l.incrementals
		// As a folder source's partial fetch: the files the Loader holds come unread.
		partial := slices.Clone(st.files)
		for i, f := range partial {
			if l.Holds(f.Path, f.Hash) {
				partial[i].Data, partial[i].Unread = nil, true
			}
		}
		got, err := l.Load(partial, Options{})
		if errors.Is(err, ErrUnread) {
			if errors.Is(err, ErrDataNeeded) {
				t.Fatalf("%s: files left unread, without DropData: %v, want ErrUnread alone", st.name, err)
			}
			got, err = l.Load(st.files, Options{})
		}
		if inc := l.incrementals > before; inc != st.incremental {
			t.Errorf("%s: incremental %t, want %t", st.name, inc, st.incremental)
		}
		if gotProblems := problems(t, err); !reflect.DeepEqual(gotProblems, st.problems) {
			t.Fatalf("%s: problems %q, want %q", st.name, gotProblems, st.problems)
		}
		want, _ := NewLoader().Load(st.files, Options{})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Set differs from a fresh Loader's:\n%s", st.name, setDiff(got, want))
		}
		if len(l.files) != 0 || l.sorted != nil {
			t.Errorf("%s: the Loader holds %d files' documents and %d sorted, want none", st.name, len(l.files), len(l.sorted))
		}
		if l.last == nil {
			t.Fatalf("%s: no basis", st.name)
		}
	}
}

// TestFailedLoadDropsDocuments: a full load that fails past keepDocuments documents leaves
// none of them in the Loader, though the basis it leaves is small (a repository that grows
// past the limit in a revision with a problem, or over a cap).
func TestFailedLoadDropsDocuments(t *testing.T) {
	t.Parallel()
	db := func(name string, storage int) string {
		return fmt.Sprintf("---\napiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: %s, namespace: ns}\nspec: {engine: postgres, storage_gb: %d}\n", name, storage)
	}
	l := NewLoader()
	l.keepDocuments = 5
	first, err := l.Load(files("types.yaml", dbType, "a.yaml", db("a", 20)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var big strings.Builder
	for i := range 200 {
		big.WriteString(db(fmt.Sprintf("b%d", i), 20))
	}
	big.WriteString(db("bad", 5))
	for _, opts := range []Options{{}, {Limits: Limits{MaxResources: 50}}} {
		if _, err := l.Load(files("types.yaml", strings.Replace(dbType, "minimum: 10,", "minimum: 11,", 1), "a.yaml", db("a", 20), "b.yaml", big.String()), opts); err == nil {
			t.Fatal("want a problem")
		}
		if len(l.files) != 0 || l.sorted != nil || l.last == nil || l.last.set != first {
			t.Errorf("%+v: the Loader holds %d files' documents and %d sorted (basis kept: %t), want none and the first basis",
				opts.Limits, len(l.files), len(l.sorted), l.last != nil && l.last.set == first)
		}
	}
}

// With dependencies in the Set, loads that add, change or remove resources write into the
// last Set's array as without them; one whose resources close a cycle (new ones, or the same
// ones changed) is rejected as a full load rejects it and leaves the basis as it was.
func TestIncrementalInPlaceWithDependencies(t *testing.T) {
	t.Parallel()
	fs, _ := repoOf(dbType, 10)
	res := func(name, dep string, storage int) string {
		deps := ""
		if dep != "" {
			deps = "dependsOn: [{kind: DatabaseCluster, name: " + dep + "}]\n"
		}
		return fmt.Sprintf("---\napiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata:\n  name: %s\n  namespace: team-2\n%s"+
			"spec: {engine: postgres, storage_gb: %d, tags: [a], backup: {window: \"01:00\"}}\n", name, deps, storage)
	}
	with := func(add string) []sources.File {
		out := append([]sources.File(nil), fs...)
		out[3] = files(fs[3].Path, string(fs[3].Data)+add)[0] // apps/02.yaml
		return out
	}
	dep := res("db-2-dep", "db-2-0", 50) + res("db-2-top", "db-2-dep", 50)
	base := with(dep)
	steps := []struct {
		name    string
		in      []sources.File
		inPlace bool // else rejected
	}{
		{"a resource added", with(dep + res("db-2-added", "", 50)), true},
		{"a resource removed", base, true},
		{"a resource with a dependency changed", with(res("db-2-dep", "db-2-0", 60) + res("db-2-top", "db-2-dep", 50)), true},
		{"resources added in a cycle", with(dep + res("db-2-x", "db-2-y", 50) + res("db-2-y", "db-2-x", 50)), false},
		{"the same resources changed into a cycle", with(res("db-2-dep", "db-2-top", 50) + res("db-2-top", "db-2-dep", 50)), false},
		{"the revision before the cycles", base, true},
	}
	l := NewLoader()
	opts := Options{ReuseSet: true}
	set, err := l.Load(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range steps {
		first, before := &set.Resources[0], l.incrementals
		l.Release(set)
		got, err := l.Load(step.in, opts)
		want, wantErr := NewLoader().Load(step.in, Options{})
		if !step.inPlace {
			if wantErr == nil || !strings.Contains(wantErr.Error(), "dependency cycle") || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("%s: %v\nwant %v, a dependency cycle", step.name, err, wantErr)
			}
			continue
		}
		if err != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %v, %v; Set differs from a full load's:\n%s", step.name, err, wantErr, setDiff(got, want))
		}
		if l.incrementals != before+1 {
			t.Fatalf("%s: loaded in full", step.name)
		}
		if &got.Resources[0] != first {
			t.Fatalf("%s: %d resources copied, not written into the last Set", step.name, len(got.Resources))
		}
		set = got
	}
}

// mergedGraphNodes gives the nodes of the merged resources in their merged order, which the
// graph's first-of-a-key rule depends on (kinds compare case-insensitively).
func TestMergedGraphNodes(t *testing.T) {
	t.Parallel()
	r := func(kind, name string, deps ...string) Resource {
		res := Resource{Namespace: "n", Kind: kind, Name: name, File: name + ".yaml"}
		for _, d := range deps {
			res.DependsOn = append(res.DependsOn, Dependency{Target: graph.ID{Namespace: "n", Kind: kind, Name: d}})
		}
		return res
	}
	kept := []Resource{r("DB", "a", "b"), r("DB", "c"), r("Db", "a"), r("Db", "m", "a"), r("Db", "z")}
	cases := []struct {
		name string
		gone []int
		made []Resource
	}{
		{"nothing changes", nil, nil},
		{"one added in the middle", nil, []Resource{r("DB", "b", "c")}},
		{"one before all, one after all", nil, []Resource{r("A", "x"), r("Z", "y", "x")}},
		{"one removed, one in its place", []int{1}, []Resource{r("DB", "c", "a")}},
		{"the first of a key removed", []int{0}, nil},
		{"several removed and added", []int{0, 2, 4}, []Resource{r("DB", "a"), r("Db", "b", "m"), r("Db", "zz")}},
	}
	for _, tc := range cases {
		merged := mergeResources(kept, tc.gone, tc.made, false)
		want := graphNodesOf(len(merged), iterResources(merged))
		if got := mergedGraphNodes(kept, tc.gone, tc.made); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
}
