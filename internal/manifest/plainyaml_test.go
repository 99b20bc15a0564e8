package manifest

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// plainBothWays reads data with go-yaml alone and with the plain reader first, its nodes
// kept and reused (eachTransientDocument: each document's nodes copied before the next
// one), and fails t when the documents (index, value, every node's kind, tag, value, style,
// line and column) or the problems differ. It reports whether the plain reader read the
// whole file.
func plainBothWays(t *testing.T, data []byte, lists bool) (all bool) {
	t.Helper()
	var slow, quick, reused []rawDoc
	slowErrs := eachRootFrom(data, lists, false, false, func(rd rawDoc) { slow = append(slow, rd) })
	quickErrs := eachRootFrom(data, lists, true, false, func(rd rawDoc) { quick = append(quick, rd) })
	reusedErrs := eachRootFrom(data, lists, true, true, func(rd rawDoc) {
		rd.root = copyNode(rd.root)
		reused = append(reused, rd)
	})
	if !reflect.DeepEqual(slowErrs, quickErrs) || !reflect.DeepEqual(slowErrs, reusedErrs) {
		t.Fatalf("%q: problems differ:\n yaml:  %v\n plain: %v\n reused: %v", data, slowErrs, quickErrs, reusedErrs)
	}
	if len(slow) != len(quick) || len(slow) != len(reused) {
		t.Fatalf("%q: %d documents through go-yaml, %d with the plain reader, %d reusing its nodes", data, len(slow), len(quick), len(reused))
	}
	for i := range slow {
		if d := nodeDiff(slow[i].root, reused[i].root, "root"); d != "" || slow[i].index != reused[i].index ||
			!reflect.DeepEqual(slow[i].value, reused[i].value) {
			t.Fatalf("%q: document %d read reusing the nodes: %s %#v", data, i, d, reused[i].value)
		}
	}
	for i := range slow {
		s, q := slow[i], quick[i]
		if s.index != q.index {
			t.Fatalf("%q: document %d: index %d through go-yaml, %d with the plain reader", data, i, s.index, q.index)
		}
		if !reflect.DeepEqual(s.value, q.value) {
			t.Fatalf("%q: document %d:\n yaml:  %#v\n plain: %#v", data, i, s.value, q.value)
		}
		if d := nodeDiff(s.root, q.root, "root"); d != "" {
			t.Fatalf("%q: document %d: %s", data, i, d)
		}
	}
	_, all = eachPlainDocument(data, false, func(plainDoc) {})
	return all
}

// copyNode copies the tree n (aliases aside: the plain reader makes none).
func copyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = nil
	for _, e := range n.Content {
		c.Content = append(c.Content, copyNode(e))
	}
	return &c
}

// nodeDiff describes the first difference between two node trees, comments aside.
func nodeDiff(a, b *yaml.Node, at string) string {
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Style != b.Style || a.Line != b.Line || a.Column != b.Column ||
		a.Anchor != b.Anchor || (a.Alias == nil) != (b.Alias == nil) || len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: go-yaml %s, plain %s", at, describeNode(a), describeNode(b))
	}
	for i := range a.Content {
		if d := nodeDiff(a.Content[i], b.Content[i], fmt.Sprintf("%s[%d]", at, i)); d != "" {
			return d
		}
	}
	return ""
}

func describeNode(n *yaml.Node) string {
	return fmt.Sprintf("{kind %v tag %q value %q style %v at %d:%d, %d nodes in it}", n.Kind, n.Tag, n.Value, n.Style, n.Line, n.Column, len(n.Content))
}

