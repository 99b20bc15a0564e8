package manifest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/cputime"
)

// bothWays reads data with eachDocument and eachRenderedDocument and fails t when the
// documents (index, value, root line and kind, the line of every path) or the problems
// differ. It reports whether the JSON scanner read every document itself.
func bothWays(t *testing.T, data []byte) (fast bool) {
	t.Helper()
	var slow, quick []rawDoc
	slowErrs := eachDocument(data, func(rd rawDoc) { slow = append(slow, rd) })
	quickErrs := eachRenderedDocument(data, func(rd rawDoc) { quick = append(quick, rd) })
	if !reflect.DeepEqual(slowErrs, quickErrs) {
		t.Fatalf("%q: problems differ:\n yaml: %v\n json: %v", data, slowErrs, quickErrs)
	}
	if len(slow) != len(quick) {
		t.Fatalf("%q: %d documents through YAML, %d through the scanner", data, len(slow), len(quick))
	}
	for i := range slow {
		s, q := slow[i], quick[i]
		if s.index != q.index || s.root.Line != q.root.Line || s.root.Kind != q.root.Kind || s.root.ShortTag() != q.root.ShortTag() {
			t.Fatalf("%q: document %d: index %d line %d kind %v through YAML, index %d line %d kind %v through the scanner",
				data, i, s.index, s.root.Line, s.root.Kind, q.index, q.root.Line, q.root.Kind)
		}
		if !reflect.DeepEqual(s.value, q.value) {
			t.Fatalf("%q: document %d:\n yaml: %#v\n json: %#v", data, i, s.value, q.value)
		}
		if a, b := lastNodeLine(s.root, 0), lastNodeLine(q.root, 0); a != b {
			t.Fatalf("%q: document %d: last line %d through YAML, %d through the scanner", data, i, a, b)
		}
		eachPath(s.value, nil, func(p path) {
			if a, b := lineOf(s.root, p), lineOf(q.root, p); a != b {
				t.Fatalf("%q: document %d: %s at line %d through YAML, %d through the scanner", data, i, p, a, b)
			}
		})
	}
	sc := &jsonScanner{data: data, intern: map[string]string{}}
	for {
		if _, ok := sc.document(); !ok {
			return false
		}
		if sc.pos == len(data) {
			return true
		}
	}
}

// eachPath calls fn with every path in v, and with a key and an index that are not there.
func eachPath(v any, p path, fn func(path)) {
	fn(p)
	switch v := v.(type) {
	case map[string]any:
		fn(p.key("absent"))
		for k, e := range v {
			eachPath(e, p.key(k), fn)
		}
	case []any:
		fn(p.index(len(v)))
		for i, e := range v {
			eachPath(e, p.index(i), fn)
		}
	}
}

