package manifest

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
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
	full, err := NewLoader().Load(changed, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	full, err := NewLoader().Load(changed, Options{})
	if err != nil {
		t.Fatal(err)
	}
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

	// A problem found before the data would go (a YAML error) keeps it.
	yamlBad := repo()
	yamlBad[2] = files(yamlBad[2].Path, string(yamlBad[2].Data)+"---\nkind: [\n")[0]
	if _, err := lean().Load(yamlBad, Options{DropData: true}); err == nil || errors.Is(err, ErrUnread) {
		t.Fatalf("a YAML error: %v", err)
	}
	for _, f := range yamlBad {
		if f.Data == nil {
			t.Fatalf("%s: data dropped by a load with a YAML error", f.Path)
		}
	}
	// A cached document checked against another schema is checked again from its file's
	// data: given up, the load asks for it (ErrUnread), and loads with it.
	cl := lean()
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
// documents hold no name, spec, spec hash or dependencies of their own any more (the encoded
// chunks replace them), and the Set is still, value for value, the one a Loader that keeps
// the documents returns.
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
	got, _ := ld.resources(docs, infos)
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
			if r.name != "" || r.specJSON != nil || r.specHash != "" || r.deps != nil || r.checkedWith != (sym{}) {
				t.Fatalf("%s line %d: the document still holds name %q, spec %s, hash %q, dependencies %v, check %v", p.file, p.doc.line, r.name, r.specJSON, r.specHash, r.deps, r.checkedWith)
			}
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
	// encoded, and have given up their names (a file parsed again would leave them as they are).
	resources := 0
	for key, e := range kept {
		for _, d := range e.docs {
			if d.res != nil && d.res.name != "" {
				t.Fatalf("file %s parsed again: its kept document %s was not used", key, d.res.name)
			} else if d.res != nil {
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
