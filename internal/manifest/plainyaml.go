package manifest

import (
	"bytes"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Most manifests are written in a small part of YAML: block mappings and sequences, flow
// mappings and sequences on one line, plain words and numbers, quoted strings without
// escapes, comments. go-yaml's node parser is over half of the loader's parse of such files;
// the plain reader below reads that part itself and builds the nodes go-yaml builds for the
// same bytes (kind, tag, value, style, line and column; comments are not kept, nothing reads
// them). A byte other than printable ASCII and line feeds (a tab, a carriage return, any
// other character) sends the whole file to go-yaml. Anything else outside that part —
// anchors, aliases, tags, block scalars, escapes, a scalar over several lines, a plain scalar
// go-yaml might read as something other than a string, a decimal integer, a boolean or null
// (a float, a timestamp, an octal or hexadecimal number), an empty value, a directive, a
// document end marker, nesting at the converter's limit, a document of over maxPlainLines
// lines — stops the plain reader at the document it is in; go-yaml then reads the file,
// skipping the documents already given, and its reading stands, as for
// eachRenderedDocument.

// plainDoc is one document of the plain reader: its index in the stream and its root, nil
// for an empty document.
type plainDoc struct {
	index int
	root  *yaml.Node
}

// plainLine is a line holding content: its number, the column its content starts at (0-based;
// for an entry "- key: value", the key's once the entry is read as a mapping) and the whole
// line.
type plainLine struct {
	no, col int
	s       string
}

// plainReader reads one document's lines.
type plainReader struct {
	lines []plainLine
	i     int
	depth int
	ns    *nodeSlab // where the nodes come from
}

// nodeSlab hands out the nodes of one document from blocks it keeps, for a reader whose
// caller keeps nothing of a document's nodes once it has handled the document
// (eachTransientDocument): parsing a file of many small documents then allocates nodes
// for the largest of them only, where a node per scalar was a fifth of what a first load of
// a large revision allocated. A nil slab allocates each node.
type nodeSlab struct {
	blocks [][]yaml.Node
	next   int // the next node to hand out, counted across blocks
}

// slabBlock is how many nodes a block of a nodeSlab holds.
const slabBlock = 64

// node returns a zero node, but for the capacity of its Content, which it reuses: each
// block node keeps its own array.
func (ns *nodeSlab) node() *yaml.Node {
	if ns == nil {
		return &yaml.Node{}
	}
	b, i := ns.next/slabBlock, ns.next%slabBlock
	if b == len(ns.blocks) {
		ns.blocks = append(ns.blocks, make([]yaml.Node, slabBlock))
	}
	ns.next++
	n := &ns.blocks[b][i]
	*n = yaml.Node{Content: n.Content[:0]}
	return n
}

// reset makes every node of ns available again.
func (ns *nodeSlab) reset() {
	if ns != nil {
		ns.next = 0
	}
}

// maxPlainLines bounds the lines of content the plain reader holds for one document (32
// bytes each) before it reads them: a longer document goes to go-yaml.
const maxPlainLines = 10_000

// eachPlainDocument reads data's documents, handing each to fn once a document with content
// after it is read too: go-yaml reads a few tokens past a document's end before it gives the
// document, and past an empty one into the next, so a fault there is go-yaml's to judge for
// all of them. It returns the number of documents handed over, counting empty ones, and
// whether that is all of them.
func eachPlainDocument(data []byte, reuse bool, fn func(plainDoc)) (given int, all bool) {
	for _, c := range data {
		if (c < 0x20 || c > 0x7e) && c != '\n' {
			return 0, false
		}
	}
	text := string(data) // read as a string; the nodes' values are copies of their own
	var held []plainDoc
	index := 0
	var lines []plainLine
	started := false // a document has begun: content or a "---" line was seen
	// With reuse, documents with content take turns between two slabs: a document is handed
	// over once the next one is read, so the slab a document is read into held the one two
	// before it, given and done with by then.
	var slabs [2]*nodeSlab
	if reuse {
		slabs = [2]*nodeSlab{{}, {}}
	}
	read := 0 // documents with content read
	end := func() bool {
		var root *yaml.Node
		if len(lines) > 0 {
			ns := slabs[read%2]
			ns.reset()
			r := &plainReader{lines: lines, ns: ns}
			var ok bool
			if root, ok = r.document(); !ok {
				return false
			}
			read++
			for _, d := range held {
				fn(d)
			}
			given += len(held)
			held = held[:0]
		}
		held = append(held, plainDoc{index: index, root: root})
		index++
		lines = lines[:0]
		return true
	}
	for no, rest := 1, text; rest != ""; no++ {
		line := rest
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			line, rest = rest[:j], rest[j+1:]
		} else {
			rest = ""
		}
		switch {
		case strings.HasPrefix(line, "---"):
			if !isMarkerEnd(line[3:]) {
				return given, false
			}
			if started && !end() {
				return given, false
			}
			started = true
			continue
		case strings.HasPrefix(line, "..."), strings.HasPrefix(line, "%"):
			return given, false
		}
		col := 0
		for col < len(line) && line[col] == ' ' {
			col++
		}
		if col == len(line) || line[col] == '#' {
			continue // blank, or a comment
		}
		if len(lines) == maxPlainLines {
			return given, false
		}
		lines = append(lines, plainLine{no: no, col: col, s: line})
		started = true
	}
	if started && !end() {
		return given, false
	}
	for _, d := range held {
		fn(d)
	}
	return given + len(held), true
}