// TestPlainDocumentsTable: text in the plain part of YAML is read by the plain reader and
// gives what go-yaml gives; text outside it goes through go-yaml, from the document the plain
// reader stopped at, and gives the same too.
func TestPlainDocumentsTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		all        bool // the plain reader reads all of it
	}{
		{"scale bench", "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w0000001, namespace: ns01, labels: {team: t1}}\nspec: {size: 1}\n" +
			"---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w0000002, namespace: ns02, labels: {team: t2}}\nspec: {size: 2}\n", true},
		{"block style", `# a comment
apiVersion: example.com/v1   # trailing comment
kind: DatabaseCluster
metadata:
  name: db-1
  namespace: team-1
  labels: {team: team-1, tier: gold}
  annotations:
    example.com/owner: "someone@example.com"
    note: 'it''s here'
spec:
  engine: postgres
  storage_gb: 100
  enabled: true
  nothing: null
  tags: [a, b]
  backup: {window: "01:00"}
  hosts:
    - name: a
      port: 5432
    -   name: b
        port: -1
  plain:
  - x
  - y
dependsOn:
- {kind: Network, name: net}
`, true},
		{"nested sequences", "a:\n  - - x\n", false},
		{"entry on its own line", "a:\n  -\n    b: 1\n  -\n    - c\n", true},
		{"several documents and empty ones", "---\n---\na: 1\n--- # comment\nb: [1, 2]\n---\n", true},
		{"leading comments", "# one\n\n# two\n---\na: b\n", true},
		{"empty file", "", true},
		{"only comments", "# nothing\n", true},
		{"only a marker", "---\n", true},
		{"no final newline", "a: b", true},
		{"key with colon", "a:b: c\nurl: http://example.com/x?y=1#z\n", true},
		{"words that are not booleans", "a: yes\nb: no\nc: on\nd: off\ne: y\nf: n\n", true},
		{"numbers left to go-yaml", "a: 0123\n", false},
		{"underscored number", "a: 1_000\n", false},
		{"float", "a: 1.5\n", false},
		{"exponent", "a: 1e3\n", false},
		{"dot float", "a: .5\n", false},
		{"infinity", "a: .inf\n", false},
		{"timestamp", "a: 2001-12-14\n", false},
		{"big number", "a: 123456789012345678901234567890\n", false},
		{"negative", "a: -12\nb: -0\nc: 0\n", true},
		{"merge key", "base: &b {x: 1}\nc:\n  <<: *b\n", false},
		{"anchor", "a: &x 1\nb: *x\n", false},
		{"tag", "a: !!str 1\n", false},
		{"block scalar", "a: |\n  text\nb: 1\n", false},
		{"folded scalar", "a: >\n  text\n", false},
		{"multi-line plain", "a: one\n  two\n", false},
		{"multi-line flow", "a: {b: 1,\n  c: 2}\n", false},
		{"empty value", "a:\nb: 1\n", false},
		{"empty value at the end", "a: 1\nb:\n", false},
		{"escape", "a: \"x\\ny\"\n", false},
		{"tab", "a:\t1\n", false},
		{"crlf", "a: 1\r\nb: 2\r\n", false},
		{"non-ascii", "a: é\n", false},
		{"document end", "a: 1\n...\n", false},
		{"directive", "%YAML 1.2\n---\na: 1\n", false},
		{"marker with content", "--- {a: 1}\n", false},
		{"indented root", "  a: 1\n  b: 2\n", false},
		{"scalar root", "just words\n", false},
		{"sequence root", "- a: 1\n- b: 2\n", true},
		{"bad indentation", "a:\n    b: 1\n  c: 2\n", false},
		{"second document not plain", "a: 1\n---\nb: &x 2\n---\nc: 3\n", false},
		{"third document a syntax error", "a: 1\n---\nb: 2\n---\nc: [\n", false},
		{"syntax error", "a: b: c\n", false},
		{"duplicate key", "a: 1\na: 2\n", true},
		{"key not a string", "1: a\ntrue: b\n", true},
		{"null key", "~: a\n", true},
		{"quoted keys", "\"a b\": 1\n'c''d': 2\n", true},
		{"flow in flow", "a: {b: [1, {c: d}], e: []}\nf: {}\n", true},
		{"flow pair in sequence", "a: [b: c]\n", false},
		{"trailing comma", "a: [1, 2,]\n", false},
		{"comment in flow", "a: [1, # x\n  2]\n", false},
		{"comment after flow", "a: [1, 2] # x\n", true},
		{"comment without space", "a: [1, 2]# x\n", false},
		{"hash in word", "a: b#c\n", true},
		{"question", "? a\n: b\n", false},
		{"dash word", "a: -b\n", false},
		{"dash letter word", "a: -Gi\n", true},
		{"entry as a value", "0: - Y\n", false},
		{"entry as a flow item", "a: [- Y]\n", false},
		{"sequence in a key's column", "a:\n- 1\n- 2\nb: 3\n", true},
		{"deep nesting", strings.Repeat("[", 120) + strings.Repeat("]", 120) + "\n", false},
		{"deep block nesting", deepBlock(120), false},
		{"a mapping of sequences of mappings", "a:\n  - b:\n      - c: 1\n        d: 2\n    e: 3\n", true},
		{"quoted value then text", "a: \"b\" c\n", false},
		{"long key", strings.Repeat("k", 1100) + ": 1\n", false},
		{"long quoted flow key", "a: {\"" + strings.Repeat("k", 1100) + "\": 1}\n", false},
		{"question mark in a flow word", "a: [b?c]\n", false},
		{"question mark in a flow key", "a: {k?: v}\n", false},
		{"question mark in a flow value", "a: {path: /api?x=1}\n", false},
		{"question mark in a block word", "a: b?c\n", true},
		{"fault after an empty document", "a: 1\n---\n---\n@\n", false},
		{"fault after an empty document, key not a string", "1: a\n---\n---\n@\n", false},
		{"fault after two empty documents", "a: 1\n---\n---\n---\n`x\n", false},
		{"quantities and durations", "cpu: 500m\nmemory: 1Gi\ntimeout: 30s\nport: 8080/TCP\nneg: -5s\n", true},
		{"words go-yaml may read as numbers", "a: 2d\nb: 0x1f\nc: 1e3\nd: 0o17\ne: 0b11\n", false},
		{"lines past the bound", "a:\n" + strings.Repeat("  - 1\n", maxPlainLines), false},
		{"hostile lines", strings.Repeat("a\n", 100_000), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, lists := range []bool{false, true} {
				if all := plainBothWays(t, []byte(c.text), lists); all != c.all {
					t.Errorf("lists=%v: plain reader read all: %v, want %v", lists, all, c.all)
				}
			}
		})
	}
}

