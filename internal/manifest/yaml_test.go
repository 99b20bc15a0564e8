package manifest

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// convert parses a one-document file and returns its canonical JSON, or its errors.
func convert(t *testing.T, src string) (string, []string) {
	t.Helper()
	docs, errs := parseStream([]byte(src))
	var msgs []string
	for _, e := range errs {
		e.File = "f.yaml"
		msgs = append(msgs, e.Error())
	}
	if len(errs) > 0 {
		return "", msgs
	}
	if len(docs) != 1 {
		t.Fatalf("got %d documents, want 1", len(docs))
	}
	b, err := marshalCanonical(docs[0].value)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

func TestConvertScalars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"plain", "a: 1\nb: x\nc: true\nd: null\ne: ~\nf:\n", `{"a":1,"b":"x","c":true,"d":null,"e":null,"f":null}`},
		{"yaml integers", "a: 0x10\nb: 1_000\nc: -7\nd: 0o17\ne: 18446744073709551615", `{"a":16,"b":1000,"c":-7,"d":15,"e":18446744073709551615}`},
		{"integers beyond uint64 stay exact", "a: 123456789012345678901234567890\nb: -98765432109876543210987654321\nc: 9007199254740993",
			`{"a":123456789012345678901234567890,"b":-98765432109876543210987654321,"c":9007199254740993}`},
		{"floats", "a: 2.0\nb: 1e3\nc: -0.5\nd: 1.5e-9", `{"a":2,"b":1000,"c":-0.5,"d":1.5e-9}`},
		{"strings stay strings", "a: '1'\nb: \"true\"\nc: !!str 12\nd: yes\ne: 1.2.3", `{"a":"1","b":"true","c":"12","d":"yes","e":"1.2.3"}`},
		{"timestamps and binary kept as written", "a: 2001-12-14\nb: !!binary aGk=", `{"a":"2001-12-14","b":"aGk="}`},
		{"anchors and aliases", "a: &x {k: [1, 2]}\nb: *x", `{"a":{"k":[1,2]},"b":{"k":[1,2]}}`},
		{"merge keys", "base: &b {x: 1, y: 2}\nover: {<<: *b, y: 3}\nmany: {<<: [{p: 1}, {p: 2, q: 2}]}", `{"base":{"x":1,"y":2},"many":{"p":1,"q":2},"over":{"x":1,"y":3}}`},
		{"json with tabs", "{\n\t\"a\": [1, {\"b\": null}],\n\t\"c\": \"<&>\"\n}\n", `{"a":[1,{"b":null}],"c":"<&>"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, errs := convert(t, tt.src)
			if errs != nil {
				t.Fatalf("errors: %v", errs)
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"syntax error with line", "a: 1\nb:\n  - x\n y: 2\n", "f.yaml:4: invalid yaml: did not find expected key"},
		{"unclosed flow mapping", "a: 1\nb: {c: 1\n", "f.yaml:2: invalid yaml: did not find expected ',' or '}'"},
		{"tab indentation", "a: 1\nb:\n\tc: 1\n", "f.yaml:3: invalid yaml: found character that cannot start any token"},
		{"sequence inside a mapping", "a: 1\n- b\n", "f.yaml:2: invalid yaml: did not find expected key"},
		{"syntax error on the first line", "a: b: c\n", "f.yaml:1: invalid yaml: mapping values are not allowed in this context"},
		{"unknown anchor", "a: 1\nb: *nope\n", "f.yaml:2: invalid yaml: unknown anchor 'nope' referenced"},
		{"not a mapping", "a: 1\n---\n- a\n- b\n", "f.yaml:3: document must be a mapping, got sequence"},
		{"integer key", "spec:\n  1: one\n", "f.yaml:2: spec: mapping keys must be strings, got !!int 1"},
		{"boolean key", "spec: {true: x}\n", "f.yaml:1: spec: mapping keys must be strings, got !!bool true"},
		{"complex key", "? [a]\n: x\n", "f.yaml:1: mapping keys must be strings, got sequence"},
		{"duplicate key", "a: 1\nspec:\n  x: 1\n  x: 2\n", `f.yaml:4: spec: duplicate key "x"`},
		{"custom tag", "spec:\n  list: [1, !secret abc]\n", "f.yaml:2: spec.list[1]: unsupported tag !secret"},
		{"infinity", "spec: {size: .inf}\n", "f.yaml:1: spec.size: +Inf cannot be represented in JSON"},
		{"bad merge", "a: {<<: 1}\n", `f.yaml:1: a: merge (<<) needs a mapping or a list of mappings`},
		{"recursive alias", "a: &x [1, *x]\n", "f.yaml:1: a[1]: nesting deeper than 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errs := convert(t, tt.src)
			if len(errs) != 1 || errs[0] != tt.want {
				t.Errorf("errors = %q\nwant     %q", errs, tt.want)
			}
		})
	}
}

// nested returns a document whose spec nests mappings so that the document has levels
// levels of nesting in all (the document itself is level 1, spec level 2).
func nested(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: example.com/v1\nkind: Deep\nmetadata: {name: deep}\nspec: ")
	for range levels - 1 {
		b.WriteString("{a: ")
	}
	b.WriteString("1")
	for range levels - 1 {
		b.WriteString("}")
	}
	b.WriteString("\n")
	return b.String()
}

func TestDepthLimit(t *testing.T) {
	t.Parallel()
	if _, errs := convert(t, nested(100)); errs != nil {
		t.Fatalf("100 levels: %v", errs)
	}
	_, errs := convert(t, nested(101))
	want := "f.yaml:4: spec" + strings.Repeat(".a", 99) + ": nesting deeper than 100 levels"
	if len(errs) != 1 || errs[0] != want {
		t.Errorf("101 levels: errors = %q, want %q", errs, want)
	}
	// Far deeper than the parser's own limit must still be an error, not a stack overflow.
	if _, errs := convert(t, "a: "+strings.Repeat("[", 200_000)); len(errs) != 1 || !strings.Contains(errs[0], "exceeded max depth") {
		t.Errorf("200000 levels: errors = %q", errs)
	}
}

func TestFileSizeLimit(t *testing.T) {
	t.Parallel()
	big := "a: |\n" + strings.Repeat("  "+strings.Repeat("x", 1000)+"\n", 1100)
	_, errs := convert(t, big)
	if want := "f.yaml: file is larger than the 1 MiB limit"; len(errs) != 1 || errs[0] != want {
		t.Errorf("errors = %q, want %q", errs, want)
	}
}

const billionLaughs = `apiVersion: example.com/v1
kind: Laugh
metadata: {name: lol}
spec:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

func TestBillionLaughs(t *testing.T) {
	// Not parallel: it measures this goroutine's allocations.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, errs := convert(t, billionLaughs)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)

	if want := "f.yaml:9: spec.e[0]: aliases expand to more than 10000 nodes"; len(errs) != 1 || errs[0] != want {
		t.Errorf("errors = %q, want %q", errs, want)
	}
	if elapsed > time.Second {
		t.Errorf("took %v, want well under a second", elapsed)
	}
	t.Logf("billion laughs: %v, %d KiB allocated", elapsed, (after.TotalAlloc-before.TotalAlloc)>>10)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("allocated %d MiB, want a bounded amount", alloc>>20)
	}

	// Many such documents in one file share the per-file bound.
	many := strings.Repeat("---\n"+billionLaughs, 30)
	start = time.Now()
	_, errs = convert(t, many)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("30 documents took %v", elapsed)
	}
	if len(errs) != 30 || !strings.HasSuffix(errs[29], "aliases expand to more than 100000 nodes in this file") {
		t.Errorf("got %d errors, last %q", len(errs), errs[len(errs)-1])
	}
}

