package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/sources"
)

// Limits on untrusted input. Manifests come from any commit pushed to a watched repository,
// so a hostile or broken file must cost an error, never the controller's memory or stack.
const (
	maxFileSize = sources.MaxFileBytes // bytes per file
	maxDepth    = 100                  // nested mappings and sequences per document
	// maxAliasNodes bounds the nodes produced by expanding aliases in one document, which
	// is what makes "billion laughs" documents explode; maxFileAliasNodes bounds them per
	// file, so that a file of many small such documents cannot multiply the bound.
	maxAliasNodes     = 10_000
	maxFileAliasNodes = 100_000
	// maxDecodedSize bounds a document's decoded size, counted while converting (scalar and
	// key bytes, one per node), aliases expanded: the node bounds above let a few aliases
	// of a long string through, 100 of a 1 MB one being 100 MB. maxFileDecodedSize bounds
	// a file of many such documents. Without aliases a document's count stays below its
	// bytes in the file.
	maxDecodedSize     = 1 << 20
	maxFileDecodedSize = 8 << 20
)

// path locates a value inside a document: string elements are mapping keys, int elements
// sequence indices.
type path []any

func (p path) key(k string) path { return append(p[:len(p):len(p)], k) }
func (p path) index(i int) path  { return append(p[:len(p):len(p)], i) }

var simpleKey = regexp.MustCompile(`^[A-Za-z0-9_$-]+$`)

// String spells the path the way users read it: spec.versions[0].schema, with keys that
// would be ambiguous in dotted form quoted, as in metadata.labels["app.kubernetes.io/name"].
func (p path) String() string {
	var b strings.Builder
	for _, e := range p {
		switch e := e.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", e)
		case string:
			if !simpleKey.MatchString(e) {
				b.WriteString("[" + strconv.Quote(e) + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e)
		}
	}
	return b.String()
}

// rawDoc is one non-empty document of a file.
type rawDoc struct {
	index int        // position in the YAML stream, counting empty documents
	root  *yaml.Node // the document's top-level node; without Content when read by the JSON scanner (rendered.go)
	value any        // root converted to JSON-like values
}

// parseStream splits a file into documents, converts each to JSON-like values and reports
// syntax errors and limit violations. Errors carry no File: the result is cached by content
// and the same content may appear under several paths.
func parseStream(data []byte) ([]rawDoc, []ValidationError) {
	var docs []rawDoc
	errs := eachDocument(data, func(rd rawDoc) { docs = append(docs, rd) })
	return docs, errs
}

// eachDocument is parseStream handing each document to fn as soon as it is parsed, so that
// no more than one document's nodes need to be held at a time: the nodes of a 1 MiB file
// of small documents take over 30 MB.
func eachDocument(data []byte, fn func(rawDoc)) []ValidationError {
	return eachRoot(data, false, fn)
}

// eachRoot is eachDocument also taking documents that are sequences when lists is set (a
// file of ResourceSet inputs). The plain reader (plainyaml.go) reads what it can; go-yaml
// reads the rest.
func eachRoot(data []byte, lists bool, fn func(rawDoc)) []ValidationError {
	return eachRootFrom(data, lists, true, false, fn)
}

// eachTransientDocument is eachDocument for a caller that keeps nothing of a document's
// nodes once fn returns (its values are its own): the plain reader then builds each
// document's nodes in memory it reuses (nodeSlab).
func eachTransientDocument(data []byte, fn func(rawDoc)) []ValidationError {
	return eachRootFrom(data, false, true, true, fn)
}

