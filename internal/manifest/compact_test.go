package manifest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/sources"
)

// TestCompactRoundTrip: resources encoded (compactOf) and decoded are the same values, field
// by field, over several chunks: nil and empty kept apart, spec hashes in hex and others,
// dependencies with and without outputs, the maps a Set shares still shared.
func TestCompactRoundTrip(t *testing.T) {
	// Every field of Resource is encoded: a field added to it must be added to the encoding
	// (and to this test's resources).
	for typ, n := range map[reflect.Type]int{reflect.TypeFor[Resource](): 15, reflect.TypeFor[Dependency](): 3, reflect.TypeFor[graph.ID](): 3} {
		if got := typ.NumField(); got != n {
			t.Fatalf("%s has %d fields, the encoding knows %d", typ, got, n)
		}
	}
	team := map[string]string{"team": "a"}
	note := map[string]string{"note": "x", "trueup.dev/prune": "disabled"}
	hash := HashJSON(json.RawMessage(`{"size":1}`))
	var rs []Resource
	for i := range 2*packChunk + 5 {
		r := Resource{
			APIVersion: "example.com/v1", Kind: "Widget", Namespace: fmt.Sprintf("ns%d", i%3), Name: fmt.Sprintf("w%05d", i),
			Labels: team, Annotations: map[string]string{}, Spec: json.RawMessage(fmt.Sprintf(`{"size":%d}`, i)), SpecHash: hash,
			MetaHash: HashJSON(json.RawMessage(fmt.Sprintf(`{"m":%d}`, i/3))), // runs of three
			File:     fmt.Sprintf("f%d.yaml", i/100), Line: i%100 + 1,
		}
		switch i % 9 {
		case 1:
			r.Labels, r.Annotations = nil, note
			r.MetaHash = hash // a hash, shared with the spec's
		case 0:
			r.Annotations = nil
			r.MetaHash = HashJSON(json.RawMessage(fmt.Sprintf(`{"meta":%d}`, i))) // a hash of its own
		case 2:
			r.Spec = nil
		case 3:
			r.Spec, r.SpecHash = json.RawMessage{}, "" // empty, not nil
		case 4:
			r.SpecHash = "ABCDEF"                    // not the hash's lowercase hex: kept as written
			r.MetaHash = fmt.Sprintf("meta-%d", i%7) // nor this
		case 5:
			r.DependsOn = []Dependency{
				{Target: graph.ID{Kind: "Network", Namespace: "ns0", Name: "core"}, Explicit: true},
				{Target: graph.ID{Kind: "Queue", Namespace: "ns1", Name: "q"}, Outputs: []string{"arn", "db.host"}},
				{Target: graph.ID{Kind: "Disk", Namespace: "ns1", Name: "d"}, Outputs: []string{}},
			}
		case 6:
			r.DependsOn = []Dependency{} // empty, not nil
			r.Sealed = "sops: {}\n"
		case 7:
			r.fileOrigin, r.Line = "rendered by k/kustomization.yaml", 0
		case 8:
			r.Name, r.Namespace, r.Kind, r.APIVersion = "", "", "", ""
		}
		rs = append(rs, r)
	}
	c, ok := compactOf(rs)
	if !ok {
		t.Fatal("compactOf refused resources without a ResourceSet")
	}
	for _, room := range []bool{false, true} {
		got := c.resources(room)
		if len(got) != len(rs) {
			t.Fatalf("%d resources decoded, want %d", len(got), len(rs))
		}
		if room && cap(got) <= len(got) {
			t.Errorf("room asked, capacity %d for %d resources", cap(got), len(got))
		}
		for i := range rs {
			if !reflect.DeepEqual(got[i], rs[i]) {
				t.Fatalf("resource %d decoded as\n%#v\nwant\n%#v", i, got[i], rs[i])
			}
			if rs[i].Labels != nil && reflect.ValueOf(got[i].Labels).UnsafePointer() != reflect.ValueOf(team).UnsafePointer() {
				t.Fatalf("resource %d: its labels are a copy; want the map the Set shares", i)
			}
			if r := got[i]; cap(r.Spec) != len(r.Spec) {
				t.Fatalf("resource %d: spec capacity %d, length %d", i, cap(r.Spec), len(r.Spec))
			}
		}
	}
	// The decoded copies are the caller's: writing into one leaves the encoding as it was.
	got := c.resources(false)
	got[0].Name, got[0].Spec[0] = "changed", 'x'
	if again := c.resources(false); !reflect.DeepEqual(again[0], rs[0]) {
		t.Fatalf("the encoding changed with a decoded copy: %#v", again[0])
	}

	gen := []Resource{{Name: "a"}, {Name: "b", gen: &genRef{}}}
	if _, ok := compactOf(gen); ok {
		t.Fatal("a generated resource was encoded: its origin is not")
	}
}

