package manifest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/sources"
)

// TestPackedBasis: a revision past keepDocuments keeps its Set with each chunk's names, spec
// hashes and specs in shared blocks, and that Set is, value for value, the one a Loader that
// keeps the documents returns; so are the Sets of a one-file change loaded from it and a full
// load of that change.
func TestPackedBasis(t *testing.T) {
	const n = 2*packChunk + 17 // three chunks, the last one short
	repo := widgetRepo(n)

	kept := NewLoader()
	want, err := kept.Load(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLoader()
	l.keepDocuments = n - 1
	got, err := l.Load(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Resources, want.Resources) {
		t.Fatal("the packed Set differs from the one whose documents are kept")
	}
	for i := range got.Resources {
		if r := &got.Resources[i]; cap(r.Spec) != len(r.Spec) {
			t.Fatalf("resource %d: spec capacity %d, length %d", i, cap(r.Spec), len(r.Spec))
		}
	}
	for i := 1; i < len(got.Resources); i++ {
		a, b := &got.Resources[i-1], &got.Resources[i]
		joined := packed(a, b)
		if first := i%packChunk == 0; first == joined {
			// A chunk's first resource starts blocks of its own.
			t.Fatalf("resource %d (first of a chunk: %t) follows resource %d in one block: %t", i, first, i-1, joined)
		}
	}

	// One file changes: the incremental load keeps the packed resources of the others.
	changed := append([]sources.File(nil), repo...)
	for i := range changed {
		if changed[i].Path == "widgets/w0003.yaml" {
			changed[i] = files("widgets/w0003.yaml", "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w0001500, namespace: ns00}\nspec: {size: 7}\n")[0]
		}
	}
	inc, err := l.Load(changed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.incrementals != 1 {
		t.Fatalf("%d incremental loads, want 1", l.incrementals)
	}
	full := fullLoad(t, changed)
	if !reflect.DeepEqual(inc.Resources, full.Resources) {
		t.Fatal("the Set loaded from the packed basis differs from a full load")
	}

	// The resources of a file the caller rewrites keep their own strings.
	rw := NewLoader()
	rw.keepDocuments = n - 1
	sealed, err := rw.Load(repo, Options{Rewritten: map[string]bool{"widgets/w0001.yaml": true}})
	if err != nil {
		t.Fatal(err)
	}
	inFile := 0
	for i := 1; i < len(sealed.Resources); i++ {
		a, b := &sealed.Resources[i-1], &sealed.Resources[i]
		if a.File == "widgets/w0001.yaml" && b.File == a.File {
			inFile++
			if packed(a, b) {
				t.Fatalf("resources %d and %d of a rewritten file share a block", i-1, i)
			}
		}
	}
	if inFile == 0 {
		t.Fatal("no two neighbouring resources of the rewritten file")
	}
}

// packed reports whether b's name follows a's spec hash and b's spec follows a's, as in
// one chunk's blocks. The addresses are compared as numbers: a's end may be its block's end.
func packed(a, b *Resource) bool {
	addr := func(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
	return addr(unsafe.StringData(b.Name)) == addr(unsafe.StringData(a.SpecHash))+uintptr(len(a.SpecHash)) &&
		addr(unsafe.SliceData(b.Spec)) == addr(unsafe.SliceData(a.Spec))+uintptr(len(a.Spec))
}

// TestLeanLoadDropsData: a load past keepDocuments with Options.DropData gives up the files'
// data once every document is checked (not a rewritten file's), keeps no document, and its
// Set and the loads after it are a full load's; a revision with problems keeps the data to
// locate them, as does one whose type has transition rules (checked from the documents).
func TestLeanLoadDropsData(t *testing.T) {
	t.Parallel()
	const n = packChunk + 300
	repo := func() []sources.File { return widgetRepo(n) }
	lean := func() *Loader {
		l := NewLoader()
		l.keepDocuments = n - 1
		return l
	}
	want, err := NewLoader().Load(repo(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	l, fs := lean(), repo()
	got, err := l.Load(fs, Options{DropData: true, Rewritten: map[string]bool{"widgets/w0002.yaml": true}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Resources, want.Resources) {
		t.Fatal("the lean Set differs from a full load's")
	}
	for _, f := range fs {
		if rewritten := f.Path == "widgets/w0002.yaml"; (f.Data == nil) == rewritten {
			t.Fatalf("%s: data dropped %t (rewritten: %t)", f.Path, f.Data == nil, rewritten)
		}
	}
	if l.leans != 1 || len(l.files) != 0 || l.sorted != nil {
		t.Fatalf("%d lean loads; the load kept %d parsed files and %d sorted documents", l.leans, len(l.files), len(l.sorted))
	}
	// The next load, from the basis, is a full load's too.
	changed := repo()
	changed[3] = files(changed[3].Path, strings.Replace(string(changed[3].Data), "spec: {size: 1000}", "spec: {size: 7}", 1))[0]
	next, err := l.Load(changed, Options{DropData: true})
	if err != nil {
		t.Fatal(err)
	}
	full := fullLoad(t, changed)
	if l.incrementals != 1 || !reflect.DeepEqual(next.Resources, full.Resources) {
		t.Fatalf("after a lean load: %d incremental loads, Set equal to a full load's: %t", l.incrementals, reflect.DeepEqual(next.Resources, full.Resources))
	}

	// Problems found without the data: loaded again with it, they are located (not from the
	// checks the first load cached).
	badRepo := func() []sources.File {
		fs := repo()
		fs[2] = files(fs[2].Path, strings.Replace(string(fs[2].Data), "spec: {size: 600}", "spec: {size: nope}", 1))[0]
		return fs
	}
	bl := lean()
	if _, err := bl.Load(badRepo(), Options{DropData: true}); !errors.Is(err, ErrDataNeeded) || !errors.Is(err, ErrUnread) {
		t.Fatalf("a widget of size nope, data given up: %v, want ErrDataNeeded, an ErrUnread", err)
	}
	// The widget is w0000600, the 101st of its file: its spec on line 5 + 5×100.
	if _, err := bl.Load(badRepo(), Options{}); err == nil || !strings.Contains(err.Error(), "widgets/w0001.yaml:505") {
		t.Fatalf("a widget of size nope, loaded again with the data: %v", err)
	}
	// A problem located without the data (a dependency refused) is reported as it is.
	refused := repo()
	refused[2] = files(refused[2].Path, string(refused[2].Data)+"---\napiVersion: bench.example.com/v1\nkind: Widget\n"+
		"metadata: {name: dep, namespace: ns01}\ndependsOn: [{kind: Widget, name: w0000000, namespace: ns00}]\nspec: {size: 1}\n")[0]
	refuse := func(string, graph.ID, []string) error { return errors.New("not across namespaces") }
	if _, err := lean().Load(refused, Options{DropData: true, CheckReference: refuse}); err == nil || errors.Is(err, ErrUnread) ||
		!strings.Contains(err.Error(), "widgets/w0001.yaml:2502: dependsOn: not across namespaces") {
		t.Fatalf("a dependency refused, data given up: %v", err)
	}
	if refused[1].Data != nil {
		t.Fatal("the data was kept by the load that refused a dependency")
	}
	// A problem in a file the caller rewrites (its data kept) is located by the first load.
	rw := badRepo()
	if _, err := lean().Load(rw, Options{DropData: true, Rewritten: map[string]bool{"widgets/w0001.yaml": true}}); err == nil ||
		errors.Is(err, ErrUnread) || !strings.Contains(err.Error(), "widgets/w0001.yaml:505") {
		t.Fatalf("a widget of size nope in a rewritten file: %v", err)
	}
	// Transition rules of a type no resource uses keep nothing.
	unused := repo()
	known, err := TypeFromSpec("Gadget", "bench.example.com", "other/gadget.yaml", json.RawMessage(
		`{"group": "bench.example.com", "versions": [{"name": "v1", "schema": {"type": "object", "x-trueup-validations": [{"rule": "self == oldSelf"}]}}], "action": {"name": "act"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lean().Load(unused, Options{DropData: true, KnownTypes: []ResourceType{known}}); err != nil {
		t.Fatal(err)
	}
	if unused[1].Data != nil {
		t.Fatal("the data was kept for an unused type's transition rules")
	}

	// A problem found in a file's parse (a YAML error) keeps that file's data and the type's,
	// and is reported located; the other files' data went as each was parsed (earlyDrop).
	yamlBad := repo()
	yamlBad[2] = files(yamlBad[2].Path, string(yamlBad[2].Data)+"---\nkind: [\n")[0]
	if _, err := lean().Load(yamlBad, Options{DropData: true}); err == nil || errors.Is(err, ErrUnread) ||
		!strings.Contains(err.Error(), "widgets/w0001.yaml:2502: invalid yaml") {
		t.Fatalf("a YAML error: %v", err)
	}
	for i, f := range yamlBad {
		if kept := i == 0 || i == 2; (f.Data != nil) != kept {
			t.Fatalf("%s: data kept %t by a load with a YAML error, want %t", f.Path, f.Data != nil, kept)
		}
	}
	// A cached document checked against another schema is checked again from its file's
	// data: given up, the load asks for it (ErrUnread), and loads with it.
	// A file given up is marked unread: passed again, it is not the parse of no data.
	if _, err := lean().Load(yamlBad, Options{DropData: true}); !errors.Is(err, ErrUnread) {
		t.Fatalf("files given up, loaded again: %v, want ErrUnread", err)
	}
	cl := lean()
	yamlBad = repo()
	yamlBad[2] = files(yamlBad[2].Path, string(yamlBad[2].Data)+"---\nkind: [\n")[0]
	if _, err := cl.Load(yamlBad, Options{DropData: true}); err == nil {
		t.Fatal("a YAML error loaded")
	}
	newSchema := func() []sources.File {
		fs := repo()
		fs[0] = files(fs[0].Path, strings.Replace(benchWidgetType, "minimum: 0", "minimum: 0, maximum: 100000000", 1))[0]
		return fs
	}
	leans := cl.leans
	if _, err := cl.Load(newSchema(), Options{DropData: true}); !errors.Is(err, ErrDataNeeded) {
		t.Fatalf("cached documents of another schema, data given up: %v, want ErrDataNeeded", err)
	}
	// It builds no Set, and keeps the documents for the load with the data.
	if cl.leans != leans || len(cl.files) == 0 {
		t.Fatalf("after ErrUnread: %d lean builds (was %d), %d files' documents kept", cl.leans, leans, len(cl.files))
	}
	again, err := cl.Load(newSchema(), Options{})
	if err != nil {
		t.Fatalf("loaded again with the data: %v", err)
	}
	if fresh, err := NewLoader().Load(newSchema(), Options{}); err != nil || !reflect.DeepEqual(again.Resources, fresh.Resources) {
		t.Fatalf("loaded again with the data: the Set differs from a fresh load's (%v)", err)
	}

	// Transition rules: not lean, the data stays.
	rules := repo()
	rules[0] = files(rules[0].Path, strings.Replace(benchWidgetType, "        required: [size]\n",
		"        required: [size]\n        x-trueup-validations: [{rule: \"self.size >= oldSelf.size\"}]\n", 1))[0]
	if _, err := lean().Load(rules, Options{DropData: true}); err != nil {
		t.Fatal(err)
	}
	for _, f := range rules {
		if f.Data == nil {
			t.Fatalf("%s: data dropped with transition rules", f.Path)
		}
	}
}

// TestLeanResourcesReleaseDocuments: once a lean load has encoded a chunk, the chunk's
// documents hold no resource any more (the encoded chunks replace them), and the Set is
// still, value for value, the one a Loader that keeps the documents returns.
func TestLeanResourcesReleaseDocuments(t *testing.T) {
	const n = packChunk + 5 // two chunks
	repo := append(widgetRepo(n), files("widgets/z.yaml", "apiVersion: bench.example.com/v1\nkind: Widget\n"+
		"metadata: {name: dep, namespace: ns00}\ndependsOn: [{kind: Widget, name: w0000000}]\nspec: {size: 1}\n")...)
	want, err := NewLoader().Load(repo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ld := &load{l: NewLoader(), schemas: map[string]*compiledSchema{}}
	docs := ld.parse(repo)
	_, infos := ld.types(docs)
	ld.lean = true
	got, _, _ := ld.resources(docs, infos)
	if len(ld.errs) > 0 {
		t.Fatal(ld.errs)
	}
	if !reflect.DeepEqual(got, want.Resources) {
		t.Fatal("the lean Set differs from the one whose documents are kept")
	}
	if i, ok := findResource(got, "ns00", "Widget", "dep"); !ok {
		t.Fatal("no resource dep in the Set")
	} else if len(got[i].DependsOn) != 1 {
		t.Fatalf("the dependent's dependencies: %+v", got[i].DependsOn)
	}
	released := 0
	for _, p := range docs {
		if r := p.doc.res; r != nil {
			t.Fatalf("%s line %d: the document still holds its resource %s", p.file, p.doc.line, r.name)
		}
		if p.doc.typ == nil && p.doc.set == nil {
			released++
		}
	}
	if released != n+1 {
		t.Fatalf("%d documents released, want %d", released, n+1)
	}
}

// TestLeanUnreadKeepsDocuments: over a basis whose documents the Loader kept, a revision that
// outgrows keepDocuments and changes the schema is loaded lean; its cached documents, checked
// against the old schema, need their files' data, given up: the load answers ErrUnread and
// keeps the documents, and the load with the data starts from them (no file parsed again) and
// returns the Set of a fresh load.
func TestLeanUnreadKeepsDocuments(t *testing.T) {
	l := NewLoader()
	l.keepDocuments = 1200
	if _, err := l.Load(widgetRepo(1000), Options{DropData: true}); err != nil {
		t.Fatal(err)
	}
	grown := func() []sources.File {
		fs := widgetRepo(1500)
		fs[0] = files(fs[0].Path, strings.Replace(benchWidgetType, "minimum: 0", "minimum: 0, maximum: 100000000", 1))[0]
		return fs
	}
	if _, err := l.Load(grown(), Options{DropData: true}); !errors.Is(err, ErrDataNeeded) {
		t.Fatalf("cached documents of another schema, data given up: %v, want ErrDataNeeded", err)
	}
	kept := maps.Clone(l.files)
	if len(kept) != 4 { // the type and three files of widgets
		t.Fatalf("after ErrUnread, %d files' documents kept, want 4", len(kept))
	}
	got, err := l.Load(grown(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The load with the data built its Set from the kept documents: their resources are
	// encoded, and the documents have given them up (a file parsed again would leave them as
	// they are).
	resources := 0
	for key, e := range kept {
		for _, d := range e.docs {
			if d.res != nil {
				t.Fatalf("file %s parsed again: its kept document %s was not used", key, d.res.name)
			} else if d.typ == nil {
				resources++
			}
		}
	}
	if resources != 1500 {
		t.Fatalf("%d resources in the kept documents, want 1500", resources)
	}
	want, err := NewLoader().Load(grown(), Options{})
	if err != nil || !reflect.DeepEqual(got.Resources, want.Resources) {
		t.Fatalf("loaded again with the data: the Set differs from a fresh load's (%v)", err)
	}
}

// TestPackedSet: with Options.Packed a revision past keepDocuments is returned encoded (no
// Resources), and its Len, At and All read, value for value, the resources a Loader that
// keeps the documents returns; a Set that others' walks of At share stays right. Handed
// back, its encoding is the basis at once (no timer); a one-file change loads from it. The
// checks that walk every resource (a refused reference, a cycle) walk a packed Set's too. A
// load with Rewritten files, or without Packed, keeps its Resources.
func TestPackedSet(t *testing.T) {
	t.Parallel()
	const n = 2*packChunk + 17 // three chunks, the last one short
	dep := "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: dep, namespace: ns01}\n" +
		"dependsOn: [{kind: Widget, name: w0000000, namespace: ns00}]\nspec: {size: 1}\n"
	repo := func(extra string) []sources.File {
		fs := widgetRepo(n)
		fs[2] = files(fs[2].Path, string(fs[2].Data)+extra)[0]
		return fs
	}
	lean := func() *Loader {
		l := NewLoader()
		l.keepDocuments, l.compactAfter = n-1, time.Hour
		return l
	}
	want := fullLoad(t, repo(dep))
	l := lean()
	got, err := l.Load(repo(dep), Options{Packed: true, DropData: true, ReuseSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Packed() || got.Resources != nil || got.Len() != len(want.Resources) {
		t.Fatalf("packed %t, %d resources, Len %d, want packed, none, %d", got.Packed(), len(got.Resources), got.Len(), len(want.Resources))
	}
	if !got.HasDependencies() || !want.HasDependencies() {
		t.Fatal("a dependency not told")
	}
	// A walk of At, then two at once, a chunk apart (each call of either decodes a chunk,
	// hence short), and All.
	for i := range got.Len() {
		if !reflect.DeepEqual(*got.At(i), want.Resources[i]) {
			t.Fatalf("At(%d) = %+v, want %+v", i, *got.At(i), want.Resources[i])
		}
	}
	done := make(chan error, 2)
	for _, from := range []int{0, packChunk} {
		go func() {
			for i := from; i < from+64; i++ {
				if !reflect.DeepEqual(*got.At(i), want.Resources[i]) {
					done <- fmt.Errorf("At(%d) = %+v, want %+v", i, *got.At(i), want.Resources[i])
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	walked := 0
	for i, r := range got.All() {
		if i != walked || !reflect.DeepEqual(*r, want.Resources[i]) {
			t.Fatalf("All: resource %d at %d differs", i, walked)
		}
		walked++
	}
	if walked != got.Len() {
		t.Fatalf("All walked %d resources, want %d", walked, got.Len())
	}

	l.Release(got)
	if l.last.set != nil || l.last.packed != got.packed || l.restTimer != nil {
		t.Fatalf("after Release: basis Set %p, packed %t, timer %v; want the Set's encoding, no timer", l.last.set, l.last.packed == got.packed, l.restTimer)
	}
	changed := repo(dep)
	changed[5] = files(changed[5].Path, "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w0002000, namespace: ns00}\nspec: {size: 7}\n")[0]
	inc, err := l.Load(changed, Options{Packed: true, ReuseSet: true})
	if err != nil {
		t.Fatal(err)
	}
	full := fullLoad(t, changed)
	if l.incrementals != 1 || !reflect.DeepEqual(inc.Resources, full.Resources) {
		t.Fatalf("%d incremental loads; the Set loaded from the packed basis equals a full load: %t", l.incrementals, reflect.DeepEqual(inc.Resources, full.Resources))
	}

	refuse := func(string, graph.ID, []string) error { return errors.New("not across namespaces") }
	if _, err := lean().Load(repo(dep), Options{Packed: true, CheckReference: refuse}); err == nil ||
		!strings.Contains(err.Error(), "widgets/w0001.yaml:2502: dependsOn: not across namespaces") {
		t.Fatalf("a dependency refused: %v", err)
	}
	cycle := dep + "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w0000000, namespace: ns00}\n" +
		"dependsOn: [{kind: Widget, name: dep, namespace: ns01}]\nspec: {size: 0}\n"
	fs := repo(cycle)
	fs[1] = files(fs[1].Path, strings.Replace(string(fs[1].Data), "name: w0000000,", "name: w0000000x,", 1))[0]
	if _, err := lean().Load(fs, Options{Packed: true}); err == nil || !strings.Contains(err.Error(), "dependency cycle") {
		t.Fatalf("a cycle: %v", err)
	}

	for name, opts := range map[string]Options{"without Packed": {}, "with a rewritten file": {Packed: true, Rewritten: map[string]bool{"widgets/w0001.yaml": true}}} {
		set, err := lean().Load(repo(dep), opts)
		if err != nil {
			t.Fatal(err)
		}
		if set.Packed() || !reflect.DeepEqual(set.Resources, want.Resources) {
			t.Fatalf("%s: packed %t, or its resources differ", name, set.Packed())
		}
	}
}

// TestPackedIncremental: loads from a packed basis without dependencies stay packed, and each
// Set is, value for value, the one a full load of its revision returns (its Len, At, All,
// Namespaces and InFiles too): a spec changed, files added before, after and between the
// others, a file removed, files removed that empty a chunk, a file that grows a chunk past
// twice its size, and a change that adds a dependency. Chunks a change does not touch are
// shared with the last Set. A duplicate and a cycle are refused as a full load refuses them.
func TestPackedIncremental(t *testing.T) {
	t.Parallel()
	// file f holds 500 widgets of namespace ns<f/5>: a file's resources are in a chunk or two.
	widgets := func(f, from, n int, extra string) sources.File {
		var b strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&b, "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w%07d, namespace: ns%02d}\nspec: {size: %d}\n", i, f/5, i)
		}
		return files(fmt.Sprintf("widgets/w%04d.yaml", f), b.String()+extra)[0]
	}
	repo := files("types/widget.yaml", benchWidgetType)
	for f := range 30 { // 15,000 resources: four chunks
		repo = append(repo, widgets(f, f*500, 500, ""))
	}
	l := NewLoader()
	l.keepDocuments, l.compactAfter = 1000, time.Hour
	opts := Options{Packed: true, ReuseSet: true}
	last, err := l.Load(repo, opts)
	if err != nil || !last.Packed() {
		t.Fatalf("first load: packed %t, %v", err == nil && last.Packed(), err)
	}
	l.Release(last)
	step := func(name string, fs []sources.File, wantPacked bool, touched int) {
		t.Helper()
		incs := l.incrementals
		before := l.last.packed
		got, err := l.Load(fs, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := fullLoad(t, fs)
		if l.incrementals != incs+1 || got.Packed() != wantPacked || got.Len() != len(want.Resources) {
			t.Fatalf("%s: incremental %t, packed %t (want %t), Len %d (want %d)", name, l.incrementals == incs+1, got.Packed(), wantPacked, got.Len(), len(want.Resources))
		}
		for i, r := range got.All() {
			if !reflect.DeepEqual(*r, want.Resources[i]) || !reflect.DeepEqual(*got.At(i), want.Resources[i]) {
				t.Fatalf("%s: resource %d is %s/%s, want %s/%s", name, i, r.Namespace, r.Name, want.Resources[i].Namespace, want.Resources[i].Name)
			}
		}
		if !reflect.DeepEqual(got.Namespaces(), want.Namespaces()) {
			t.Fatalf("%s: namespaces %v, want %v", name, got.Namespaces(), want.Namespaces())
		}
		in := map[string]bool{"widgets/w0003.yaml": true, "widgets/w0017.yaml": true}
		if !reflect.DeepEqual(got.InFiles(in), want.InFiles(in)) {
			t.Fatalf("%s: InFiles %v, want %v", name, got.InFiles(in), want.InFiles(in))
		}
		if wantPacked {
			for k := range got.packed.chunks {
				if n := got.packed.chunks[k].n; n == 0 || n > 2*packChunk {
					t.Fatalf("%s: chunk %d holds %d resources", name, k, n)
				}
			}
			shared := 0
			for _, a := range got.packed.chunks {
				for _, b := range before.chunks {
					if &a.data[0] == &b.data[0] {
						shared++
					}
				}
			}
			if len(got.packed.chunks)-shared != touched {
				t.Fatalf("%s: %d of %d chunks encoded again, want %d", name, len(got.packed.chunks)-shared, len(got.packed.chunks), touched)
			}
		}
		l.Release(got)
		last, repo = got, fs
	}
	with := func(fs []sources.File, add ...sources.File) []sources.File {
		out := slices.Clone(fs)
		for _, a := range add {
			if i := slices.IndexFunc(out, func(f sources.File) bool { return f.Path == a.Path }); i >= 0 {
				out[i] = a
			} else {
				out = append(out, a)
			}
		}
		return out
	}
	without := func(fs []sources.File, paths ...string) []sources.File {
		return slices.DeleteFunc(slices.Clone(fs), func(f sources.File) bool { return slices.Contains(paths, f.Path) })
	}
	// Chunks: [0, 4096) ns00–ns01 (files 0–8 and part of 9), and so on.
	changed := widgets(2, 1000, 500, "")
	changed.Data = []byte(strings.Replace(string(changed.Data), "spec: {size: 1000}", "spec: {size: 7}", 1))
	changed.Hash = ""
	step("a spec changed", with(repo, changed), true, 1)
	step("a file after the others", with(repo, widgets(99, 50_000, 10, "")), true, 1)
	step("a file before the others", with(repo, files("widgets/a.yaml", "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: a, namespace: aa}\nspec: {size: 1}\n")...), true, 1)
	step("a file removed", without(repo, "widgets/w0012.yaml"), true, 1)
	step("files that held a chunk removed", without(repo, "widgets/w0016.yaml", "widgets/w0017.yaml", "widgets/w0018.yaml", "widgets/w0019.yaml",
		"widgets/w0020.yaml", "widgets/w0021.yaml", "widgets/w0022.yaml", "widgets/w0023.yaml", "widgets/w0024.yaml", "widgets/w0025.yaml"), true, 2)
	if n := len(last.packed.chunks); n != 3 {
		t.Fatalf("files that held a chunk removed: %d chunks, want 3 (one emptied and dropped, two encoded again)", n)
	}
	step("a chunk grown past twice its size", with(repo, widgets(5, 100_000, 9000, "")), true, 4) // the file's old chunk, its new one in three
	dep := "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: d, namespace: ns00}\n" +
		"dependsOn: [{kind: Widget, name: w0000001}]\nspec: {size: 1}\n"
	step("a dependency", with(repo, widgets(0, 0, 500, dep)), true, 1)
	if !l.last.deps {
		t.Fatal("the basis does not know it has a dependency")
	}
	step("loaded from a basis with a dependency", with(repo, widgets(1, 500, 500, "# changed\n")), false, 0)

	// Refused: a duplicate, a cycle (from a packed basis without dependencies again).
	l2 := NewLoader()
	l2.keepDocuments = 1000
	base := files("types/widget.yaml", benchWidgetType)
	for f := range 30 {
		base = append(base, widgets(f, f*500, 500, ""))
	}
	set, err := l2.Load(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	l2.Release(set)
	for _, id := range []string{"w0000700, namespace: ns00", "w0014000, namespace: ns05"} { // in the first chunk, in the last
		dup := with(base, files("widgets/dup.yaml", "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: "+id+"}\nspec: {size: 1}\n")...)
		if _, err := l2.Load(dup, opts); err == nil || !strings.Contains(err.Error(), "duplicate resource") || !strings.Contains(err.Error(), "widgets/dup.yaml:1: duplicate resource") {
			t.Fatalf("a duplicate of %s: %v", id, err)
		}
	}
	refused := with(base, files("widgets/ref.yaml", "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: r, namespace: ns01}\n"+
		"dependsOn: [{kind: Widget, name: w0000000, namespace: ns00}]\nspec: {size: 1}\n")...)
	refuse := func(string, graph.ID, []string) error { return errors.New("not across namespaces") }
	if _, err := l2.Load(refused, Options{Packed: true, ReuseSet: true, CheckReference: refuse}); err == nil ||
		!strings.Contains(err.Error(), "widgets/ref.yaml:1: dependsOn: not across namespaces") {
		t.Fatalf("a dependency refused: %v", err)
	}
	cyc := with(base, files("widgets/cyc.yaml", "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: x, namespace: ns00}\ndependsOn: [{kind: Widget, name: y}]\nspec: {size: 1}\n"+
		"---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: y, namespace: ns00}\ndependsOn: [{kind: Widget, name: x}]\nspec: {size: 1}\n")...)
	if _, err := l2.Load(cyc, opts); err == nil || !strings.Contains(err.Error(), "dependency cycle") {
		t.Fatalf("a cycle: %v", err)
	}
	if l2.incrementals != 0 {
		t.Fatalf("%d incremental loads of refused revisions", l2.incrementals)
	}

	// A basis encoded at rest (its Set decoded, without Packed) is merged into as well.
	l3 := NewLoader()
	l3.keepDocuments, l3.compactAfter = 1000, 0
	set, err = l3.Load(base, Options{ReuseSet: true})
	if err != nil || set.Packed() {
		t.Fatalf("a load without Packed: packed %t, %v", err == nil && set.Packed(), err)
	}
	l3.Release(set)
	if l3.last.packed == nil {
		t.Fatal("the basis was not encoded at once")
	}
	l = l3
	repo = base
	step("from a basis encoded at rest", with(base, changed), true, 1)
}

// fullLoad is fs loaded by a new Loader, which keeps the documents: what a load of fs from a
// basis must equal.
func fullLoad(t *testing.T, fs []sources.File) *Set {
	t.Helper()
	set, err := NewLoader().Load(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestEarlyDropDecision: a load with DropData gives a file's data up as it is parsed only
// when the revision likely is lean (more documents counted than the Loader keeps) and nothing
// names a ResourceSet or a transition rule's oldSelf, in a file or a known type.
func TestEarlyDropDecision(t *testing.T) {
	t.Parallel()
	rules, err := TypeFromSpec("Gadget", "bench.example.com", "other/gadget.yaml", json.RawMessage(
		`{"group": "bench.example.com", "versions": [{"name": "v1", "schema": {"type": "object", "x-trueup-validations": [{"rule": "self == oldSelf"}]}}], "action": {"name": "act"}}`))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := TypeFromSpec("Gadget", "bench.example.com", "other/gadget.yaml", json.RawMessage(
		`{"group": "bench.example.com", "versions": [{"name": "v1", "schema": {"type": "object"}}], "action": {"name": "act"}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := "---\nkind: Widget\n"
	for _, tc := range []struct {
		name  string
		files []string
		known []ResourceType
		want  bool
	}{
		{"as many documents as kept", []string{strings.Repeat(doc, 5), strings.Repeat(doc, 4)}, nil, false},
		{"more documents than kept", []string{strings.Repeat(doc, 6), strings.Repeat(doc, 5)}, nil, true},
		{"one file of many", []string{strings.Repeat(doc, 11)}, nil, true},
		{"a ResourceSet", []string{strings.Repeat(doc, 11), "kind: ResourceSet\n"}, nil, false},
		{"a transition rule in a file", []string{strings.Repeat(doc, 11), "rule: self.size >= oldSelf.size\n"}, nil, false},
		{"a known type's transition rule", []string{strings.Repeat(doc, 11)}, []ResourceType{rules}, false},
		{"a known type without one", []string{strings.Repeat(doc, 11)}, []ResourceType{plain}, true},
	} {
		var fs []sources.File
		for i, data := range tc.files {
			fs = append(fs, files(fmt.Sprintf("f%d.yaml", i), data)...)
		}
		l := NewLoader()
		l.keepDocuments = 10
		ld := &load{l: l, opts: Options{KnownTypes: tc.known}}
		if got := ld.earlyDrop(fs); got != tc.want {
			t.Errorf("%s: earlyDrop %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestEarlyDrop: a load past keepDocuments with DropData gives each file of resources up as
// it is parsed (marked unread), keeps a type's file, whose problems it locates at once; a
// revision that proves not lean for its size alone (its separators counted more documents
// than it has resources) loads without the data, and one whose transition rule or
// ResourceSet the guess missed answers ErrDataNeeded, and loads with the data as a full load
// does.
func TestEarlyDrop(t *testing.T) {
	t.Parallel()
	const n = 1500
	l := NewLoader()
	l.keepDocuments = n - 1
	fs := widgetRepo(n)
	got, err := l.Load(fs, Options{DropData: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := fullLoad(t, widgetRepo(n)); !reflect.DeepEqual(got.Resources, want.Resources) {
		t.Fatal("the Set of a load that gave the data up early differs from a full load's")
	}
	for _, f := range fs {
		if f.Data != nil || !f.Unread {
			t.Fatalf("%s: data kept %t, unread %t", f.Path, f.Data != nil, f.Unread)
		}
	}

	// A type's problem is located by the load that gives the other files up.
	broken := widgetRepo(n)
	broken[0] = files(broken[0].Path, strings.Replace(benchWidgetType, "type: integer", "type: integr", 1))[0]
	l = NewLoader()
	l.keepDocuments = n - 1
	if _, err := l.Load(broken, Options{DropData: true}); err == nil || errors.Is(err, ErrUnread) ||
		!strings.Contains(err.Error(), "types/widget.yaml:") {
		t.Fatalf("a broken type: %v, want its problem located", err)
	}
	if broken[0].Data == nil || broken[1].Data != nil {
		t.Fatalf("a broken type: its file's data kept %t, a widget file's %t", broken[0].Data != nil, broken[1].Data != nil)
	}

	// Empty documents counted by their separators: not lean, loaded without the data given
	// up, its documents kept.
	padded := func() []sources.File {
		return append(widgetRepo(n/2), files("widgets/zz-empty.yaml", strings.Repeat("---\n", n))...)
	}
	l = NewLoader()
	l.keepDocuments = n - 1
	fs = padded()
	got, err = l.Load(fs, Options{DropData: true})
	if err != nil {
		t.Fatalf("fewer resources than counted: %v", err)
	}
	if want := fullLoad(t, padded()); !reflect.DeepEqual(got.Resources, want.Resources) {
		t.Fatal("fewer resources than counted: the Set differs from a full load's")
	}
	if fs[0].Data == nil || fs[1].Data != nil || !fs[1].Unread || len(l.files) == 0 || l.leans != 0 {
		t.Fatalf("fewer resources than counted: the type's data kept %t, a widget file's %t (unread %t), %d files' documents kept, %d lean loads",
			fs[0].Data != nil, fs[1].Data != nil, fs[1].Unread, len(l.files), l.leans)
	}

	// A transition rule the guess cannot see (oldSelf spelled with an escape): ErrDataNeeded,
	// the documents kept; loaded again with the data, a full load's Set.
	escaped := func() []sources.File {
		fs := widgetRepo(n)
		fs[0] = files(fs[0].Path, strings.Replace(benchWidgetType, "        required: [size]\n",
			"        required: [size]\n        x-trueup-validations: [{rule: \"self.size >= \\x6FldSelf.size\"}]\n", 1))[0]
		return fs
	}
	l = NewLoader()
	l.keepDocuments = n - 1
	fs = escaped()
	if bytes.Contains(fs[0].Data, []byte("oldSelf")) {
		t.Fatal("the type names oldSelf as it is")
	}
	if _, err := l.Load(fs, Options{DropData: true}); !errors.Is(err, ErrDataNeeded) {
		t.Fatalf("a transition rule the guess missed: %v, want ErrDataNeeded", err)
	}
	if fs[1].Data != nil || len(l.files) == 0 {
		t.Fatalf("a transition rule the guess missed: a widget file's data kept %t, %d files' documents kept", fs[1].Data != nil, len(l.files))
	}
	again, err := l.Load(escaped(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := fullLoad(t, escaped()); !reflect.DeepEqual(again.Resources, want.Resources) || len(again.transitions) != n {
		t.Fatalf("loaded again with the data: the Set differs from a full load's (%d transition checks)", len(again.transitions))
	}

	// A ResourceSet the guess cannot see (its kind spelled with an escape): the same.
	withSet := func() []sources.File {
		return append(widgetRepo(n), files("sets/s.yaml", "apiVersion: trueup.dev/v1\nkind: \"Resource\\x53et\"\nmetadata: {name: s}\nspec:\n"+
			"  matrix: {region: [a, b]}\n  resources:\n    - apiVersion: bench.example.com/v1\n      kind: Widget\n"+
			"      metadata: {name: \"gen-<< inputs.region >>\"}\n      spec: {size: 1}\n")...)
	}
	l = NewLoader()
	l.keepDocuments = n - 1
	fs = withSet()
	if bytes.Contains(fs[len(fs)-1].Data, []byte("ResourceSet")) {
		t.Fatal("the set names its kind as it is")
	}
	if _, err := l.Load(fs, Options{DropData: true}); !errors.Is(err, ErrDataNeeded) {
		t.Fatalf("a ResourceSet the guess missed: %v, want ErrDataNeeded", err)
	}
	again, err = l.Load(withSet(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := fullLoad(t, withSet()); !reflect.DeepEqual(again.Resources, want.Resources) || len(again.ResourceSets) != 1 || again.Len() != n+2 {
		t.Fatalf("loaded again with the data: the Set differs from a full load's (%d sets, %d resources)", len(again.ResourceSets), again.Len())
	}
}

// TestIncrementalAfterLeanFailureHashesSpecs: a lean load that answers ErrDataNeeded leaves
// its documents cached, checked without their specs' hashes; an incremental load that builds
// its Set from them hashes each spec, as a full load does.
func TestIncrementalAfterLeanFailureHashesSpecs(t *testing.T) {
	t.Parallel()
	l := NewLoader()
	l.keepDocuments = 10
	var w strings.Builder
	for i := range 20 {
		fmt.Fprintf(&w, "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w%d}\nspec: {size: %d}\n", i, i)
	}
	g := "---\napiVersion: bench.example.com/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {size: 1}\n---\napiVersion: bench.example.com/v1\nkind: Gadget\nmetadata: {name: g2}\nspec: {size: 2}\n"
	base := func() []sources.File {
		return files("types/gadget.yaml", benchGadgetType, "types/widget.yaml", benchWidgetType, "w.yaml", w.String())
	}
	if _, err := l.Load(base(), Options{}); err != nil {
		t.Fatal(err)
	}
	// A stricter type: the widgets over 5 are problems, located only with the data.
	strict := strings.Replace(benchWidgetType, "minimum: 0", "minimum: 0, maximum: 5", 1)
	if _, err := l.Load(files("types/gadget.yaml", benchGadgetType, "types/widget.yaml", strict, "w.yaml", w.String(), "g.yaml", g), Options{DropData: true}); !errors.Is(err, ErrDataNeeded) {
		t.Fatalf("a stricter type, data given up: %v, want ErrDataNeeded", err)
	}
	incrementals := l.incrementals
	set, err := l.Load(append(base(), files("g.yaml", g)...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.incrementals != incrementals+1 {
		t.Fatal("the gadgets were not loaded from the basis")
	}
	want := fullLoad(t, append(base(), files("g.yaml", g)...))
	if !reflect.DeepEqual(set.Resources, want.Resources) {
		for _, r := range set.All() {
			t.Logf("%s/%s: spec hash %q", r.Kind, r.Name, r.SpecHash)
		}
		t.Fatal("the Set differs from a full load's")
	}
}

// TestHomeResources: a file's resources are copied into one block per namespace, in their
// order, and each document points at its own resource; a document without a resource keeps
// none.
func TestHomeResources(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		nss  []string // "" is a document without a resource (a type)
	}{
		{"one namespace", []string{"a", "a", "", "a"}},
		{"interleaved namespaces", []string{"a", "b", "a", "", "b", "c", "a"}},
		{"no resource", []string{"", ""}},
	} {
		var docs []document
		var res []resourceDoc
		for i, ns := range tc.nss {
			docs = append(docs, document{index: int32(i)})
			if ns != "" {
				res = append(res, resourceDoc{namespace: intern(ns), name: fmt.Sprintf("r%d", i)})
				docs[i].res = &resourceDoc{} // points into the scratch slice until homed
			}
		}
		homeResources(docs, res)
		byNS := map[string][]*resourceDoc{}
		for i, ns := range tc.nss {
			r := docs[i].res
			if ns == "" {
				if r != nil {
					t.Fatalf("%s: document %d got a resource", tc.name, i)
				}
				continue
			}
			if r == nil || r.name != fmt.Sprintf("r%d", i) || r.namespace.String() != ns {
				t.Fatalf("%s: document %d points at %+v", tc.name, i, r)
			}
			byNS[ns] = append(byNS[ns], r)
		}
		for ns, rs := range byNS {
			block := unsafe.Slice(rs[0], len(rs))
			for j := range rs {
				if &block[j] != rs[j] {
					t.Fatalf("%s: namespace %s's resources are not one block in their order", tc.name, ns)
				}
			}
		}
	}
}

// TestPermute: putting items in order in place gives what a copy in that order gives, for
// every permutation of five items and for random ones of many.
func TestPermute(t *testing.T) {
	t.Parallel()
	check := func(order []int) {
		items := make([]int, len(order))
		for i := range items {
			items[i] = 100 + i
		}
		want := make([]int, len(order))
		for j, i := range order {
			want[j] = items[i]
		}
		permute(items, slices.Clone(order))
		if !slices.Equal(items, want) {
			t.Fatalf("order %v: %v, want %v", order, items, want)
		}
	}
	var each func(prefix []int, rest []int)
	each = func(prefix, rest []int) {
		if len(rest) == 0 {
			check(prefix)
			return
		}
		for k := range rest {
			each(append(slices.Clone(prefix), rest[k]), append(slices.Clone(rest[:k]), rest[k+1:]...))
		}
	}
	each(nil, []int{0, 1, 2, 3, 4})
	check(nil)
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		check(rnd.Perm(1 + rnd.IntN(5000)))
	}
}

// TestSetOrder: a Set's resources are in the order of their namespaces', kinds' and names'
// strings, whichever order the files declare them in, decoded or packed.
func TestSetOrder(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	rnd := rand.New(rand.NewPCG(3, 4))
	nss := []string{"b", "a", "ns10", "ns9", "z-last", "a-first"}
	for i := range 300 {
		kind := []string{"Widget", "Gadget"}[rnd.IntN(2)]
		spec := "{size: 1}"
		if kind == "Gadget" {
			spec = "{}"
		}
		fmt.Fprintf(&b, "---\napiVersion: bench.example.com/v1\nkind: %s\nmetadata: {name: r%03d, namespace: %s}\nspec: %s\n", kind, rnd.IntN(1000)*1000+i, nss[rnd.IntN(len(nss))], spec)
	}
	repo := files("types/widget.yaml", benchWidgetType, "types/gadget.yaml", benchGadgetType, "r.yaml", b.String())
	ordered := func(rs []Resource) bool {
		return slices.IsSortedFunc(rs, func(x, y Resource) int {
			return cmp.Or(strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Kind, y.Kind), strings.Compare(x.Name, y.Name))
		})
	}
	full := fullLoad(t, repo)
	if len(full.Resources) != 300 || !ordered(full.Resources) {
		t.Fatalf("a full load's %d resources are not in order", len(full.Resources))
	}
	l := NewLoader()
	l.keepDocuments = 100
	packed, err := l.Load(files("types/widget.yaml", benchWidgetType, "types/gadget.yaml", benchGadgetType, "r.yaml", b.String()), Options{Packed: true})
	if err != nil {
		t.Fatal(err)
	}
	var rs []Resource
	for _, r := range packed.All() {
		rs = append(rs, *r)
	}
	if !packed.Packed() || !reflect.DeepEqual(rs, full.Resources) {
		t.Fatal("a packed load's resources differ from a full load's")
	}
}

// TestEarlyDropSmallerRevision: a revision whose separators count more documents than the
// Loader keeps, but whose resources are fewer, loads without the data it gave up as it
// parsed: a schema problem asks for the data (ErrDataNeeded) and, loaded with it, is the
// problem a fresh load reports; and the basis it leaves serves an incremental load whose
// unchanged files come unread, as a full load would.
func TestEarlyDropSmallerRevision(t *testing.T) {
	t.Parallel()
	padded := func(size string) []sources.File {
		fs := append(widgetRepo(750), files("widgets/zz-empty.yaml", strings.Repeat("---\n", 1500))...)
		fs[1] = files(fs[1].Path, strings.Replace(string(fs[1].Data), "spec: {size: 7}", "spec: {size: "+size+"}", 1))[0]
		return fs
	}
	lean := func() *Loader {
		l := NewLoader()
		l.keepDocuments = 1499
		return l
	}
	l := lean()
	if _, err := l.Load(padded("-7"), Options{DropData: true}); !errors.Is(err, ErrDataNeeded) {
		t.Fatalf("a schema problem, data given up: %v, want ErrDataNeeded", err)
	}
	_, err := l.Load(padded("-7"), Options{})
	_, want := NewLoader().Load(padded("-7"), Options{})
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("loaded again with the data: %v\nwant %v", err, want)
	}

	l = lean()
	fs := padded("7")
	if _, err := l.Load(fs, Options{DropData: true}); err != nil {
		t.Fatal(err)
	}
	next := padded("70")
	for i := range next {
		if i != 1 {
			next[i].Data, next[i].Unread = nil, true // unchanged: the Loader holds them
		}
	}
	incrementals := l.incrementals
	set, err := l.Load(next, Options{DropData: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.incrementals != incrementals+1 || !reflect.DeepEqual(set.Resources, fullLoad(t, padded("70")).Resources) {
		t.Fatalf("from the basis: %d incremental loads, the Set differs from a full load's", l.incrementals-incrementals)
	}
}
