package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/changeplan"
	"github.com/trueup-dev/trueup/internal/manifest"
)

// fileRevision is a revision of files, each a list of "name=size" widgets, with the files'
// hashes (ApplyParams.Files) made from their content and basis.
func fileRevision(basis string, files map[string][]string) (*manifest.Set, map[string]string) {
	set := &manifest.Set{}
	hashes := map[string]string{changeplan.FilesBasis: basis}
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	})
	for _, path := range paths {
		hashes[path] = strings.Join(files[path], ",")
		for line, w := range files[path] {
			name, size, _ := strings.Cut(w, "=")
			ns, kind := "default", "Widget"
			if parts := strings.Split(name, "/"); len(parts) == 3 { // "namespace/Kind/name"
				ns, kind, name = parts[0], parts[1], parts[2]
			}
			spec := json.RawMessage(fmt.Sprintf(`{"size":%s}`, size))
			set.Resources = append(set.Resources, manifest.Resource{APIVersion: "example.com/v1", Kind: kind, Namespace: ns,
				Name: name, Annotations: map[string]string{}, Spec: spec, SpecHash: string(spec), MetaHash: "m:" + path, File: path, Line: line + 1})
		}
	}
	return set, hashes
}

// rowFiles is name → file_path of the source's rows not being deleted.
func rowFiles(t *testing.T, st *Store, source string) map[string]string {
	t.Helper()
	rows, err := st.pool.Query(context.Background(), `SELECT name, file_path FROM resources WHERE source = $1 AND deletion_timestamp IS NULL`, source)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var name, file string
		if err := rows.Scan(&name, &file); err != nil {
			t.Fatal(err)
		}
		out[name] = file
	}
	rows.Close()
	return out
}

