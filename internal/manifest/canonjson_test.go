package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/trueup-dev/trueup/internal/graph"
)

// decodeWithJSON is what the checks decode a spec with when decodeCanonical declines.
func decodeWithJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errTrailing
	}
	return v, nil
}

var errTrailing = errors.New("more after the value")

func TestDecodeCanonical(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`{}`, true}, {`[]`, true}, {`{"a":1,"b":[true,false,null,"x",-0.5e+3,0,12,1E2]}`, true},
		{`{"a":{"b":{"c":[[],{}]}}}`, true}, {`"plain"`, true}, {`"tab\tand \"quotes\" \u00e9 \ud83d\ude00"`, true},
		{`"é ü"`, true}, {"\"\xff\"", true}, {`{"k\n":"v"}`, true}, {`-0`, true}, {`1.25`, true},
		// Declined: encoding/json decides.
		{`{ }`, false}, {`{"a": 1}`, false}, {`[1 ]`, false}, {`01`, false}, {`1.`, false}, {`.5`, false}, {`1e`, false},
		{`+1`, false}, {`-`, false}, {`tru`, false}, {`nulls`, false}, {`{"a":1,}`, false}, {`[1,]`, false}, {`{"a"}`, false},
		{`{1:2}`, false}, {"\"a\x01\"", false}, {`"a\"`, false}, {`"unterminated`, false}, {``, false}, {`{"a":1}x`, false},
		{`"\x"`, false}, {strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2), false},
	} {
		got, ok := decodeCanonical(c.in)
		if ok != c.ok {
			t.Errorf("%q: ok %t, want %t", c.in, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		want, err := decodeWithJSON(c.in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %#v, encoding/json %#v (%v)", c.in, got, want, err)
		}
	}
	// What marshalCanonical writes decodes back to what it was written from.
	v := map[string]any{"s": "a<b>&\u2028", "n": json.Number("-12.5e-3"), "l": []any{map[string]any{}, []any{}, nil, true},
		"m": map[string]any{"deep": map[string]any{"x": "\\\"/"}}}
	b, err := marshalCanonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := decodeCanonical(string(b)); !ok || !reflect.DeepEqual(got, v) {
		t.Fatalf("%s: %#v (%t)", b, got, ok)
	}
}

// FuzzDecodeCanonical: whatever decodeCanonical decodes, encoding/json decodes the same; and
// what marshalCanonical writes of encoding/json's value, decodeCanonical reads.
func FuzzDecodeCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b",{"c":null}]}`, `"x\u0041"`, `-0.0e-0`, `[[[]]]`, "\"\xc3\"", `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := decodeWithJSON(s)
		if got, ok := decodeCanonical(s); ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Fatalf("%q: %#v, encoding/json %#v (%v)", s, got, want, err)
		}
		if err != nil {
			return
		}
		b, err := marshalCanonical(want)
		if err != nil || bytes.Count(b, []byte{'['})+bytes.Count(b, []byte{'{'}) > maxDepth {
			return
		}
		if got, ok := decodeCanonical(string(b)); !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q, canonical %s: %#v (%t), want %#v", s, b, got, ok, want)
		}
	})
}

// TestOutputRefsOwnTheirNames: the strings of a spec read by decodeCanonical are parts of
// its canonical JSON; the dependencies an output reference implies, which the cached
// document keeps, hold copies, so that the spec is not kept with them.
func TestOutputRefsOwnTheirNames(t *testing.T) {
	t.Parallel()
	written := `{"a":"${{ Network/core/vpc.outputs.id }}","b":["${{ Subnet/s1.outputs.cidr }}"]}`
	v, ok := decodeCanonical(written)
	if !ok {
		t.Fatal("declined")
	}
	deps, problems := outputRefs(v, graph.ID{Kind: "Widget", Namespace: "ns", Name: "w"}, specRoot)
	if len(deps) != 2 || len(problems) != 0 {
		t.Fatalf("%v %v", deps, problems)
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(written)))
	within := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return s != "" && p >= lo && p < lo+uintptr(len(written))
	}
	for _, d := range deps {
		if within(d.Target.Kind) || within(d.Target.Namespace) || within(d.Target.Name) {
			t.Fatalf("%+v: a name is part of the spec", d.Target)
		}
	}
}