// TestPlainScalarTags: the tag the plain reader gives a plain scalar, or none when go-yaml
// might read it otherwise (the document then goes to go-yaml).
func TestPlainScalarTags(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"name": "!!str", "yes": "!!str", "on": "!!str", "~x": "!!str", "/p": "!!str", "_u": "!!str", "$v": "!!str",
		"true": "!!bool", "False": "!!bool", "TRUE": "!!bool",
		"null": "!!null", "~": "!!null", "NULL": "!!null",
		"0": "!!int", "-0": "!!int", "7": "!!int", "-12": "!!int", "123456789012345678": "!!int",
		"500m": "!!str", "1Gi": "!!str", "30s": "!!str", "8080/TCP": "!!str", "-5s": "!!str", "-Gi": "!!str",
		// Left to go-yaml.
		"": "", "1234567890123456789": "", "01": "", "1_000": "", "1.5": "", "1e3": "", ".5": "", ".inf": "",
		"0x1f": "", "0o17": "", "0b11": "", "2d": "", "12ab": "", "2001-12-14": "", "-": "", "- a": "", "-b": "",
		"+1": "", "<<": "", "'q'": "", "*x": "", "&y": "", "!t": "", "|": "", "@x": "", "%x": "", "?x": "",
	} {
		n, ok := (*nodeSlab)(nil).plainScalar(text, 1, 0)
		got := ""
		if ok {
			got = n.Tag
			if n.Value != text || n.Kind != yaml.ScalarNode || n.Line != 1 || n.Column != 1 {
				t.Errorf("%q: node %s", text, describeNode(n))
			}
		}
		if got != want {
			t.Errorf("%q: tag %q, want %q", text, got, want)
		}
	}
}