func TestPathString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    path
		want string
	}{
		{path{}, ""},
		{path{"spec"}, "spec"},
		{path{"spec", "versions", 0, "schema"}, "spec.versions[0].schema"},
		{path{"metadata", "labels", "app.kubernetes.io/name"}, `metadata.labels["app.kubernetes.io/name"]`},
		{path{"spec", "with space", 2}, `spec["with space"][2]`},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestPointerPath(t *testing.T) {
	t.Parallel()
	v := map[string]any{
		"list": []any{"a", map[string]any{"0": "x", "a/b": 1}},
	}
	tests := []struct{ ptr, want string }{
		{"", "spec"},
		{"/list/1", "spec.list[1]"},
		{"/list/1/0", `spec.list[1].0`},
		{"/list/1/a~1b", `spec.list[1]["a/b"]`},
		{"/missing/deeper", "spec.missing.deeper"},
	}
	for _, tt := range tests {
		if got := pointerPath(path{"spec"}, v, tt.ptr).String(); got != tt.want {
			t.Errorf("pointerPath(%q) = %q, want %q", tt.ptr, got, tt.want)
		}
	}
}

func TestLineOf(t *testing.T) {
	t.Parallel()
	src := `base: &base
  size: 1
  nested:
    x: 2
spec:
  <<: *base
  own: 3
  list:
    - a
    - *base
`
	docs, errs := parseStream([]byte(src))
	if errs != nil {
		t.Fatal(errs)
	}
	root := docs[0].root
	tests := []struct {
		p    path
		want int
	}{
		{path{}, 1},
		{path{"spec"}, 5},
		{path{"spec", "own"}, 7},
		{path{"spec", "size"}, 2},                   // found through the merge
		{path{"spec", "list", 1, "nested", "x"}, 4}, // through an alias
		{path{"spec", "list", 5}, 8},                // no such item: the list
		{path{"spec", "missing", "deeper"}, 5},      // a default: nearest parent
	}
	for _, tt := range tests {
		if got := lineOf(root, tt.p); got != tt.want {
			t.Errorf("lineOf(%s) = %d, want %d", tt.p, got, tt.want)
		}
	}
}