// TestRenderedDocumentsTable: the renderer's JSON, read by the scanner, gives what go-yaml
// gives for the same bytes, whatever the values; text outside the renderer's shape goes
// through go-yaml and gives the same too.
func TestRenderedDocumentsTable(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	deepList := func(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }
	values := []struct {
		v    string
		fast bool // the scanner reads it itself
	}{
		{`1`, true}, {`0`, true}, {`-1`, true}, {`-0`, true}, {`1.0`, true}, {`-0.0`, true}, {`0.1`, true},
		{`1e3`, true}, {`1E3`, true}, {`1e+3`, true}, {`1e-3`, true}, {`1.5e300`, true}, {`5e-324`, true},
		{`1e-7`, true}, {`1e21`, true}, {`100000000000000000000000`, true}, {`123456789012345678`, true},
		{`-123456789012345678`, true}, {`1234567890123456789`, true}, {`9223372036854775807`, true},
		{`-9223372036854775808`, true}, {`9223372036854775808`, true}, {`18446744073709551615`, true},
		{`18446744073709551616`, true}, {strings.Repeat("9", 400), true}, {`1e400`, true}, {`-1e400`, true},
		{`01`, false}, {`1.`, false}, {`.5`, false}, {`+1`, false}, {`1e`, false}, {`0x10`, false}, {`-`, false},
		{`true`, true}, {`false`, true}, {`null`, true}, {`True`, false}, {`nul`, false}, {`truex`, false},
		{`""`, true}, {`"a"`, true}, {`"yes"`, true}, {`"~"`, true}, {`"null"`, true}, {`"1"`, true}, {`"1e3"`, true},
		{`"2006-01-02"`, true}, {`"# not a comment"`, true}, {`"a: b, c"`, true}, {`"&a *a !t %x @ ` + "`" + `"`, true},
		{`"\u00e9\u4e16"`, true}, {`"\u0000"`, true}, {`"\u001f\u007f"`, true}, {`"\u0085\u2028\u2029\ufeff"`, true},
		{`"\u003chtml\u003e \u0026"`, true}, {`"\"\\\b\f\n\r\t"`, true}, {`"\/"`, false}, {`"  two  spaces  "`, true},
		{`"é 世界 😀 ` + "\uFFFD" + `"`, true}, {`"\ud83d\ude00"`, false}, {`"\ud800"`, false}, {`"\x41"`, false},
		{`"\U0001F600"`, false}, {`"\a"`, false}, {`"` + "\u0085" + `"`, false}, {`"` + "\u2028" + `"`, false},
		{`"` + "\u2029" + `"`, false}, {`"` + "\ufeff" + `"`, false}, {`"` + "\x7f" + `"`, false},
		{`"` + "\u0080" + `"`, false}, {`"` + "\ufffe" + `"`, false}, {`"` + "\t" + `"`, false}, {"\"\xff\"", false},
		{`{}`, true}, {`[]`, true}, {`[{}]`, true}, {`[[],{}]`, true}, {`[1,"a",null,true,{"b":[2.5]}]`, true},
		{`{"<<":{"x":1}}`, true}, {`{"a":1,"a":2}`, false}, {`{"` + strings.Repeat("k", 990) + `":1}`, true},
		{`{"` + strings.Repeat("k", 1100) + `":1}`, false}, {`{"\u0041":1,"A\n":2}`, true}, {`{"":1}`, true},
		{deep(99), true}, {deep(100), false}, {deep(120), false}, {deepList(99), true}, {deepList(100), false},
		{`[1 ,2]`, false}, {`{"a" :1}`, false}, {`[1,]`, false}, {`{"a":1,}`, false}, {`[1`, false}, {`"a`, false},
	}
	for _, c := range values {
		data := []byte(`{"apiVersion":"x.example.com/v1","kind":"K","v":` + c.v + "}\n")
		if got := bothWays(t, data); got != c.fast {
			t.Errorf("%s: read by the scanner %v, want %v", c.v, got, c.fast)
		}
	}

	ok := `{"a":1}` + "\n"
	for _, c := range []struct {
		name, data string
		fast       bool
	}{
		{"one document", ok, true},
		{"three documents", ok + "---\n" + ok + "---\n" + `{"b":[1,{"c":"d"}]}` + "\n", true},
		{"empty", "", false},
		{"no final line break", `{"a":1}`, false},
		{"a line break inside", "{\"a\":\n1}\n", false},
		{"CRLF", "{\"a\":1}\r\n", false},
		{"a leading marker", "---\n" + ok, false},
		{"a trailing marker", ok + "---\n", false},
		{"a comment", ok + "# c\n", false},
		{"a document of YAML after", ok + "---\na: 1\n", false},
		{"an empty document between", ok + "---\n---\n" + ok, false},
		{"a list document", ok + "---\n[1]\n", false},
		{"a scalar document", ok + "---\n\"s\"\n", false},
		{"a duplicate key in the second", ok + "---\n" + `{"a":1,"a":2}` + "\n---\n" + ok, false},
		{"a syntax error in the second", ok + "---\n" + `{"a":[1}` + "\n---\n" + ok, false},
		{"a syntax error in the third", ok + "---\n" + ok + "---\n" + `{"a":}}` + "\n", false},
		{"a NEL in the second", ok + "---\n" + "{\"a\":\"x\u0085y\"}\n", false},
		{"deep in the second", ok + "---\n" + deep(101) + "\n", false},
		{"a control character two documents on", ok + "---\n" + ok + "---\n" + "{\"a\":\"\x7f\"}\n", false},
		{"invalid UTF-8 two documents on", ok + "---\n" + ok + "---\n" + "{\"a\":\"\xff\"}\n", false},
		{"a bad escape in the next key", ok + "---\n" + `{"\/":1}` + "\n", false},
		{"a marker and more on its line", ok + "--- " + ok, false},
	} {
		if got := bothWays(t, []byte(c.data)); got != c.fast {
			t.Errorf("%s: read by the scanner %v, want %v", c.name, got, c.fast)
		}
	}
}

