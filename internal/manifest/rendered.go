package manifest

import (
	"encoding/json"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// The renderer (internal/render) writes each rendered resource as one line of compact JSON,
// the documents separated by "---" lines. Reading that text through go-yaml's node parser
// costs three quarters of the loader's parse of a rendered revision; eachRenderedDocument
// reads it with a JSON scanner instead, and gives the documents eachDocument gives for the
// same bytes: the same values, indexes and lines, and the same problems. It handles the
// exact shape the renderer writes, where JSON and YAML agree, and hands anything else to
// eachDocument: a byte outside it (whitespace, a comment, a line break or character YAML
// reads otherwise, a surrogate escape, a long key, a repeated key, a number that is not
// JSON's, nesting or a size at a limit) sends the whole file, from its first document not yet
// given, through go-yaml, whose reading stands. A character go-yaml's reader refuses anywhere
// in the file sends all of it.
//
// A document read this way has a root node with no Content: the whole document is on one
// line, so every node go-yaml would give it is on the root's line, which lineOf and
// lastNodeLine then return for any path.

// eachRenderedDocument is eachDocument for a renderer's output.
func eachRenderedDocument(data []byte, fn func(rawDoc)) []ValidationError {
	if len(data) > maxFileSize || !readable(data) {
		return eachDocument(data, fn)
	}
	s := &jsonScanner{data: data, intern: map[string]string{}}
	// A document is given once the next one is read too: go-yaml ends a document at the
	// next one's start, so a fault there is the YAML decoder's to judge for both.
	var held rawDoc
	holding, given := false, 0
	for index, line := 0, 1; ; index, line = index+1, line+2 {
		if s.pos == len(data) && index > 0 {
			break
		}
		v, ok := s.document()
		if !ok {
			return eachDocument(data, func(rd rawDoc) {
				if rd.index >= given {
					fn(rd)
				}
			})
		}
		if holding {
			fn(held)
			given++
		}
		held = rawDoc{index: index, value: v, root: &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Tag: "!!map", Line: line, Column: 1}}
		holding = true
	}
	fn(held)
	return nil
}

// readable reports whether go-yaml's reader takes every character of data: valid UTF-8 of
// the characters YAML allows. The reader checks its input a block ahead of the documents it
// gives, so a character it refuses can fail a document before the one it is in.
func readable(data []byte) bool {
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' && c != '\r' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		if n == 1 || !(r == 0x85 || r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000) {
			return false
		}
		i += n
	}
	return true
}

// jsonScanner reads the renderer's documents. scratch holds the keys and values of the
// mappings and sequences being read, each taking its own from the top when it ends.
type jsonScanner struct {
	data     []byte
	pos      int
	docSize  int // as converter.grow counts
	fileSize int
	keys     []string
	vals     []any
	buf      []byte
	intern   map[string]string
}

// maxInterned bounds the distinct keys a file's scanner keeps to share.
const maxInterned = 4096

// maxSimpleKey is below the 1024 characters go-yaml allows between a key's start and its
// ':' before it stops reading the key as one.
const maxSimpleKey = 1000

// document reads one mapping and its line's end, then a "---" line unless the data ends.
func (s *jsonScanner) document() (any, bool) {
	s.docSize = 0
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		return nil, false
	}
	v, ok := s.value(0)
	if !ok || s.pos >= len(s.data) || s.data[s.pos] != '\n' {
		return nil, false
	}
	s.pos++
	if s.pos == len(s.data) {
		return v, true
	}
	if len(s.data)-s.pos < 5 || string(s.data[s.pos:s.pos+4]) != "---\n" || s.data[s.pos+4] != '{' {
		return nil, false
	}
	s.pos += 4
	return v, true
}

// grow counts n decoded bytes, as converter.grow; false past a bound (the converter's error).
func (s *jsonScanner) grow(n int) bool {
	s.docSize += n
	s.fileSize += n
	return s.docSize <= maxDecodedSize && s.fileSize <= maxFileDecodedSize
}

func (s *jsonScanner) value(depth int) (any, bool) {
	if s.pos >= len(s.data) {
		return nil, false
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		if depth >= maxDepth || !s.grow(1) {
			return nil, false
		}
		return s.mapping(depth + 1)
	case c == '[':
		if depth >= maxDepth || !s.grow(1) {
			return nil, false
		}
		return s.sequence(depth + 1)
	case c == '"':
		v, ok := s.str(false)
		return v, ok && s.grow(len(v)+1)
	case c == 't':
		return true, s.word("true")
	case c == 'f':
		return false, s.word("false")
	case c == 'n':
		return nil, s.word("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return nil, false
}

// word reads a literal, which a flow indicator must end for YAML to read it alone.
func (s *jsonScanner) word(w string) bool {
	end := s.pos + len(w)
	if end >= len(s.data) || string(s.data[s.pos:end]) != w || !flowEnd(s.data[end]) {
		return false
	}
	s.pos = end
	return s.grow(len(w) + 1)
}

func flowEnd(c byte) bool { return c == ',' || c == '}' || c == ']' }

func (s *jsonScanner) mapping(depth int) (any, bool) {
	s.pos++ // {
	kbase, vbase := len(s.keys), len(s.vals)
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return map[string]any{}, true
	}
	for {
		start := s.pos
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return nil, false
		}
		k, ok := s.str(true)
		if !ok || s.pos >= len(s.data) || s.data[s.pos] != ':' || s.pos-start > maxSimpleKey || !s.grow(len(k)+1) {
			return nil, false
		}
		s.pos++
		v, ok := s.value(depth)
		if !ok {
			return nil, false
		}
		s.keys, s.vals = append(s.keys, k), append(s.vals, v)
		if more, ok := s.separator('}'); !ok {
			return nil, false
		} else if !more {
			break
		}
	}
	keys, vals := s.keys[kbase:], s.vals[vbase:]
	m := make(map[string]any, len(keys))
	for i, k := range keys {
		if _, dup := m[k]; dup {
			return nil, false
		}
		m[k] = vals[i]
	}
	clear(vals)
	s.keys, s.vals = s.keys[:kbase], s.vals[:vbase]
	return m, true
}