// eachRootFrom is eachRoot, trying the plain reader first when plain is set, reusing its
// nodes from document to document when reuse is (eachTransientDocument).
func eachRootFrom(data []byte, lists, plain, reuse bool, fn func(rawDoc)) []ValidationError {
	if len(data) > maxFileSize {
		return []ValidationError{{Msg: "file is larger than the 1 MiB limit"}}
	}
	var errs []ValidationError
	c := &converter{}
	given := 0
	if plain {
		var all bool
		given, all = eachPlainDocument(data, reuse, func(d plainDoc) {
			if d.root != nil {
				errs = c.root(d.index, d.root, lists, fn, errs)
			}
		})
		if all {
			return errs
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for index := 0; ; index++ {
		var dn yaml.Node
		err := dec.Decode(&dn)
		if err == io.EOF {
			break
		}
		if err != nil {
			// The parser cannot resynchronise after a syntax error, so later documents
			// are lost; the revision is rejected anyway.
			errs = append(errs, syntaxError(err, data))
			break
		}
		if index < given || len(dn.Content) == 0 {
			continue // read by the plain reader, or empty
		}
		errs = c.root(index, dn.Content[0], lists, fn, errs)
	}
	return errs
}

// root converts document index's root node and hands it to fn, or appends its problem to
// errs.
func (c *converter) root(index int, root *yaml.Node, lists bool, fn func(rawDoc), errs []ValidationError) []ValidationError {
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return errs // "---" followed by nothing, a comment or an explicit null
	}
	if root.Kind != yaml.MappingNode && (!lists || root.Kind != yaml.SequenceNode) {
		want := "a mapping"
		if lists {
			want = "a mapping or a list of mappings"
		}
		return append(errs, ValidationError{Line: root.Line, Msg: "document must be " + want + ", got " + nodeKind(root)})
	}
	c.docAliasNodes, c.docSize = 0, 0
	v, err := c.value(root, 0)
	if err != nil {
		var ne *nodeError
		if errors.As(err, &ne) && ne.size {
			return append(errs, ne.sizeError(root))
		} else if errors.As(err, &ne) {
			return append(errs, ne.validationError())
		}
		return append(errs, ValidationError{Line: root.Line, Msg: err.Error()})
	}
	fn(rawDoc{index: index, root: root, value: v})
	return errs
}

var (
	yamlLine      = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// parserProblems are the go-yaml errors raised by its parser rather than its scanner. The
// parser reports their line 0-based (the scanner adds one), so they are shifted here to
// point at the line the author must look at.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found undefined tag handle":             true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// syntaxError turns a go-yaml error into a ValidationError with a 1-based line. go-yaml
// leaves out "line N" when the line is the first one, and for unknown anchors altogether;
// the latter is found by looking for the alias in the text.
func syntaxError(err error, data []byte) ValidationError {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if parserProblems[m[2]] {
			line++
		}
		// At the end of the input the parser's line is one past the last ("[" alone is
		// reported at line 2); the author must look at the last line.
		return ValidationError{Line: min(line, lastLine(data)), Msg: "invalid yaml: " + m[2]}
	}
	line := 1
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		line = 0
		for i, l := range bytes.Split(data, []byte{'\n'}) {
			if bytes.Contains(l, []byte("*"+m[1])) {
				line = i + 1
				break
			}
		}
	}
	return ValidationError{Line: line, Msg: "invalid yaml: " + strings.TrimPrefix(msg, "yaml: ")}
}

// lastLine is the number of the file's last line as YAML counts lines (CR, LF, CRLF, NEL,
// LS and PS each end one), 1 for an empty file; a final line break ends the last line
// rather than starting another.
func lastLine(data []byte) int {
	n := 1
	for i := 0; i < len(data); {
		w := lineBreak(data[i:])
		if w == 0 {
			i++
			continue
		}
		if i += w; i < len(data) {
			n++
		}
	}
	return n
}