// TestRenderedDocumentsRandom: random documents written as the renderer writes them
// (encoding/json) read the same both ways, and the scanner reads them itself unless they
// hold a character YAML reads otherwise.
func TestRenderedDocumentsRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(24, 2))
	runes := []rune("aZ09 -_:#&*!|>'\"%@`,[]{}?\\/\t\n\r\x00\x1f\x7f\u0085\u00a0é世😀\u2028\u2029\ufeff<>&~")
	str := func() string {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		return b.String()
	}
	numbers := []string{"0", "-0", "1", "-7", "1.5", "1e3", "2.5E-3", "-0.0", "12345678901234567890", "1e300", "3.0"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(10); {
		case k < 2 && depth < 6:
			m := map[string]any{}
			for range r.IntN(5) {
				m[str()] = gen(depth + 1)
			}
			return m
		case k < 4 && depth < 6:
			l := make([]any, r.IntN(4))
			for i := range l {
				l[i] = gen(depth + 1)
			}
			return l
		case k < 6:
			return str()
		case k < 8:
			return json.Number(numbers[r.IntN(len(numbers))])
		case k < 9:
			return r.IntN(2) == 0
		}
		return nil
	}
	fast := 0
	const n = 3000
	for range n {
		var b strings.Builder
		for d := range 1 + r.IntN(3) {
			if d > 0 {
				b.WriteString("---\n")
			}
			doc := map[string]any{"apiVersion": "x.example.com/v1", "kind": "K", "spec": gen(0)}
			j, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(j)
			b.WriteByte('\n')
		}
		if bothWays(t, []byte(b.String())) {
			fast++
		}
	}
	if fast < n/4 {
		t.Fatalf("the scanner read %d of %d files itself", fast, n)
	}
	t.Logf("the scanner read %d of %d files itself", fast, n)
}

// FuzzRenderedDocuments: whatever the bytes, both readings agree.
func FuzzRenderedDocuments(f *testing.F) {
	for _, s := range []string{
		`{"a":1}` + "\n",
		`{"apiVersion":"v1","kind":"K","spec":{"x":[1,2.5,"s\u00e9",null,true,{}]}}` + "\n---\n" + `{"b":-0}` + "\n",
		`{"a":"\u2028"}` + "\n",
		`{"a":1e400}` + "\n",
		"{\"a\":1}\n---\n{\"a\":[}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bothWays(t, data)
	})
}

// BenchmarkParseRendered10k: parseFile over a render's output of 10,000 widgets in 100 files
// (the shape of the bench's synckustomize), through go-yaml (yaml) and the scanner (json).
func BenchmarkParseRendered10k(b *testing.B) {
	files := make([][]byte, 100)
	for f := range files {
		var w strings.Builder
		for i := range 100 {
			if i > 0 {
				w.WriteString("---\n")
			}
			n := f*100 + i
			fmt.Fprintf(&w, `{"apiVersion":"bench.example.com/v1","kind":"Widget","metadata":{"labels":{"env":"prod","team":"t%d"},"name":"prod-w%06d","namespace":"ns%d"},"spec":{"size":%d}}`+"\n", n%7, n, n%3, n)
		}
		files[f] = []byte(w.String())
	}
	for _, c := range []struct {
		name     string
		rendered bool
	}{{"yaml", false}, {"json", true}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, cputime.Self())
			for b.Loop() {
				for _, data := range files {
					if e := parseFile(data, c.rendered); len(e.errs) > 0 || len(e.docs) != 100 {
						b.Fatal(e.errs)
					}
				}
			}
		})
	}
}
