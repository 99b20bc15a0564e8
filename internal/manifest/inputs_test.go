package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// describeInputs spells inputs as "file:line#index {canonical vals}", one per input.
func describeInputs(ins []*input) []string {
	var out []string
	for _, in := range ins {
		b, _ := marshalCanonical(in.vals)
		out = append(out, fmt.Sprintf("%s:%d#%d %s", in.file, in.line, in.index, b))
	}
	return out
}

func TestParseInputs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, data string
		want, errs []string
	}{
		{"mapping per document", "tenant: acme\nsize: 100\n---\ntenant: globex\nsize: 50\n",
			[]string{`t.yaml:1#0 {"size":100,"tenant":"acme"}`, `t.yaml:4#1 {"size":50,"tenant":"globex"}`}, nil},
		{"list", "- {tenant: acme}\n- tenant: globex\n  db: {host: h}\n",
			[]string{`t.yaml:1#0 {"tenant":"acme"}`, `t.yaml:2#1 {"db":{"host":"h"},"tenant":"globex"}`}, nil},
		{"lists and mappings", "- {a: 1}\n---\n{a: 2}\n---\n[]\n---\n- {a: 3}\n- {a: 4}\n",
			[]string{`t.yaml:1#0 {"a":1}`, `t.yaml:3#1 {"a":2}`, `t.yaml:7#2 {"a":3}`, `t.yaml:8#3 {"a":4}`}, nil},
		{"json", `[{"tenant": "acme", "size": 1.0}, {"tenant": "x", "tags": ["a"]}]`,
			[]string{`t.yaml:1#0 {"size":1,"tenant":"acme"}`, `t.yaml:1#1 {"tags":["a"],"tenant":"x"}`}, nil},
		{"empty file", "", nil, nil},
		{"comments only", "# none yet\n---\n", nil, nil},
		{"scalar document", "acme\n", nil, []string{"t.yaml:1: document must be a mapping or a list of mappings, got scalar"}},
		{"scalar item", "- {a: 1}\n- acme\n- [x]\n",
			[]string{`t.yaml:1#0 {"a":1}`}, []string{"t.yaml:2: [1]: an input must be a mapping, got string", "t.yaml:3: [2]: an input must be a mapping, got list"}},
		{"bad key", "- {tenant: a}\n- tenant: b\n  the-size: 1\n  2x: 2\n",
			[]string{`t.yaml:1#0 {"tenant":"a"}`}, []string{`t.yaml:3: [1].the-size: invalid input key "the-size": letters, digits and _, not starting with a digit`, `t.yaml:4: [1].2x: invalid input key "2x": letters, digits and _, not starting with a digit`}},
		{"too large", "a: " + strings.Repeat("x", 1<<20) + "\n", nil, []string{"t.yaml: file is larger than the 1 MiB limit"}},
		{"duplicate key", "a: 1\na: 2\n", nil, []string{`t.yaml:2: duplicate key "a"`}},
		{"syntax", "a: [\n", nil, []string{"t.yaml:1: invalid yaml: did not find expected node content"}},
		{"aliases bounded", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d]\n",
			nil, []string{"t.yaml:4: d[7]: aliases expand to more than 10000 nodes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins, errs := parseInputs([]byte(c.data), "t.yaml")
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, e.Error())
			}
			if got := describeInputs(ins); !slices.Equal(got, c.want) {
				t.Errorf("inputs =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if !slices.Equal(gotErrs, c.errs) {
				t.Errorf("errors =\n%s\nwant\n%s", strings.Join(gotErrs, "\n"), strings.Join(c.errs, "\n"))
			}
		})
	}
}

