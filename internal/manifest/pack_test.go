package manifest

import (
	"reflect"
	"testing"
	"unsafe"

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