// deepBlock is a block mapping nested n levels.
func deepBlock(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
	}
	fmt.Fprintf(&b, "%sv: 1\n", strings.Repeat(" ", n))
	return b.String()
}

// TestPlainDocumentsRandom: random documents built of the pieces manifests are made of, and
// of pieces outside the plain part, read both ways, agree.
func TestPlainDocumentsRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(26, 1))
	words := []string{"a", "name", "w0001", "true", "False", "null", "~", "yes", "0", "-0", "7", "-12", "0x1f", "01", "1.5", "1e3",
		".5", "2001-12-14", "a b", "a:b", "http://x/y", "a#b", "a #b", "<<", "-", "-x", "'q'", "'it''s'", "\"d\"", "\"e\\n\"", "\"\"", "''",
		"{}", "[]", "*x", "&y z", "!t v", "|", ">", "é", "a\tb", "@x", "`x", "%x", "?x", "x,y", "x]", "x}", "[1, 2]", "{k: v}", "[a: b]",
		"{a: [1, {b: c}]}", "[1,2]", "{a:1}", "$v", "/p", "_u", "b?c", "[b?c]", "500m", "1Gi", "30s", "8080/TCP", "2d", "12ab",
		"0x1G", "1e3x", "-5s", "1_0s", "2001-12-14t", "1:30", "0o", "-inf", "{k: 1Gi}", "[1h, 2m]"}
	word := func() string { return words[r.IntN(len(words))] }
	var block func(b *strings.Builder, indent, depth int)
	block = func(b *strings.Builder, indent, depth int) {
		pad := strings.Repeat(" ", indent)
		if r.IntN(4) == 0 {
			for range 1 + r.IntN(3) {
				switch k := r.IntN(6); {
				case k == 0 && depth < 4:
					b.WriteString(pad + "-\n")
					block(b, indent+2+r.IntN(2), depth+1)
				case k == 1 && depth < 4:
					b.WriteString(pad + "- ")
					sub := &strings.Builder{}
					block(sub, indent+2, depth+1)
					b.WriteString(strings.TrimLeft(sub.String(), " "))
				default:
					b.WriteString(pad + "- " + word() + "\n")
				}
			}
			return
		}
		for range 1 + r.IntN(4) {
			key := word()
			if r.IntN(3) > 0 {
				key = []string{"apiVersion", "kind", "metadata", "spec", "k1", "k2", "labels"}[r.IntN(7)]
			}
			switch k := r.IntN(8); {
			case k == 0 && depth < 4:
				b.WriteString(pad + key + ":\n")
				block(b, indent+2*(1+r.IntN(2))-r.IntN(2)*2, depth+1)
			case k == 1:
				b.WriteString(pad + key + ":" + strings.Repeat(" ", r.IntN(3)) + "\n")
			case k == 2:
				b.WriteString(pad + key + ": " + word() + " # note\n")
			case k == 3:
				b.WriteString(pad + "# comment\n\n")
				b.WriteString(pad + key + ": " + word() + "\n")
			default:
				b.WriteString(pad + key + ": " + word() + "\n")
			}
		}
	}
	plain := 0
	const n = 4000
	for i := range n {
		var b strings.Builder
		for d := range 1 + r.IntN(3) {
			if d > 0 || r.IntN(2) == 0 {
				b.WriteString([]string{"---\n", "--- # c\n", "---  \n"}[r.IntN(3)])
			}
			if r.IntN(10) > 0 {
				block(&b, 0, 0)
			}
		}
		if plainBothWays(t, []byte(b.String()), i%2 == 0) {
			plain++
		}
	}
	if plain < n/10 {
		t.Fatalf("the plain reader read %d of %d files itself", plain, n)
	}
	t.Logf("the plain reader read %d of %d files itself", plain, n)
}