// separator reads what follows a member or an element: a comma (more follow) or end, the
// closing bracket; anything else is not the renderer's compact JSON.
func (s *jsonScanner) separator(end byte) (more, ok bool) {
	if s.pos >= len(s.data) {
		return false, false
	}
	c := s.data[s.pos]
	s.pos++
	return c == ',', c == ',' || c == end
}

func (s *jsonScanner) sequence(depth int) (any, bool) {
	s.pos++ // [
	base := len(s.vals)
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return []any{}, true
	}
	for {
		v, ok := s.value(depth)
		if !ok {
			return nil, false
		}
		s.vals = append(s.vals, v)
		if more, ok := s.separator(']'); !ok {
			return nil, false
		} else if !more {
			break
		}
	}
	l := make([]any, len(s.vals)-base)
	copy(l, s.vals[base:])
	clear(s.vals[base:])
	s.vals = s.vals[:base]
	return l, true
}

// str reads a string from its opening quote. It takes only what go-yaml's double-quoted
// scalar reads the same: printable characters other than those YAML breaks lines at
// (NEL, LS, PS) and the byte order mark, and JSON's escapes other than surrogates and \/
// (which go-yaml refuses; encoding/json writes neither).
func (s *jsonScanner) str(key bool) (string, bool) {
	s.pos++ // "
	start := s.pos
	s.buf = s.buf[:0]
	escaped := false
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			raw := s.data[start:s.pos]
			if escaped {
				raw = s.buf
			}
			s.pos++
			if key {
				if k, ok := s.intern[string(raw)]; ok {
					return k, true
				}
				k := string(raw)
				if len(s.intern) < maxInterned {
					s.intern[k] = k
				}
				return k, true
			}
			return string(raw), true
		case c == '\\':
			if !escaped {
				s.buf = append(s.buf, s.data[start:s.pos]...)
				escaped = true
			}
			if !s.escape() {
				return "", false
			}
		case c < 0x20 || c == 0x7f:
			return "", false
		case c < 0x80:
			if escaped {
				s.buf = append(s.buf, c)
			}
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if !printable(r) || n == 1 {
				return "", false
			}
			if escaped {
				s.buf = append(s.buf, s.data[s.pos:s.pos+n]...)
			}
			s.pos += n
		}
	}
	return "", false
}

// printable reports whether go-yaml reads the non-ASCII r inside a double-quoted scalar as
// itself: a printable character that breaks no line and is no byte order mark.
func printable(r rune) bool {
	switch {
	case r == 0x2028, r == 0x2029, r == 0xFEFF:
		return false
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// escape reads one escape into buf.
func (s *jsonScanner) escape() bool {
	if s.pos+1 >= len(s.data) {
		return false
	}
	var c byte
	switch s.data[s.pos+1] {
	case '"':
		c = '"'
	case '\\':
		c = '\\'
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		if s.pos+6 > len(s.data) {
			return false
		}
		var r rune
		for _, h := range s.data[s.pos+2 : s.pos+6] {
			switch {
			case h >= '0' && h <= '9':
				r = r<<4 | rune(h-'0')
			case h >= 'a' && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case h >= 'A' && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return false
			}
		}
		if r >= 0xD800 && r <= 0xDFFF {
			return false // go-yaml refuses a surrogate; JSON would pair it
		}
		s.buf = utf8.AppendRune(s.buf, r)
		s.pos += 6
		return true
	default:
		return false
	}
	s.buf = append(s.buf, c)
	s.pos += 2
	return true
}

// number reads a JSON number, which YAML reads as a plain scalar: the converter's scalar
// decides its value (and go-yaml its tag), unless it is a short plain integer, which both
// keep as written.
func (s *jsonScanner) number() (any, bool) {
	start := s.pos
	p := s.pos
	d := s.data
	if d[p] == '-' {
		p++
	}
	digits := func() int {
		n := 0
		for p < len(d) && d[p] >= '0' && d[p] <= '9' {
			p++
			n++
		}
		return n
	}
	n := digits()
	if n == 0 || n > 1 && d[p-n] == '0' {
		return nil, false
	}
	simple := n <= 18 && (d[start] != '-' || d[p-n] != '0')
	if p < len(d) && d[p] == '.' {
		p++
		if digits() == 0 {
			return nil, false
		}
		simple = false
	}
	if p < len(d) && (d[p] == 'e' || d[p] == 'E') {
		p++
		if p < len(d) && (d[p] == '+' || d[p] == '-') {
			p++
		}
		if digits() == 0 {
			return nil, false
		}
		simple = false
	}
	if p >= len(d) || !flowEnd(d[p]) {
		return nil, false
	}
	tok := string(d[start:p])
	s.pos = p
	if !s.grow(len(tok) + 1) {
		return nil, false
	}
	if simple {
		return json.Number(tok), true
	}
	n2 := &yaml.Node{Kind: yaml.ScalarNode, Value: tok}
	n2.Tag = n2.ShortTag()
	v, err := scalar(n2)
	return v, err == nil
}
