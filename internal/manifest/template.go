package manifest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A ResourceSet's templates are compiled here, once per set, and evaluated once per input.
// The grammar is one production, << inputs.key(.key)* >>, written by hand rather than with
// text/template: that produces text only (a whole value must keep its input's JSON type),
// costs reflection per string per resource, and offers pipelines and calls that would need
// documenting, bounding and fuzzing.

// tmplKind says what a compiled template node holds.
type tmplKind uint8

const (
	tmplConst  tmplKind = iota // no template below: val and its canonical JSON
	tmplObject                 // a mapping with a template below: keys sorted, elems by key
	tmplArray                  // a list with a template below
	tmplString                 // a string interpolating references among literal text
	tmplWhole                  // a string that is exactly one reference: the input's value
)

// tmplRef is one << inputs.a.b >>: key a, below it the keys [b].
type tmplRef struct {
	key  string
	rest []string
	name string // "a.b", for messages
}

// tmplPart is a piece of an interpolated string: literal text, or a reference when ref is set.
type tmplPart struct {
	lit string
	ref *tmplRef
}

// tmpl is a compiled template value, immutable once compiled and safe to evaluate from
// several goroutines.
type tmpl struct {
	kind  tmplKind
	at    path       // relative to the compiled value
	val   any        // tmplConst; shared with the compiled tree, never modified
	canon []byte     // tmplConst: marshalCanonical(val)
	keys  []string   // tmplObject, sorted as encoding/json sorts
	elems []*tmpl    // tmplObject (in keys order), tmplArray
	parts []tmplPart // tmplString
	ref   *tmplRef   // tmplWhole
	plain bool       // tmplString: no literal part needs JSON escaping
	// ops is appendJSON's program for the compiled value: constant JSON between the nodes
	// that depend on the input, so that an evaluation appends a few byte runs and looks up
	// the references, nothing more.
	ops []tmplOp
}

// tmplOp appends lit, then the value of node when set (a tmplString or tmplWhole).
type tmplOp struct {
	lit  []byte
	node *tmpl
}

// tmplProblem is a template that does not compile; at is relative to the compiled value.
type tmplProblem struct {
	at  path
	msg string
}

// tmplError is a template that does not evaluate for an input; at is relative to the
// template value.
type tmplError struct {
	at  path
	msg string
}

func (e *tmplError) Error() string {
	if len(e.at) == 0 {
		return e.msg
	}
	return e.at.String() + ": " + e.msg
}

// compileTemplate compiles v, a tree of the converter's values (map[string]any, []any,
// string, bool, nil, json.Number). It returns nil and the problems when a string holds a
// malformed template or a mapping key holds one (keys are not templated). v is not
// modified and stays referenced by the result.
func compileTemplate(v any) (*tmpl, []tmplProblem) {
	c := &tmplCompiler{}
	t := c.node(v, path{})
	if len(c.problems) > 0 {
		return nil, c.problems
	}
	c.encode(t)
	var b tmplOpsBuilder
	b.emit(t)
	t.ops = b.finish()
	return t, nil
}

type tmplCompiler struct {
	problems []tmplProblem
}