// Documents splits a manifest file into its documents' texts at lines "---" (with a comment
// at most), the plain reader's separators; false when a "---" line holds content, or the
// file holds a directive or a document end marker.
func Documents(data []byte) ([][]byte, bool) {
	var docs [][]byte
	start := 0
	for i := 0; i < len(data); {
		next := len(data)
		if end := bytes.IndexByte(data[i:], '\n'); end >= 0 {
			next = i + end + 1
		}
		line := string(bytes.TrimSuffix(data[i:next], []byte("\n")))
		switch {
		case strings.HasPrefix(line, "---"):
			if !isMarkerEnd(line[3:]) {
				return nil, false
			}
			docs = append(docs, data[start:i])
			start = next
		case strings.HasPrefix(line, "..."), strings.HasPrefix(line, "%"):
			return nil, false
		}
		i = next
	}
	return append(docs, data[start:]), true
}

// isMarkerEnd reports whether rest, what follows "---" on its line, leaves the line a bare
// document marker: nothing, or spaces and a comment.
func isMarkerEnd(rest string) bool {
	t := strings.TrimLeft(rest, " ")
	return t == "" || t[0] == '#' && len(t) < len(rest)
}

// document reads the document's root: a block mapping or sequence at column 0 holding every
// line.
func (r *plainReader) document() (*yaml.Node, bool) {
	if r.lines[0].col != 0 {
		return nil, false
	}
	n, ok := r.block(0)
	return n, ok && r.i == len(r.lines)
}

// block reads the block node whose first line is the current one, at column col.
func (r *plainReader) block(col int) (*yaml.Node, bool) {
	if isEntry(r.lines[r.i]) {
		return r.deeper(func() (*yaml.Node, bool) { return r.sequence(col) })
	}
	return r.deeper(func() (*yaml.Node, bool) { return r.mapping(col) })
}

// deeper reads one more level of nesting with read, leaving to go-yaml what reaches the
// converter's limit.
func (r *plainReader) deeper(read func() (*yaml.Node, bool)) (*yaml.Node, bool) {
	if r.depth+1 >= maxDepth {
		return nil, false
	}
	r.depth++
	defer func() { r.depth-- }()
	return read()
}

// isEntry reports whether l is a block sequence entry.
func isEntry(l plainLine) bool {
	return l.s[l.col] == '-' && (l.col+1 == len(l.s) || l.s[l.col+1] == ' ')
}

// mapping reads a block mapping whose keys are at column col.
func (r *plainReader) mapping(col int) (*yaml.Node, bool) {
	first := r.lines[r.i]
	m := r.ns.node()
	m.Kind, m.Tag, m.Line, m.Column = yaml.MappingNode, "!!map", first.no, col+1
	for r.i < len(r.lines) && r.lines[r.i].col == col {
		l := r.lines[r.i]
		if isEntry(l) {
			return nil, false
		}
		k, at, ok := r.ns.blockKey(l)
		if !ok {
			return nil, false
		}
		at = skipSpaces(l.s, at)
		var v *yaml.Node
		if at == len(l.s) || l.s[at] == '#' {
			r.i++
			if v, ok = r.nested(col, true); !ok {
				return nil, false
			}
		} else {
			if v, ok = r.ns.inlineValue(l, at); !ok {
				return nil, false
			}
			r.i++
		}
		m.Content = append(m.Content, k, v)
	}
	if r.i < len(r.lines) && r.lines[r.i].col > col {
		return nil, false // more indented than the keys: a scalar's continuation, or a fault
	}
	return m, true
}