// TestPlainReuseAcrossDocuments: files of many documents the plain reader reads, of shapes
// that differ from one document to the next (a long block sequence before a short one, flow
// collections, empty documents), read the same with the nodes reused as through go-yaml.
func TestPlainReuseAcrossDocuments(t *testing.T) {
	t.Parallel()
	docs := []string{
		"apiVersion: v1\nkind: Widget\nmetadata: {name: w1, namespace: ns, labels: {team: t1}}\nspec: {size: 1}\n",
		"a:\n  - x\n  - y\n  - z\n  - {k: [1, 2, {m: n}]}\n  - k2: [x]\n    k3: y\nb: 'it''s'\nc: \"q\"\n",
		"- one\n- k: v\n  l: [w]\n",
		"",
		"# only a comment\n",
		"k: {a: 1, b: [true, null, ~, -3], c: {d: {e: f}}}\n",
		"x:\n  y:\n    z: 1\n    w: [a]\n  v: 2\n",
	}
	r := rand.New(rand.NewPCG(7, 26))
	for range 300 {
		var b strings.Builder
		for range 3 + r.IntN(12) {
			b.WriteString("---\n" + docs[r.IntN(len(docs))])
		}
		if !plainBothWays(t, []byte(b.String()), r.IntN(2) == 0) {
			t.Fatalf("%q: not read by the plain reader", b.String())
		}
	}
}

// TestPlainDocumentsRepository: every YAML file of this repository reads the same both ways.
func TestPlainDocumentsRepository(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	files, plain := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if plainBothWays(t, data, false) {
			plain++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 || plain == 0 {
		t.Fatalf("%d YAML files, %d read by the plain reader: the walk found too few", files, plain)
	}
	t.Logf("%d YAML files, %d read by the plain reader itself", files, plain)
}

// FuzzPlainDocuments: whatever the bytes, both readings agree.
func FuzzPlainDocuments(f *testing.F) {
	for _, s := range []string{
		"a: 1\n",
		"---\napiVersion: v1\nkind: K\nmetadata: {name: n, labels: {a: b}}\nspec: {x: [1, 'two', \"three\"], y: {}}\n",
		"a:\n- b: 1\n  c:\n    - d\n---\ne: f # g\n",
		"a: [1, 2]\n---\nb: &x 1\n",
		"a:\n  b: 1\n c: 2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		plainBothWays(t, data, false)
	})
}

// TestIdentity: the identity fields of one document, read by the plain reader or not at all.
func TestIdentity(t *testing.T) {
	t.Parallel()
	cases := []struct {
		doc                        string
		apiVersion, kind, ns, name string
		empty, ok                  bool
	}{
		{"apiVersion: a/v1\nkind: K\nmetadata: {name: n, namespace: s}\n", "a/v1", "K", "s", "n", false, true},
		{"# a comment\napiVersion: v1\nkind: K\nmetadata:\n  name: n\nspec: {x: [1, 2]}\n", "v1", "K", "", "n", false, true},
		{"kind: K\n", "", "K", "", "", false, true},
		{"# nothing\n\n", "", "", "", "", true, true},
		{"", "", "", "", "", true, true},
		{"apiVersion: v1\nkind: K\nmetadata: {name: 12}\n", "", "", "", "", false, false},
		{"apiVersion: v1\nkind: K\nkind: L\n", "", "", "", "", false, false},
		{"apiVersion: v1\nkind: K\nmetadata: [a]\n", "", "", "", "", false, false},
		{"- a\n- b\n", "", "", "", "", false, false},
		{"a: 1\n---\nb: 2\n", "", "", "", "", false, false},
		{"apiVersion: v1\nkind: K\nmetadata: {name: \"a\\tb\"}\n", "", "", "", "", false, false},
		{"apiVersion: v1\nkind: K\nmetadata: &m {name: n}\n", "", "", "", "", false, false},
	}
	for _, c := range cases {
		a, k, ns, n, empty, ok := Identity([]byte(c.doc))
		if ok != c.ok || ok && (a != c.apiVersion || k != c.kind || ns != c.ns || n != c.name || empty != c.empty) {
			t.Errorf("%q: %q %q %q %q empty %v ok %v", c.doc, a, k, ns, n, empty, ok)
		}
	}
}