// lineBreak is the length of the YAML line break b starts with, 0 if none.
func lineBreak(b []byte) int {
	switch {
	case bytes.HasPrefix(b, []byte("\r\n")):
		return 2
	case b[0] == '\r' || b[0] == '\n':
		return 1
	case bytes.HasPrefix(b, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(b, []byte("\u2028")), bytes.HasPrefix(b, []byte("\u2029")):
		return 3
	}
	return 0
}

// nodeError is a conversion failure. rev holds the path to the failing node in reverse, as
// the recursion unwinds, so that successful conversions build no paths at all.
type nodeError struct {
	line int
	rev  path
	msg  string
	size bool // a size bound: reported at the document's top-level field
}

// sizeError places a size bound's error at the top-level field the decoding was in (spec,
// mostly): the node where the count ran over says nothing about where the size comes from.
func (e *nodeError) sizeError(root *yaml.Node) ValidationError {
	if len(e.rev) == 0 {
		return ValidationError{Line: root.Line, Msg: e.msg}
	}
	top := path{e.rev[len(e.rev)-1]}
	return ValidationError{Line: lineOf(root, top), Path: top.String(), Msg: e.msg}
}

func (e *nodeError) Error() string { return e.msg }

func (e *nodeError) validationError() ValidationError {
	p := make(path, len(e.rev))
	for i, el := range e.rev {
		p[len(p)-1-i] = el
	}
	return ValidationError{Line: e.line, Path: p.String(), Msg: e.msg}
}

func wrapPath(err error, el any) error {
	if ne, ok := err.(*nodeError); ok {
		ne.rev = append(ne.rev, el)
	}
	return err
}

// converter turns yaml.Nodes into the values encoding/json produces with UseNumber:
// map[string]any, []any, string, bool, nil and json.Number. go-yaml keeps aliases
// unexpanded in the node tree, so expansion, and its bound, happen here.
type converter struct {
	inAlias        int // > 0 while expanding an alias
	docAliasNodes  int
	fileAliasNodes int
	docSize        int
	fileSize       int
}

// grow counts n decoded bytes against the size bounds.
func (c *converter) grow(n int) error {
	c.docSize += n
	c.fileSize += n
	switch {
	case c.docSize > maxDecodedSize:
		return &nodeError{size: true, msg: "decoded size exceeds 1 MiB (after expanding YAML aliases)"}
	case c.fileSize > maxFileDecodedSize:
		return &nodeError{size: true, msg: "decoded size of this file exceeds 8 MiB (after expanding YAML aliases)"}
	}
	return nil
}

func (c *converter) value(n *yaml.Node, depth int) (any, error) {
	if c.inAlias > 0 {
		c.docAliasNodes++
		c.fileAliasNodes++
		switch {
		case c.docAliasNodes > maxAliasNodes:
			return nil, &nodeError{msg: fmt.Sprintf("aliases expand to more than %d nodes", maxAliasNodes)}
		case c.fileAliasNodes > maxFileAliasNodes:
			return nil, &nodeError{msg: fmt.Sprintf("aliases expand to more than %d nodes in this file", maxFileAliasNodes)}
		}
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, &nodeError{line: n.Line, msg: "alias *" + n.Value + " has no anchor"}
		}
		c.inAlias++
		v, err := c.value(n.Alias, depth)
		c.inAlias--
		if ne, ok := err.(*nodeError); ok && c.inAlias == 0 && !ne.size {
			// Report at the alias the expansion started from: the path inside the
			// expansion leads nowhere the author wrote.
			ne.line, ne.rev = n.Line, nil
		}
		return v, err
	case yaml.MappingNode:
		if depth >= maxDepth {
			return nil, &nodeError{line: n.Line, msg: fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
		}
		return c.mapping(n, depth+1)
	case yaml.SequenceNode:
		if depth >= maxDepth {
			return nil, &nodeError{line: n.Line, msg: fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
		}
		if tag := n.ShortTag(); tag != "!!seq" {
			return nil, &nodeError{line: n.Line, msg: "unsupported tag " + tag}
		}
		if err := c.grow(1); err != nil {
			return nil, err
		}
		s := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, wrapPath(err, i)
			}
			s[i] = v
		}
		return s, nil
	case yaml.ScalarNode:
		if err := c.grow(len(n.Value) + 1); err != nil {
			return nil, err
		}
		return scalar(n)
	}
	return nil, &nodeError{line: n.Line, msg: "unsupported yaml node"}
}