// node compiles v at p. A subtree without a template comes back as a tmplConst whose canon
// is not yet encoded: encode spells each maximal constant subtree once.
func (c *tmplCompiler) node(v any, p path) *tmpl {
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		elems := make([]*tmpl, len(keys))
		dynamic := false
		for i, k := range keys {
			if strings.Contains(k, "<<") {
				if parts, msg := scanTemplate(k); msg != "" || hasRef(parts) {
					c.problems = append(c.problems, tmplProblem{at: p.key(k), msg: "a mapping key cannot hold a template (keys are not templated)"})
				}
			}
			elems[i] = c.node(x[k], p.key(k))
			dynamic = dynamic || elems[i].kind != tmplConst
		}
		if !dynamic {
			return &tmpl{kind: tmplConst, at: p, val: v}
		}
		return &tmpl{kind: tmplObject, at: p, keys: keys, elems: elems}
	case []any:
		elems := make([]*tmpl, len(x))
		dynamic := false
		for i, e := range x {
			elems[i] = c.node(e, p.index(i))
			dynamic = dynamic || elems[i].kind != tmplConst
		}
		if !dynamic {
			return &tmpl{kind: tmplConst, at: p, val: v}
		}
		return &tmpl{kind: tmplArray, at: p, elems: elems}
	case string:
		if !strings.Contains(x, "<<") {
			break
		}
		parts, msg := scanTemplate(x)
		if msg != "" {
			c.problems = append(c.problems, tmplProblem{at: p, msg: msg})
			break
		}
		switch {
		case !hasRef(parts):
		case len(parts) == 1:
			return &tmpl{kind: tmplWhole, at: p, ref: parts[0].ref}
		default:
			plain := true
			for _, pt := range parts {
				plain = plain && (pt.ref != nil || plainJSON(pt.lit))
			}
			return &tmpl{kind: tmplString, at: p, parts: parts, plain: plain}
		}
	}
	return &tmpl{kind: tmplConst, at: p, val: v}
}

// encode spells the canonical JSON of t's maximal constant subtrees.
func (c *tmplCompiler) encode(t *tmpl) {
	switch t.kind {
	case tmplConst:
		b, err := marshalCanonical(t.val)
		if err != nil {
			// The converter's values always encode; a caller's tree might not.
			b = []byte("null")
		}
		t.canon = b
	case tmplObject, tmplArray:
		for _, e := range t.elems {
			c.encode(e)
		}
	}
}

// tmplOpsBuilder flattens a compiled tree into appendJSON's program.
type tmplOpsBuilder struct {
	lit []byte
	ops []tmplOp
}

func (b *tmplOpsBuilder) emit(t *tmpl) {
	switch t.kind {
	case tmplConst:
		b.lit = append(b.lit, t.canon...)
	case tmplObject:
		b.lit = append(b.lit, '{')
		for i, k := range t.keys {
			if i > 0 {
				b.lit = append(b.lit, ',')
			}
			b.lit = appendJSONString(b.lit, k)
			b.lit = append(b.lit, ':')
			b.emit(t.elems[i])
		}
		b.lit = append(b.lit, '}')
	case tmplArray:
		b.lit = append(b.lit, '[')
		for i, e := range t.elems {
			if i > 0 {
				b.lit = append(b.lit, ',')
			}
			b.emit(e)
		}
		b.lit = append(b.lit, ']')
	default:
		b.ops = append(b.ops, tmplOp{lit: b.lit, node: t})
		b.lit = nil
	}
}

func (b *tmplOpsBuilder) finish() []tmplOp {
	if len(b.lit) > 0 {
		b.ops = append(b.ops, tmplOp{lit: b.lit})
	}
	return b.ops
}

func hasRef(parts []tmplPart) bool {
	for _, p := range parts {
		if p.ref != nil {
			return true
		}
	}
	return false
}

// literalHint ends the messages of a malformed template: the grammar has no escape, and
// an input's value is not expanded.
const literalHint = " (to write \"<< inputs\" as text, take it from an input value, which is not expanded)"