// TestBinaryHash: only the lowercase hex of 32 bytes is stored as bytes.
func TestBinaryHash(t *testing.T) {
	h := HashJSON(json.RawMessage(`{}`))
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{h, true},
		{"", false},
		{h[:63], false},
		{h + "0", false},
		{"A" + h[1:], false},
		{"g" + h[1:], false},
	} {
		raw, ok := binaryHash(c.s)
		if ok != c.ok {
			t.Errorf("binaryHash(%q) ok = %t, want %t", c.s, ok, c.ok)
			continue
		}
		if ok {
			var hx [64]byte
			hex.Encode(hx[:], raw[:])
			if string(hx[:]) != c.s {
				t.Errorf("binaryHash(%q) back to hex: %q", c.s, hx[:])
			}
		}
	}
}

// TestCompactAtRest: past keepDocuments, a Set handed back stays the basis's Set for the
// next load, which writes into it, and is encoded once at rest (compactAtRest, which the
// timer of the last Release runs); the load after that decodes it and gives a full load's
// Set. The timer of an earlier Release finds a basis not handed back and leaves it; a failed
// load leaves the Set handed back to be encoded.
func TestCompactAtRest(t *testing.T) {
	t.Parallel()
	repo := widgetRepo(1200) // three files
	change := func(size int) []sources.File {
		out := slices.Clone(repo)
		out[1] = files(out[1].Path, strings.Replace(string(out[1].Data), "spec: {size: 0}", fmt.Sprintf("spec: {size: %d}", size), 1))[0]
		return out
	}
	l := NewLoader()
	l.keepDocuments, l.compactAfter = 10, time.Hour // the test runs compactAtRest itself
	packed := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.last != nil && l.last.packed != nil
	}
	load := func(fs []sources.File) *Set {
		t.Helper()
		set, err := l.Load(fs, Options{ReuseSet: true})
		if err != nil {
			t.Fatal(err)
		}
		want, err := NewLoader().Load(fs, Options{ReuseSet: true})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(set, want) {
			t.Fatalf("Set differs from a full load's:\n%s", setDiff(set, want))
		}
		return set
	}

	first := load(repo)
	l.Release(first)
	second := load(change(1))
	if &second.Resources[0] != &first.Resources[0] {
		t.Fatal("the load after a Release did not write into the Set handed back")
	}
	l.compactAtRest() // the first Release's timer: the basis is second's, not handed back
	if packed() {
		t.Fatal("a basis whose Set was not handed back was encoded")
	}
	l.Release(second)
	l.compactAtRest()
	if !packed() {
		t.Fatal("the basis was not encoded at rest")
	}
	before := l.incrementals
	third := load(change(2))
	if l.incrementals != before+1 {
		t.Fatal("the load from an encoded basis was not incremental")
	}
	if packed() {
		t.Fatal("the loaded Set is the basis until handed back")
	}
	l.Release(third)
	// A failed load leaves the basis as it was, handed back: encoded at rest.
	bad := slices.Clone(repo)
	bad[1] = files(bad[1].Path, "apiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: broken, namespace: ns00}\nspec: {size: nope}\n")[0]
	if _, err := l.Load(bad, Options{ReuseSet: true}); err == nil {
		t.Fatal("a widget of size nope was loaded")
	}
	l.compactAtRest()
	if !packed() {
		t.Fatal("the basis handed back before a failed load was not encoded at rest")
	}
	fourth := load(change(3))
	// A failed load leaves the Set handed back for the next load to write into.
	l.Release(fourth)
	if _, err := l.Load(bad, Options{ReuseSet: true}); err == nil {
		t.Fatal("a widget of size nope was loaded")
	}
	fifth := load(change(4))
	if &fifth.Resources[0] != &fourth.Resources[0] {
		t.Fatal("the load after a failed one did not write into the Set handed back before it")
	}

	// The timer runs it: made by a Loader's first Release, reset by the next ones.
	for _, first := range []bool{true, false} {
		timed := NewLoader()
		timed.keepDocuments, timed.compactAfter = 10, 10*time.Millisecond
		set, err := timed.Load(repo, Options{ReuseSet: true})
		if err != nil {
			t.Fatal(err)
		}
		if !first {
			timed.Release(set)
			if set, err = timed.Load(change(5), Options{ReuseSet: true}); err != nil {
				t.Fatal(err)
			}
		}
		timed.Release(set)
		if !awaitPacked(timed) {
			t.Fatalf("the basis was not encoded compactAfter after the Release (the Loader's first: %t)", first)
		}
	}
}