// TestApplyComparesChangedFiles: with the files' hashes an apply compares only the resources
// of the files changed since the last apply (a row of an unchanged file that the database
// holds differently is not rewritten, which a full compare would do), and each kind of file
// change lands as a full compare would land it: a change, a removal, a rename, a resource
// moving between files, a resource deleted earlier declared again elsewhere. A changed basis,
// a changed type, a refused prune or a revision without hashes compares everything.
func TestApplyComparesChangedFiles(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	apply := func(rev, basis string, files map[string][]string, mod func(*ApplyParams)) ApplyResult {
		t.Helper()
		set, hashes := fileRevision(basis, files)
		p := ApplyParams{Source: "s", Revision: rev, Set: set, Files: hashes, Prune: true}
		if mod != nil {
			mod(&p)
		}
		res, err := st.ApplyRevision(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", rev, err)
		}
		return res
	}
	// tamper makes the database hold w's spec as no revision wrote it: only a compare that
	// looks at w rewrites it.
	tamper := func(name string) {
		t.Helper()
		if _, err := st.pool.Exec(ctx, `UPDATE resources SET spec_hash = 'tampered' WHERE name = $1`, name); err != nil {
			t.Fatal(err)
		}
	}
	tampered := func(name string) bool {
		t.Helper()
		var h string
		if err := st.pool.QueryRow(ctx, `SELECT spec_hash FROM resources WHERE name = $1`, name).Scan(&h); err != nil {
			t.Fatal(err)
		}
		return h == "tampered"
	}
	check := func(step string, res, want ApplyResult, files map[string]string) {
		t.Helper()
		res.Refresh = nil
		if !reflect.DeepEqual(res, want) {
			t.Errorf("%s: result %+v, want %+v", step, res, want)
		}
		if got := rowFiles(t, st, "s"); !reflect.DeepEqual(got, files) {
			t.Errorf("%s: rows %v, want %v", step, got, files)
		}
	}

	files := map[string][]string{"a.yaml": {"w1=1", "w2=1"}, "b.yaml": {"w3=1"}, "c.yaml": {"w4=1"}, "d.yaml": {"w5=1"}}
	check("first sync", apply("r1", "k", files, nil), ApplyResult{Created: 5},
		map[string]string{"w1": "a.yaml", "w2": "a.yaml", "w3": "b.yaml", "w4": "c.yaml", "w5": "d.yaml"})

	tamper("w4")
	files["b.yaml"] = []string{"w3=2"}
	check("a file changed", apply("r2", "k", files, nil), ApplyResult{Updated: 1, Unchanged: 4},
		map[string]string{"w1": "a.yaml", "w2": "a.yaml", "w3": "b.yaml", "w4": "c.yaml", "w5": "d.yaml"})
	if !tampered("w4") {
		t.Fatal("a file changed: the row of an unchanged file was compared")
	}

	delete(files, "d.yaml")
	check("a file removed", apply("r3", "k", files, nil), ApplyResult{Deleted: 1, Unchanged: 4},
		map[string]string{"w1": "a.yaml", "w2": "a.yaml", "w3": "b.yaml", "w4": "c.yaml"})

	files["b2.yaml"] = files["b.yaml"]
	delete(files, "b.yaml")
	check("a file renamed", apply("r4", "k", files, nil), ApplyResult{Relabelled: 1, Unchanged: 3},
		map[string]string{"w1": "a.yaml", "w2": "a.yaml", "w3": "b2.yaml", "w4": "c.yaml"})

	files["a.yaml"], files["b2.yaml"] = []string{"w1=1"}, []string{"w3=2", "w2=1"}
	check("a resource moved between files", apply("r5", "k", files, nil), ApplyResult{Relabelled: 1, Unchanged: 3},
		map[string]string{"w1": "a.yaml", "w2": "b2.yaml", "w3": "b2.yaml", "w4": "c.yaml"})

	files["e.yaml"] = []string{"w5=1"}
	check("a resource deleted earlier declared in another file", apply("r6", "k", files, nil), ApplyResult{Updated: 1, Unchanged: 4},
		map[string]string{"w1": "a.yaml", "w2": "b2.yaml", "w3": "b2.yaml", "w4": "c.yaml", "w5": "e.yaml"})
	if !tampered("w4") {
		t.Fatal("the row of an unchanged file was compared")
	}

	// The share guard counts the source's rows, not the changed files': removing a.yaml and
	// b2.yaml (3 of 5) is refused, and the next apply, the same files, compares everything.
	without := map[string][]string{"c.yaml": files["c.yaml"], "e.yaml": files["e.yaml"]}
	res := apply("r7", "k", without, nil)
	if res.PruneSkipped != "TooManyDeletions" || res.Deleted != 0 || !strings.Contains(res.PruneMessage, "would delete 3 of 5 resources") {
		t.Errorf("3 of 5 removed: %+v, want TooManyDeletions of 3 of 5", res)
	}
	if !tampered("w4") {
		t.Fatal("the guard's revision compared the row of an unchanged file")
	}
	// The refusal kept no files: the next apply compares every row, w4's too (rewritten).
	check("after a refused prune", apply("r8", "k", without, func(p *ApplyParams) { p.MaxPruneFraction = 1 }),
		ApplyResult{Deleted: 3, Updated: 1, Unchanged: 1}, map[string]string{"w4": "c.yaml", "w5": "e.yaml"})

	for _, tc := range []struct {
		name string
		mod  func(*ApplyParams)
	}{
		{"the basis changed", nil}, // k to k2
		{"a type changed", func(p *ApplyParams) {
			p.Set.Types = []manifest.ResourceType{{Name: "Widget", Group: "example.com", Hash: "t" + p.Revision, Spec: json.RawMessage(`{}`)}}
		}},
		{"no hashes", func(p *ApplyParams) { p.Files = nil }},
	} {
		tamper("w4")
		apply("r-"+tc.name, "k2", without, tc.mod)
		if tampered("w4") {
			t.Errorf("%s: the row of an unchanged file was not compared", tc.name)
		}
	}
}

// appliedRows is every row of source as the apply leaves it, by name.
func appliedRows(t *testing.T, st *Store, source string) map[string]string {
	t.Helper()
	rows, err := st.pool.Query(context.Background(), `SELECT name, concat_ws(' ', namespace, kind, file_path, file_line, spec_hash, meta_hash, generation,
		deletion_timestamp IS NOT NULL, orphaned, revision, phase) FROM resources WHERE source = $1`, source)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var name, row string
		if err := rows.Scan(&name, &row); err != nil {
			t.Fatal(err)
		}
		out[name] = row
	}
	rows.Close()
	return out
}