// nested reads the block value of a key or entry at column col that has nothing after it on
// its line: lines more indented, or, for a key (sameColumn), a sequence at the key's own
// column. Anything else would be an empty value (null), left to go-yaml.
func (r *plainReader) nested(col int, sameColumn bool) (*yaml.Node, bool) {
	if r.i == len(r.lines) {
		return nil, false
	}
	l := r.lines[r.i]
	switch {
	case l.col > col:
		return r.block(l.col)
	case sameColumn && l.col == col && isEntry(l):
		return r.deeper(func() (*yaml.Node, bool) { return r.sequence(col) })
	}
	return nil, false
}

// sequence reads a block sequence whose "-" are at column col.
func (r *plainReader) sequence(col int) (*yaml.Node, bool) {
	first := r.lines[r.i]
	s := r.ns.node()
	s.Kind, s.Tag, s.Line, s.Column = yaml.SequenceNode, "!!seq", first.no, col+1
	for r.i < len(r.lines) && r.lines[r.i].col == col && isEntry(r.lines[r.i]) {
		l := r.lines[r.i]
		at := skipSpaces(l.s, col+1)
		var v *yaml.Node
		var ok bool
		switch {
		case at == len(l.s) || l.s[at] == '#':
			r.i++
			v, ok = r.nested(col, false)
		case isEntry(plainLine{col: at, s: l.s}):
			return nil, false // "- - a": a sequence in an entry's line
		default:
			if _, _, isKey := r.ns.blockKey(plainLine{no: l.no, col: at, s: l.s}); isKey {
				// "- key: value": a mapping whose keys are at the first key's column.
				r.lines[r.i].col = at
				v, ok = r.deeper(func() (*yaml.Node, bool) { return r.mapping(at) })
			} else {
				v, ok = r.ns.inlineValue(l, at)
				r.i++
			}
		}
		if !ok {
			return nil, false
		}
		s.Content = append(s.Content, v)
	}
	if r.i < len(r.lines) && r.lines[r.i].col > col {
		return nil, false
	}
	return s, true
}

// skipSpaces returns the first position at or after at that is not a space.
func skipSpaces(s string, at int) int {
	for at < len(s) && s[at] == ' ' {
		at++
	}
	return at
}

// blockKey reads the key starting l's content, at l.col: a quoted or plain scalar followed by
// ':' and a space or the line's end. It returns the key's node and the position after ':'.
func (ns *nodeSlab) blockKey(l plainLine) (*yaml.Node, int, bool) {
	s, at := l.s, l.col
	if c := s[at]; c == '"' || c == '\'' {
		k, end, ok := ns.quoted(s, at, l.no)
		if !ok || end >= len(s) || s[end] != ':' || end+1 < len(s) && s[end+1] != ' ' || end-at > maxSimpleKey {
			return nil, 0, false
		}
		return k, end + 1, true
	}
	j := strings.Index(s[at:], ":")
	for j >= 0 && at+j+1 < len(s) && s[at+j+1] != ' ' {
		k := strings.Index(s[at+j+1:], ":")
		if k < 0 {
			j = -1
			break
		}
		j += 1 + k
	}
	if j <= 0 || j > maxSimpleKey {
		return nil, 0, false
	}
	text := strings.TrimRight(s[at:at+j], " ")
	if strings.Contains(text, " #") {
		return nil, 0, false
	}
	k, ok := ns.plainScalar(text, l.no, at)
	return k, at + j + 1, ok
}

// inlineValue reads the value starting at position at of l, which must hold the rest of the
// line but for a comment: a flow mapping or sequence, a quoted scalar or a plain one.
func (ns *nodeSlab) inlineValue(l plainLine, at int) (*yaml.Node, bool) {
	s := l.s
	var v *yaml.Node
	var end int
	var ok bool
	switch s[at] {
	case '{', '[':
		v, end, ok = ns.flow(s, at, l.no, 0)
	case '"', '\'':
		v, end, ok = ns.quoted(s, at, l.no)
	default:
		text := s[at:]
		if j := strings.Index(text, " #"); j >= 0 {
			text = text[:j]
		}
		text = strings.TrimRight(text, " ")
		if strings.Contains(text, ": ") || strings.HasSuffix(text, ":") {
			return nil, false
		}
		v, ok = ns.plainScalar(text, l.no, at)
		return v, ok
	}
	if !ok {
		return nil, false
	}
	rest := skipSpaces(s, end)
	return v, rest == len(s) || s[rest] == '#' && rest > end
}