// scanTemplate splits s into literal text and references. "<<" not followed by optional
// spaces and the word inputs is literal text; once it is, the rest up to ">>" must be
// (.key)+ and optional spaces. msg is set when it is not. The rule is strict on purpose:
// a typo such as "<< inputs >>" is an error rather than text.
func scanTemplate(s string) (parts []tmplPart, msg string) {
	var lit strings.Builder
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "<<")
		if j < 0 {
			lit.WriteString(s[i:])
			break
		}
		start := i + j
		k := skipSpace(s, start+2)
		if !strings.HasPrefix(s[k:], "inputs") || (k+6 < len(s) && identByte(s[k+6], true)) {
			lit.WriteString(s[i : start+1])
			i = start + 1
			continue
		}
		k += len("inputs")
		end := strings.Index(s[k:], ">>")
		if end < 0 {
			return nil, fmt.Sprintf("unterminated template %q: << needs a closing >>%s", clip(s[start:]), literalHint)
		}
		ref, ok := parseRef(s[k : k+end])
		if !ok {
			return nil, fmt.Sprintf("only << inputs.name >> is supported, not %q%s", clip(s[start:k+end+2]), literalHint)
		}
		lit.WriteString(s[i:start])
		if lit.Len() > 0 {
			parts = append(parts, tmplPart{lit: lit.String()})
			lit.Reset()
		}
		parts = append(parts, tmplPart{ref: ref})
		i = k + end + 2
	}
	if lit.Len() > 0 {
		parts = append(parts, tmplPart{lit: lit.String()})
	}
	return parts, ""
}

// parseRef reads what follows "inputs" in a template: (.key)+ and optional spaces.
func parseRef(s string) (*tmplRef, bool) {
	var keys []string
	i := 0
	for i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && identByte(s[j], j > i+1) {
			j++
		}
		if j == i+1 {
			return nil, false
		}
		keys = append(keys, s[i+1:j])
		i = j
	}
	if len(keys) == 0 || skipSpace(s, i) != len(s) {
		return nil, false
	}
	return &tmplRef{key: keys[0], rest: keys[1:], name: strings.Join(keys, ".")}, true
}