func TestProduct(t *testing.T) {
	t.Parallel()
	ins, _ := parseInputs([]byte("- {tenant: acme}\n- {tenant: globex, size: 5}\n"), "t.yaml")
	regions := matrixAxis{key: "region", values: []any{"eu", "us"}, line: 9}
	tiers := matrixAxis{key: "b_tier", values: []any{"gold", map[string]any{"x": true}}, line: 10}
	cases := []struct {
		name   string
		inputs []*input
		matrix []matrixAxis
		want   []string
		err    string
	}{
		{"no matrix", ins, nil, []string{`t.yaml:1#0 {"tenant":"acme"}`, `t.yaml:2#1 {"size":5,"tenant":"globex"}`}, ""},
		{"one axis", ins, []matrixAxis{regions}, []string{
			`t.yaml:1#0 {"region":"eu","tenant":"acme"}`, `t.yaml:1#0 {"region":"us","tenant":"acme"}`,
			`t.yaml:2#1 {"region":"eu","size":5,"tenant":"globex"}`, `t.yaml:2#1 {"region":"us","size":5,"tenant":"globex"}`}, ""},
		{"axes sorted, last fastest", ins[:1], []matrixAxis{regions, tiers}, []string{
			`t.yaml:1#0 {"b_tier":"gold","region":"eu","tenant":"acme"}`, `t.yaml:1#0 {"b_tier":"gold","region":"us","tenant":"acme"}`,
			`t.yaml:1#0 {"b_tier":{"x":true},"region":"eu","tenant":"acme"}`, `t.yaml:1#0 {"b_tier":{"x":true},"region":"us","tenant":"acme"}`}, ""},
		{"matrix alone", []*input{newInput(map[string]any{}, "set.yaml", 3, 0)}, []matrixAxis{regions}, []string{
			`set.yaml:3#0 {"region":"eu"}`, `set.yaml:3#0 {"region":"us"}`}, ""},
		{"input of nil maps", []*input{{file: "set.yaml", line: 4}}, []matrixAxis{regions}, []string{
			`set.yaml:4#0 {"region":"eu"}`, `set.yaml:4#0 {"region":"us"}`}, ""},
		{"no inputs", nil, []matrixAxis{regions}, nil, ""},
		{"empty axis", ins, []matrixAxis{regions, {key: "z", line: 11}}, nil, ""},
		{"clash", ins, []matrixAxis{{key: "size", values: []any{"1"}, line: 12}}, nil, "matrix key size is also a key of the input at t.yaml:2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := product(c.inputs, c.matrix)
			if c.err != "" {
				var ce *clashError
				if err == nil || err.Error() != c.err || !errors.As(err, &ce) || ce.axis.line != 12 {
					t.Fatalf("error = %v, want %s at line 12", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := describeInputs(got); !slices.Equal(d, c.want) {
				t.Errorf("product =\n%s\nwant\n%s", strings.Join(d, "\n"), strings.Join(c.want, "\n"))
			}
			for _, in := range got {
				for k, v := range in.vals {
					if b, _ := marshalCanonical(v); string(b) != string(in.canon[k]) {
						t.Errorf("canon[%s] = %s, want %s", k, in.canon[k], b)
					}
				}
			}
		})
	}
}

func TestProductSize(t *testing.T) {
	t.Parallel()
	axis := func(n int) matrixAxis { return matrixAxis{values: make([]any, n)} }
	huge := axis(1_000_000)
	for _, c := range []struct {
		inputs int
		matrix []matrixAxis
		want   int
	}{
		{3, nil, 3},
		{0, []matrixAxis{axis(2)}, 0},
		{3, []matrixAxis{axis(2), axis(5)}, 30},
		{3, []matrixAxis{axis(2), axis(0)}, 0},
		{1, []matrixAxis{huge, huge, huge, huge}, math.MaxInt},
		{1, []matrixAxis{huge, huge, huge, huge, axis(0)}, 0},
	} {
		if got := productSize(c.inputs, c.matrix); got != c.want {
			t.Errorf("productSize(%d, %d axes) = %d, want %d", c.inputs, len(c.matrix), got, c.want)
		}
	}
}

func TestUndefinedInput(t *testing.T) {
	t.Parallel()
	many := map[string]any{}
	for _, k := range strings.Fields("a b c d e f g h i j k l region") {
		many[k] = 1
	}
	for _, c := range []struct {
		name, label string
		m           map[string]any
		want        string
	}{
		{"regoin", "inputs", map[string]any{"region": 1, "size": 1, "tenant": 1}, "input regoin is not defined (inputs: region, size, tenant); did you mean region?"},
		{"Tenant", "inputs", map[string]any{"tenant": 1}, "input Tenant is not defined (inputs: tenant); did you mean tenant?"},
		{"zone", "inputs", map[string]any{"region": 1}, "input zone is not defined (inputs: region)"},
		{"region", "inputs", map[string]any{}, "input region is not defined (the input has no keys)"},
		{"db.host", "db", map[string]any{}, "input db.host is not defined (db is empty)"},
		{"db.hostt", "db", map[string]any{"host": 1, "port": 1}, "input db.hostt is not defined (db: host, port); did you mean db.host?"},
		{"regio", "inputs", many, "input regio is not defined (inputs: a, b, c, d, e, f, g, h, i, j and 3 more); did you mean region?"},
	} {
		if got := undefinedInput(c.name, c.label, c.m); got != c.want {
			t.Errorf("undefinedInput(%s) =\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// BenchmarkProduct100k crosses 1,000 inputs with a matrix of 100 combinations.
func BenchmarkProduct100k(b *testing.B) {
	ins := make([]*input, 1000)
	for i := range ins {
		ins[i] = newInput(map[string]any{"tenant": fmt.Sprintf("t%d", i), "size": json.Number("100")}, "t.yaml", i+1, i)
	}
	matrix := []matrixAxis{{key: "region", values: make([]any, 10)}, {key: "tier", values: make([]any, 10)}}
	for _, a := range matrix {
		for i := range a.values {
			a.values[i] = fmt.Sprintf("v%d", i)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := product(ins, matrix); err != nil || len(out) != 100_000 {
			b.Fatal(len(out), err)
		}
	}
}

// A product larger than one block of inputs keeps each input its own.
func TestProductLarge(t *testing.T) {
	t.Parallel()
	ins := []*input{newInput(map[string]any{"t": "a"}, "t.yaml", 1, 0), newInput(map[string]any{"t": "b"}, "t.yaml", 2, 1)}
	axis := matrixAxis{key: "n", values: make([]any, 20_000)}
	for i := range axis.values {
		axis.values[i] = json.Number(fmt.Sprint(i))
	}
	out, err := product(ins, []matrixAxis{axis})
	if err != nil || len(out) != 40_000 {
		t.Fatalf("product: %d inputs, %v", len(out), err)
	}
	for i, in := range out {
		want := fmt.Sprintf(`{"n":%d,"t":"%s"}`, i%20_000, "ab"[i/20_000:i/20_000+1])
		if b, _ := marshalCanonical(in.vals); in.index != i/20_000 || string(b) != want || string(in.canon["n"]) != fmt.Sprint(i%20_000) {
			t.Fatalf("out[%d] = #%d %s, want %s", i, in.index, b, want)
		}
	}
}

// crossAll, crossing in batches, indexes each input crossed by its input's position.
func TestCrossAllIndexes(t *testing.T) {
	t.Parallel()
	var base []*input
	for i := range 150 {
		base = append(base, newInput(map[string]any{"t": json.Number(fmt.Sprint(i))}, "t.yaml", i+1, 0))
	}
	out, err := crossAll(base, []matrixAxis{{key: "r", values: []any{"eu", "us"}}})
	if err != nil || len(out) != 300 {
		t.Fatalf("crossAll: %d inputs, %v", len(out), err)
	}
	for k, in := range out {
		if in.index != k/2 || in.vals["t"] != json.Number(fmt.Sprint(k/2)) || in.vals["r"] != []any{"eu", "us"}[k%2] {
			t.Fatalf("out[%d] = #%d %v", k, in.index, in.vals)
		}
	}
}