// quoted reads the single- or double-quoted scalar starting at position at of s (line no),
// returning its node and the position after its closing quote. Escapes ('\' in double
// quotes) and scalars running past the line are left to go-yaml.
func (ns *nodeSlab) quoted(s string, at, no int) (*yaml.Node, int, bool) {
	q := s[at]
	n := ns.node()
	n.Kind, n.Tag, n.Line, n.Column = yaml.ScalarNode, "!!str", no, at+1
	if q == '"' {
		j := strings.IndexAny(s[at+1:], `"\`)
		if j < 0 || s[at+1+j] == '\\' {
			return nil, 0, false
		}
		n.Value, n.Style = strings.Clone(s[at+1:at+1+j]), yaml.DoubleQuotedStyle
		return n, at + j + 2, true
	}
	n.Style = yaml.SingleQuotedStyle
	var b strings.Builder
	for i := at + 1; ; {
		j := strings.IndexByte(s[i:], '\'')
		if j < 0 {
			return nil, 0, false
		}
		if i+j+1 < len(s) && s[i+j+1] == '\'' {
			b.WriteString(s[i : i+j+1])
			i += j + 2
			continue
		}
		if b.Len() == 0 {
			n.Value = strings.Clone(s[i : i+j])
		} else {
			b.WriteString(s[i : i+j])
			n.Value = b.String()
		}
		return n, i + j + 1, true
	}
}

// flow reads the flow mapping or sequence starting at position at of s (line no), all on
// that line, returning its node and the position after its closing bracket.
func (ns *nodeSlab) flow(s string, at, no, depth int) (*yaml.Node, int, bool) {
	if depth+1 >= maxDepth {
		return nil, 0, false
	}
	n := ns.node()
	n.Kind, n.Tag, n.Style, n.Line, n.Column = yaml.MappingNode, "!!map", yaml.FlowStyle, no, at+1
	closing := byte('}')
	if s[at] == '[' {
		n.Kind, n.Tag, closing = yaml.SequenceNode, "!!seq", ']'
	}
	i := skipSpaces(s, at+1)
	if i < len(s) && s[i] == closing {
		return n, i + 1, true
	}
	for {
		if i >= len(s) {
			return nil, 0, false
		}
		if n.Kind == yaml.MappingNode {
			k, end, ok := ns.flowItem(s, i, no, depth, true)
			if !ok || k.Kind != yaml.ScalarNode || end >= len(s) || s[end] != ':' || end+1 >= len(s) || s[end+1] != ' ' {
				return nil, 0, false
			}
			n.Content = append(n.Content, k)
			i = skipSpaces(s, end+1)
		}
		v, end, ok := ns.flowItem(s, i, no, depth, false)
		if !ok {
			return nil, 0, false
		}
		n.Content = append(n.Content, v)
		i = skipSpaces(s, end)
		if i >= len(s) {
			return nil, 0, false
		}
		switch s[i] {
		case closing:
			return n, i + 1, true
		case ',':
			i = skipSpaces(s, i+1)
			if i < len(s) && (s[i] == closing || s[i] == ',') {
				return nil, 0, false // a trailing or doubled comma
			}
		default:
			return nil, 0, false
		}
	}
}

// flowItem reads a key (key set) or value inside a flow collection at position at of s,
// returning its node and the position after it (spaces after a plain scalar included).
func (ns *nodeSlab) flowItem(s string, at, no, depth int, key bool) (*yaml.Node, int, bool) {
	if at >= len(s) {
		return nil, 0, false
	}
	switch s[at] {
	case '{', '[':
		if key {
			return nil, 0, false
		}
		return ns.flow(s, at, no, depth+1)
	case '"', '\'':
		n, end, ok := ns.quoted(s, at, no)
		if ok && !key && end < len(s) && s[end] == ':' {
			return nil, 0, false // a single pair in a sequence: [a: b]
		}
		if key && end-at > maxSimpleKey {
			return nil, 0, false
		}
		return n, end, ok
	}
	end := at
	for end < len(s) && strings.IndexByte(",[]{}#:?\"'", s[end]) < 0 {
		end++
	}
	if end < len(s) && s[end] == ':' && !key {
		return nil, 0, false
	}
	text := strings.TrimRight(s[at:end], " ")
	if key && end-at > maxSimpleKey {
		return nil, 0, false
	}
	n, ok := ns.plainScalar(text, no, at)
	return n, end, ok
}

// plainScalar is the node of plain scalar text at column at (0-based) of line no, when
// go-yaml would resolve it to a string, a decimal integer, a boolean or null for sure.
func (ns *nodeSlab) plainScalar(text string, no, at int) (*yaml.Node, bool) {
	if text == "" {
		return nil, false
	}
	n := ns.node()
	n.Kind, n.Line, n.Column = yaml.ScalarNode, no, at+1
	switch text {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		n.Tag, n.Value = "!!bool", strings.Clone(text)
		return n, true
	case "~", "null", "Null", "NULL":
		n.Tag, n.Value = "!!null", strings.Clone(text)
		return n, true
	}
	switch c := text[0]; {
	case c == '-' && (len(text) == 1 || text[1] == ' '):
		return nil, false // a sequence entry where a scalar goes: go-yaml's syntax error
	case c >= '0' && c <= '9' || c == '-':
		switch {
		case isDecimalInt(text):
			n.Tag = "!!int"
		case surelyWord(text):
			n.Tag = "!!str"
		default:
			return nil, false
		}
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/' || c == '_' || c == '$' || c == '~':
		n.Tag = "!!str"
	default:
		return nil, false
	}
	n.Value = strings.Clone(text)
	return n, true
}

// surelyWord reports whether text, which starts with a digit or '-', holds a letter that no
// number or timestamp go-yaml reads can hold (any but the hexadecimal digits, the base
// prefixes x, o and b, and the timestamp's t and z, in either case): go-yaml reads it as a
// string. Quantities and durations are such words: 500m, 1Gi, 30s, 8080/TCP.
func surelyWord(text string) bool {
	for i := 0; i < len(text); i++ {
		c := text[i] | 0x20 // lower case, for letters
		if c >= 'g' && c <= 'z' && c != 'o' && c != 't' && c != 'x' && c != 'z' {
			return true
		}
	}
	return false
}

// isDecimalInt reports whether s is a decimal integer of at most 18 digits without leading
// zeros ("0" and "-0" aside): go-yaml reads it as an integer, and nothing else.
func isDecimalInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 18 || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Identity reads a one-document text's apiVersion, kind, metadata.namespace and
// metadata.name with the plain reader, "" for a field it lacks. empty reports a document
// without content. ok is false when the plain reader leaves the text to go-yaml, when it
// holds more than one document, when the root is not a mapping, or when one of those fields
// is not a plain string or is given twice: whoever asks reads it otherwise.
func Identity(doc []byte) (apiVersion, kind, namespace, name string, empty, ok bool) {
	var root *yaml.Node
	n, all := eachPlainDocument(doc, false, func(d plainDoc) { root = d.root })
	if !all || n > 1 {
		return "", "", "", "", false, false
	}
	if root == nil {
		return "", "", "", "", true, true
	}
	// value is the node of key in the mapping m (nil when absent), false when key is there twice.
	value := func(m *yaml.Node, key string) (*yaml.Node, bool) {
		var v *yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				if v != nil {
					return nil, false
				}
				v = m.Content[i+1]
			}
		}
		return v, true
	}
	text := func(m *yaml.Node, key string) (string, bool) {
		v, ok := value(m, key)
		if !ok || v == nil {
			return "", ok
		}
		return v.Value, v.Kind == yaml.ScalarNode && v.Tag == "!!str"
	}
	if root.Kind != yaml.MappingNode {
		return "", "", "", "", false, false
	}
	var okA, okK, okN, okM bool
	apiVersion, okA = text(root, "apiVersion")
	kind, okK = text(root, "kind")
	meta, okM := value(root, "metadata")
	okN = true
	if meta != nil {
		if meta.Kind != yaml.MappingNode {
			return "", "", "", "", false, false
		}
		var okNs bool
		namespace, okNs = text(meta, "namespace")
		name, okN = text(meta, "name")
		okN = okN && okNs
	}
	return apiVersion, kind, namespace, name, false, okA && okK && okM && okN
}