// TestApplyScopedMatchesFull: random sequences of file changes (a spec changed, a resource
// added, moved to another file or removed, a file added, renamed or removed) applied with the
// files' hashes, which compares only the changed files' resources, leave the rows and give
// the results that the same revisions applied without them (every resource compared) do,
// rows to refresh included (by identity). The widgets are of two namespaces and two kinds,
// and a moved one's kind may change case (the same identity).
func TestApplyScopedMatchesFull(t *testing.T) {
	t.Parallel()
	scoped, full := openTest(t, "s"), openTest(t, "s")
	ctx := context.Background()
	for seed := range int64(6) {
		rng := rand.New(rand.NewPCG(uint64(seed), 26))
		source := fmt.Sprintf("s%d", seed)
		for _, st := range []*Store{scoped, full} {
			if err := st.RegisterSource(ctx, SourceConfig{Name: source}); err != nil {
				t.Fatal(err)
			}
		}
		files := map[string][]string{}
		next := 0
		// Widgets of two namespaces and two kinds, a name of each by its number.
		ident := func(k int) string {
			return fmt.Sprintf("%s/%s/%s-w%d", []string{"default", "other"}[k%2], []string{"Widget", "Gadget"}[k/2%2], source, k)
		}
		widget := func() string {
			// A name now and then comes back: a row being deleted declared again.
			if next > 0 && rng.IntN(5) == 0 {
				return fmt.Sprintf("%s=%d", ident(rng.IntN(next)), rng.IntN(3))
			}
			next++
			return fmt.Sprintf("%s=%d", ident(next-1), rng.IntN(3))
		}
		pick := func() string {
			paths := slices.Sorted(maps.Keys(files))
			return paths[rng.IntN(len(paths))]
		}
		for step := range 40 {
			if len(files) == 0 {
				files["f0.yaml"] = []string{widget()}
			}
			switch f := pick(); rng.IntN(7) {
			case 0: // a spec changed
				ws := slices.Clone(files[f])
				i := rng.IntN(len(ws))
				name, _, _ := strings.Cut(ws[i], "=")
				ws[i] = fmt.Sprintf("%s=%d", name, 3+rng.IntN(5))
				files[f] = ws
			case 1: // a resource added
				files[f] = append(slices.Clone(files[f]), widget())
			case 2: // a resource moved to another file
				ws := slices.Clone(files[f])
				i := rng.IntN(len(ws))
				to := pick()
				if to != f {
					w := ws[i]
					if rng.IntN(2) == 0 { // its kind's case changed as it moves: the same identity
						w = strings.Replace(strings.Replace(w, "/Widget/", "/WIDGET/", 1), "/Gadget/", "/gadget/", 1)
					}
					files[to] = append(slices.Clone(files[to]), w)
					files[f] = slices.Delete(ws, i, i+1)
				}
			case 3: // a file renamed
				files[fmt.Sprintf("f%d.yaml", step+1)] = files[f]
				delete(files, f)
			case 4: // a file removed
				delete(files, f)
			default: // a file added
				var ws []string
				for range 1 + rng.IntN(3) {
					ws = append(ws, widget())
				}
				files[fmt.Sprintf("f%d.yaml", step+1)] = ws
			}
			for f, ws := range files {
				// Drop a name declared twice (the loader rejects such a revision).
				seen := map[string]bool{}
				for _, g := range slices.Sorted(maps.Keys(files)) {
					if g == f {
						break
					}
					for _, w := range files[g] {
						name, _, _ := strings.Cut(w, "=")
						seen[strings.ToLower(name)] = true
					}
				}
				files[f] = slices.DeleteFunc(slices.Clone(ws), func(w string) bool {
					name, _, _ := strings.Cut(strings.ToLower(w), "=")
					dup := seen[name]
					seen[name] = true
					return dup
				})
				if len(files[f]) == 0 {
					delete(files, f)
				}
			}
			set, hashes := fileRevision("k", files)
			rev := fmt.Sprintf("r%d", step)
			got, err := scoped.ApplyRevision(ctx, ApplyParams{Source: source, Revision: rev, Set: set, Files: hashes, Prune: true, MaxPruneFraction: 1, AllowEmpty: true})
			if err != nil {
				t.Fatalf("seed %d step %d: scoped: %v", seed, step, err)
			}
			set, _ = fileRevision("k", files)
			want, err := full.ApplyRevision(ctx, ApplyParams{Source: source, Revision: rev, Set: set, Prune: true, MaxPruneFraction: 1, AllowEmpty: true})
			if err != nil {
				t.Fatalf("seed %d step %d: full: %v", seed, step, err)
			}
			if g, w := refreshIdentities(t, scoped, got.Refresh), refreshIdentities(t, full, want.Refresh); !reflect.DeepEqual(g, w) {
				t.Fatalf("seed %d step %d (%v): scoped refreshes %v, full %v", seed, step, files, g, w)
			}
			got.Refresh, want.Refresh = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d (%v): scoped %+v, full %+v", seed, step, files, got, want)
			}
			if g, w := appliedRows(t, scoped, source), appliedRows(t, full, source); !reflect.DeepEqual(g, w) {
				t.Fatalf("seed %d step %d (%v): scoped rows %v, full rows %v", seed, step, files, g, w)
			}
		}
	}
}