func (c *converter) mapping(n *yaml.Node, depth int) (any, error) {
	if tag := n.ShortTag(); tag != "!!map" {
		return nil, &nodeError{line: n.Line, msg: "unsupported tag " + tag}
	}
	if err := c.grow(1); err != nil {
		return nil, err
	}
	m := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolveAlias(n.Content[i]), n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && kn.ShortTag() == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		if kn.Kind != yaml.ScalarNode || kn.ShortTag() != "!!str" {
			return nil, &nodeError{line: n.Content[i].Line, msg: "mapping keys must be strings, got " + describe(kn)}
		}
		if _, dup := m[kn.Value]; dup {
			return nil, &nodeError{line: n.Content[i].Line, msg: fmt.Sprintf("duplicate key %q", kn.Value)}
		}
		if err := c.grow(len(kn.Value) + 1); err != nil {
			return nil, wrapPath(err, kn.Value)
		}
		v, err := c.value(vn, depth)
		if err != nil {
			return nil, wrapPath(err, kn.Value)
		}
		m[kn.Value] = v
	}
	// Merge keys (<<) fill only keys the mapping does not set itself; with a list of
	// mappings the first one listed wins, as YAML 1.1 specifies.
	for _, mn := range merges {
		v, err := c.value(mn, depth)
		if err != nil {
			return nil, wrapPath(err, "<<")
		}
		sources := []any{v}
		if s, ok := v.([]any); ok {
			sources = s
		}
		for _, src := range sources {
			sm, ok := src.(map[string]any)
			if !ok {
				return nil, &nodeError{line: mn.Line, msg: "merge (<<) needs a mapping or a list of mappings"}
			}
			for k, e := range sm {
				if _, set := m[k]; !set {
					m[k] = e
				}
			}
		}
	}
	return m, nil
}

func scalar(n *yaml.Node) (any, error) {
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!binary":
		return n.Value, nil
	case "!!timestamp":
		// Kept as written: turning it into a time would change what users see and hash.
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, &nodeError{line: n.Line, msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		return b, nil
	case "!!int", "!!float":
		if isPlainDecimal(n.Value) {
			return json.Number(n.Value), nil
		}
		var x any
		if err := n.Decode(&x); err != nil {
			return nil, &nodeError{line: n.Line, msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		var num json.Number
		var err error
		switch x := x.(type) {
		case int:
			num = json.Number(strconv.FormatInt(int64(x), 10))
		case int64:
			num = json.Number(strconv.FormatInt(x, 10))
		case uint64:
			num = json.Number(strconv.FormatUint(x, 10))
		case float64:
			num, err = floatNumber(x)
		default:
			err = fmt.Errorf("%q is not a number", n.Value)
		}
		if err != nil {
			return nil, &nodeError{line: n.Line, msg: err.Error()}
		}
		return num, nil
	default:
		return nil, &nodeError{line: n.Line, msg: "unsupported tag " + tag}
	}
}

// isPlainDecimal spots the common integer spelling, which is kept as written whatever its
// length: an integer beyond int64 stays exact (through go-yaml it would become a float64 and
// lose its digits). Anything else (0x10, 1_000, 010, 1.5) goes through go-yaml so that its
// YAML meaning is kept.
func isPlainDecimal(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return false
	}
	if digits[0] == '0' {
		return s == "0"
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	// An alias never points at another alias, but bound the loop in case a hand-built
	// node tree does.
	for i := 0; i < maxDepth && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.ScalarNode:
		return "scalar"
	}
	return "alias"
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%s %s", n.ShortTag(), n.Value)
	}
	return nodeKind(n)
}

// lineOf returns the line of the node at p below root, or of its nearest existing ancestor
// when p leads to a value the YAML does not contain (a default, a missing field). A mapping
// entry is placed at its key: for a nested mapping that is the line naming it.
func lineOf(root *yaml.Node, p path) int {
	n, line := root, root.Line
	for _, el := range p {
		n = resolveAlias(n)
		switch el := el.(type) {
		case string:
			k, v := findKey(n, el, 0)
			if k == nil {
				return line
			}
			n, line = v, k.Line
		case int:
			if n.Kind != yaml.SequenceNode || el < 0 || el >= len(n.Content) {
				return line
			}
			n = n.Content[el]
			line = n.Line
		}
	}
	return line
}

// findKey looks key up in a mapping, then in what it merges, the same precedence the
// converter applies.
func findKey(n *yaml.Node, key string, depth int) (k, v *yaml.Node) {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode || depth > maxDepth {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := resolveAlias(n.Content[i])
		if kn.Kind != yaml.ScalarNode {
			continue
		}
		if kn.ShortTag() == "!!merge" {
			merges = append(merges, n.Content[i+1])
			continue
		}
		if kn.Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	for _, mn := range merges {
		mn = resolveAlias(mn)
		sources := []*yaml.Node{mn}
		if mn.Kind == yaml.SequenceNode {
			sources = mn.Content
		}
		for _, s := range sources {
			if k, v := findKey(s, key, depth+1); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}