// awaitPacked reports whether l's basis is encoded within 10 seconds (its timer's work).
func awaitPacked(l *Loader) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		l.mu.Lock()
		done := l.last.packed != nil
		l.mu.Unlock()
		if done {
			return true
		}
	}
	return false
}

// TestCompactAtRestGivesWay: the encoding at rest stops for a call waiting for the Loader
// (the Set stays, for that load to write into in place) and is tried again compactAfter
// later; with none waiting it encodes the basis, on one goroutine as on all.
func TestCompactAtRestGivesWay(t *testing.T) {
	t.Parallel()
	// A basis at rest to encode: an incremental load's, handed back, with the timer an hour
	// away.
	resting := func() (*Loader, *Set) {
		t.Helper()
		l := NewLoader()
		l.keepDocuments, l.compactAfter = 10, time.Hour
		repo := widgetRepo(9000) // three chunks
		set, err := l.Load(repo, Options{ReuseSet: true})
		if err != nil {
			t.Fatal(err)
		}
		l.Release(set)
		repo[1] = files(repo[1].Path, strings.Replace(string(repo[1].Data), "spec: {size: 0}", "spec: {size: 1}", 1))[0]
		if set, err = l.Load(repo, Options{ReuseSet: true}); err != nil {
			t.Fatal(err)
		}
		if l.last.packed != nil || l.incrementals != 1 {
			t.Fatalf("the basis of the second load: encoded %t, %d incremental loads", l.last.packed != nil, l.incrementals)
		}
		l.Release(set)
		return l, set
	}
	l, set := resting()
	// The give-ways in a row are counted for a basis: another's at the cap does not stop this
	// one's encoding from giving way.
	l.gaveWay, l.gaveWayFor = maxGiveWay, weak.Make(&basis{})
	l.waiting.Add(1)
	l.compactAtRest()
	l.waiting.Add(-1)
	l.mu.Lock()
	if l.last.packed != nil || l.last.set != set {
		t.Fatal("the encoding at rest did not give way to a waiting call")
	}
	l.mu.Unlock()
	l.compactAtRest() // the timer's retry, run here
	l.mu.Lock()
	packed, kept := l.last.packed, l.last.set
	l.mu.Unlock()
	if packed == nil || kept != nil {
		t.Fatal("the basis was not encoded at rest with nothing waiting")
	}
	if got, want := packed.resources(false), set.Resources; !reflect.DeepEqual(got, want) {
		t.Fatalf("the basis encoded on one goroutine decodes to another Set:\n%s", setDiff(&Set{Resources: got}, &Set{Resources: want}))
	}

	// Given way, the encoding is tried again compactAfter later (the timer), and after
	// maxGiveWay times in a row it runs to its end whatever waits.
	for _, waiting := range []bool{false, true} {
		l, _ := resting()
		l.waiting.Add(1)
		tries := 1
		if waiting {
			tries = maxGiveWay + 1
		} else {
			l.compactAfter = 10 * time.Millisecond
		}
		for range tries {
			l.compactAtRest()
		}
		l.waiting.Add(-1)
		if !awaitPacked(l) {
			t.Fatalf("the basis was not encoded after the encoding gave way (%d tries, a call still waiting: %t)", tries, waiting)
		}
	}

	// Load, Holds, Release and CheckTransitions count themselves as waiting while the Loader
	// is busy: the encoding at rest gives way to each.
	for name, call := range map[string]func(){
		"Load":    func() { _, _ = l.Load(widgetRepo(9000), Options{}) },
		"Holds":   func() { l.Holds("x.yaml", "h") },
		"Release": func() { l.Release(nil) },
		"CheckTransitions": func() {
			_ = l.CheckTransitions(&Set{Resources: []Resource{{}}, transitions: []transitionCheck{{}}}, map[ResourceKey]json.RawMessage{{}: nil})
		},
	} {
		l.mu.Lock()
		done := make(chan struct{})
		go func() { defer close(done); call() }()
		for deadline := time.Now().Add(10 * time.Second); l.waiting.Load() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				l.mu.Unlock()
				t.Fatalf("%s waits for the Loader without counting itself", name)
			}
		}
		l.mu.Unlock()
		<-done
	}

	// Stopped at the second of three chunks: nothing is encoded.
	calls := 0
	c, ok, stopped := compactWith(set.Resources, 1, func() bool { calls++; return calls > 1 })
	if c != nil || ok || !stopped {
		t.Fatalf("compactWith stopped at a chunk gave %v, %t, %t", c != nil, ok, stopped)
	}
}