func identByte(c byte, digits bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || digits && '0' <= c && c <= '9'
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// clip shortens a quoted piece of template for a message.
func clip(s string) string {
	const n = 60
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// plainJSON reports that s is spelled in JSON as itself between quotes (appendJSONString's
// fast path).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// refs returns the input keys t reads, in first-use order (mapping keys in sorted order).
func (t *tmpl) refs() []string {
	var keys []string
	var walk func(*tmpl)
	walk = func(t *tmpl) {
		switch t.kind {
		case tmplObject, tmplArray:
			for _, e := range t.elems {
				walk(e)
			}
		case tmplString:
			for _, p := range t.parts {
				if p.ref != nil && !slices.Contains(keys, p.ref.key) {
					keys = append(keys, p.ref.key)
				}
			}
		case tmplWhole:
			if !slices.Contains(keys, t.ref.key) {
				keys = append(keys, t.ref.key)
			}
		}
	}
	walk(t)
	return keys
}

// maxGenSize bounds what one evaluation appends: a generated spec, or one templated
// string, is at most the 1 MiB a written document may decode to. A few references to a
// large input would otherwise multiply it, and a set's inputs multiply that again.
const maxGenSize = maxDecodedSize

// The messages of an evaluation over maxGenSize.
const (
	specTooBig  = "spec would be more than 1 MiB, the limit of a document"
	valueTooBig = "would be more than 1 MiB, the limit of a document"
)

// appendJSON appends the value t gives for in as canonical JSON, the bytes
// marshalCanonical(t.value(in)) returns, and stops with an error once they are more than
// maxGenSize. It allocates only to grow dst, save for a string that needs escaping and a
// reference into a mapping-valued input that picks a mapping or list.
func (t *tmpl) appendJSON(dst []byte, in *input) ([]byte, *tmplError) {
	limit := len(dst) + maxGenSize
	if t.ops == nil {
		return t.appendNode(dst, in, limit)
	}
	for _, op := range t.ops {
		if dst = append(dst, op.lit...); len(dst) > limit {
			return dst, &tmplError{msg: specTooBig}
		}
		if op.node == nil {
			continue
		}
		var err *tmplError
		if dst, err = op.node.appendNode(dst, in, limit); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// appendNode is appendJSON for a node below the compiled value, which has no program;
// limit is the length dst may reach.
func (t *tmpl) appendNode(dst []byte, in *input, limit int) ([]byte, *tmplError) {
	dst, err := t.appendNodeJSON(dst, in, limit)
	if err == nil && len(dst) > limit {
		err = &tmplError{msg: specTooBig}
	}
	return dst, err
}

func (t *tmpl) appendNodeJSON(dst []byte, in *input, limit int) ([]byte, *tmplError) {
	var err *tmplError
	switch t.kind {
	case tmplConst:
		return append(dst, t.canon...), nil
	case tmplObject:
		dst = append(dst, '{')
		for i, k := range t.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if dst, err = t.elems[i].appendNode(dst, in, limit); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case tmplArray:
		dst = append(dst, '[')
		for i, e := range t.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = e.appendNode(dst, in, limit); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case tmplWhole:
		if len(t.ref.rest) == 0 {
			if b, ok := in.canon[t.ref.key]; ok {
				return append(dst, b...), nil
			}
		}
		v, err := in.lookup(t.ref, t.at)
		if err != nil {
			return dst, err
		}
		return appendValueJSON(dst, v), nil
	}
	// tmplString
	start := len(dst)
	dst, plain, err := t.appendText(append(dst, '"'), in, limit)
	switch {
	case err != nil:
		return dst[:start], err
	case dst == nil:
		return dst, &tmplError{msg: specTooBig}
	case plain:
		return append(dst, '"'), nil
	}
	s := string(dst[start+1:])
	return appendJSONString(dst[:start], s), nil
}

// appendText appends the text of t, a tmplString, for in, unescaped; plain reports that
// JSON spells it as itself. It returns nil once dst would be longer than limit.
func (t *tmpl) appendText(dst []byte, in *input, limit int) (_ []byte, plain bool, _ *tmplError) {
	plain = t.plain
	for _, p := range t.parts {
		if p.ref == nil {
			dst = append(dst, p.lit...)
		} else {
			v, err := in.lookup(p.ref, t.at)
			if err != nil {
				return dst, false, err
			}
			switch v := v.(type) {
			case string:
				plain = plain && plainJSON(v)
				dst = append(dst, v...)
			case json.Number:
				dst = append(dst, v...)
			case bool:
				dst = strconv.AppendBool(dst, v)
			default:
				return dst, false, interpolationError(p.ref, v, t.at)
			}
		}
		if len(dst) > limit {
			return nil, false, nil
		}
	}
	return dst, plain, nil
}

// appendValueJSON appends an input's value (or a value inside one) as canonical JSON.
func appendValueJSON(dst []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return appendJSONString(dst, v)
	case json.Number:
		return append(dst, v...)
	case bool:
		return strconv.AppendBool(dst, v)
	case nil:
		return append(dst, "null"...)
	}
	b, err := marshalCanonical(v)
	if err != nil {
		return append(dst, "null"...) // the converter's values always encode
	}
	return append(dst, b...)
}

func interpolationError(r *tmplRef, v any, at path) *tmplError {
	return &tmplError{at: at, msg: fmt.Sprintf("input %s is %s: only a whole value can take it", r.name, article(v))}
}

// article names v's JSON type with its article: "a mapping", "null".
func article(v any) string {
	switch t := jsonType(v); t {
	case "null":
		return t
	default:
		return "a " + t
	}
}

// value returns the value t gives for in, a tree the caller owns: constants and input
// values are copied.
func (t *tmpl) value(in *input) (any, *tmplError) {
	switch t.kind {
	case tmplConst:
		return copyValue(t.val), nil
	case tmplObject:
		m := make(map[string]any, len(t.keys))
		for i, k := range t.keys {
			v, err := t.elems[i].value(in)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case tmplArray:
		s := make([]any, len(t.elems))
		for i, e := range t.elems {
			v, err := e.value(in)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	case tmplWhole:
		v, err := in.lookup(t.ref, t.at)
		if err != nil {
			return nil, err
		}
		return copyValue(v), nil
	}
	return t.interpolate(in)
}

// str returns the string t gives for in: t must be a string, and a whole reference is
// spelled as interpolation spells it (a number as its literal, a bool as true or false).
func (t *tmpl) str(in *input) (string, *tmplError) {
	switch t.kind {
	case tmplConst:
		if s, ok := t.val.(string); ok {
			return s, nil
		}
		return "", &tmplError{at: t.at, msg: "must be a string, got " + jsonType(t.val)}
	case tmplWhole:
		v, err := in.lookup(t.ref, t.at)
		if err != nil {
			return "", err
		}
		switch v := v.(type) {
		case string:
			return v, nil
		case json.Number:
			return string(v), nil
		case bool:
			return strconv.FormatBool(v), nil
		}
		return "", &tmplError{at: t.at, msg: fmt.Sprintf("input %s is %s: a string is needed here", t.ref.name, article(v))}
	case tmplString:
		return t.interpolate(in)
	}
	if t.kind == tmplObject {
		return "", &tmplError{at: t.at, msg: "must be a string, got mapping"}
	}
	return "", &tmplError{at: t.at, msg: "must be a string, got list"}
}

func (t *tmpl) interpolate(in *input) (string, *tmplError) {
	var buf [128]byte // a name fits: one allocation, the string's
	b, _, err := t.appendText(buf[:0], in, maxGenSize)
	switch {
	case err != nil:
		return "", err
	case b == nil:
		return "", &tmplError{at: t.at, msg: valueTooBig}
	}
	return string(b), nil
}

// copyValue deep-copies a tree of the converter's values.
func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyValue(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = copyValue(e)
		}
		return s
	}
	return v
}

// maxSetSpecBytes bounds the estimate of what one ResourceSet's specs take (setSpecSize),
// checked before any of them is rendered: the per-document bound times the resources a
// set may generate would still be gigabytes.
const maxSetSpecBytes = 256 << 20

// setSpecSize estimates, from above, the bytes of the specs a set renders: per template,
// its constant JSON plus, per reference, the largest canonical JSON of that key among the
// inputs and the matrix's values (each at most maxGenSize), times n, the inputs after the
// matrix. Saturated at math.MaxInt.
func setSpecSize(templates []setTemplate, base []*input, matrix []matrixAxis, n int) int {
	largest := map[string]int{}
	size := func(key string) int {
		if m, ok := largest[key]; ok {
			return m
		}
		m := 0
		for _, in := range base {
			m = max(m, len(in.canon[key]))
		}
		for _, a := range matrix {
			if a.key == key {
				for _, v := range a.values {
					m = max(m, len(appendValueJSON(nil, v)))
				}
			}
		}
		largest[key] = m
		return m
	}
	total := 0
	for i := range templates {
		if t := templates[i].spec; t != nil {
			total = addSat(total, mulSat(min(t.size(size), maxGenSize), n))
		}
	}
	return total
}

// size is an upper bound of what appendJSON appends for an input whose reference to key
// takes at most size(key) bytes as canonical JSON.
func (t *tmpl) size(size func(key string) int) int {
	if t.ops == nil {
		return t.nodeSize(size)
	}
	total := 0
	for _, op := range t.ops {
		total = addSat(total, len(op.lit))
		if op.node != nil {
			total = addSat(total, op.node.nodeSize(size))
		}
	}
	return total
}

func (t *tmpl) nodeSize(size func(key string) int) int {
	switch t.kind {
	case tmplConst:
		return len(t.canon)
	case tmplObject, tmplArray:
		total := 2 + len(t.elems)
		for i, e := range t.elems {
			if t.kind == tmplObject {
				total = addSat(total, len(appendJSONString(nil, t.keys[i])))
			}
			total = addSat(total, e.nodeSize(size))
		}
		return total
	case tmplWhole:
		return size(t.ref.key)
	}
	// tmplString: a string's canonical JSON is at least as long as its text escaped
	total := 2
	for _, p := range t.parts {
		if p.ref == nil {
			total = addSat(total, len(appendJSONString(nil, p.lit)))
		} else {
			total = addSat(total, size(p.ref.key))
		}
	}
	return total
}

// addSat is a+b for non-negative a and b, saturated at math.MaxInt.
func addSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