// TestScopedGuardReadsNotTheSource: a one-file change that removes a resource decides the
// prune guard without reading the source's rows (counting its active rows read all 200,000 of
// them, 272 ms, whenever a one-file change deleted something). The apply runs in a
// transaction of the test, whose own counters (pg_stat_get_xact_tuples_returned) give the
// rows it read from resources and its indexes.
func TestScopedGuardReadsNotTheSource(t *testing.T) {
	t.Parallel()
	const n = 20000
	st := openTest(t, "big")
	ctx := context.Background()
	files := map[string][]string{}
	for i := 0; i < n; i++ {
		f := fmt.Sprintf("f%04d.yaml", i/500)
		files[f] = append(files[f], fmt.Sprintf("w%07d=%d", i, i%3))
	}
	set, hashes := fileRevision("k", files)
	if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "big", Revision: "r0", Set: set, Files: hashes, Prune: true, MaxPruneFraction: 0.5}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, "ANALYZE resources"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		step   string
		change func()
		want   ApplyResult
	}{
		{"a resource removed from a file", func() { files["f0003.yaml"] = files["f0003.yaml"][1:] }, ApplyResult{Deleted: 1, Unchanged: n - 1}},
		{"a file removed", func() { delete(files, "f0007.yaml") }, ApplyResult{Deleted: 500, Unchanged: n - 501}},
	} {
		c.change()
		set, hashes := fileRevision("k", files)
		tx, err := st.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// At 20,000 rows the planner may take a scan of the source over 500 probes of the
		// identity index, a choice of cost that a larger source reverses; without sequential
		// scans a statement that needs the source's rows reads them through an index, which
		// the counters see as well. The leader's counters miss what parallel workers read.
		for _, set := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL max_parallel_workers_per_gather = 0"} {
			if _, err := tx.Exec(ctx, set); err != nil {
				t.Fatal(err)
			}
		}
		var res ApplyResult
		if err := applyRevision(ctx, tx, ApplyParams{Source: "big", Revision: c.step, Set: set, Files: hashes, Prune: true, MaxPruneFraction: 0.5}, &res); err != nil {
			t.Fatal(err)
		}
		var read int64
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_returned('resources'::regclass)
			+ (SELECT COALESCE(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0) FROM pg_index WHERE indrelid = 'resources'::regclass)`).Scan(&read); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		res.Refresh = nil
		if !reflect.DeepEqual(res, c.want) {
			t.Errorf("%s: result %+v, want %+v", c.step, res, c.want)
		}
		// A deleted resource's rows are read a few times (lock, mark, changes, events): 3,500
		// for a file of 500; a count of the source read 20,000 more.
		if read > n/4 {
			t.Errorf("%s: the apply read %d rows of a source of %d", c.step, read, n)
		}
	}
}

// refreshIdentities is the sorted identities (namespace/kind/name) of the rows ids names: two
// stores' ids differ for the same resources.
func refreshIdentities(t *testing.T, st *Store, ids []int64) []string {
	t.Helper()
	rows, err := st.pool.Query(context.Background(), `SELECT namespace || '/' || lower(kind) || '/' || name FROM resources WHERE id = ANY($1::bigint[]) ORDER BY 1`, ids)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(slices.Compact(slices.Sorted(slices.Values(ids)))) {
		t.Fatalf("refresh names %d rows, %d found", len(ids), len(out))
	}
	return out
}
