package manifest

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeCanonical decodes s, JSON as marshalCanonical writes it (no whitespace), into the
// values encoding/json gives with UseNumber: map[string]any, []any, string, json.Number,
// bool and nil. The checks read every spec again from its canonical form, and
// encoding/json's decoder took a reader and a buffer of its own for each. Strings without
// escapes are parts of s. ok is false for anything else (whitespace, a malformed value,
// nesting past maxDepth): the caller decodes that with encoding/json.
func decodeCanonical(s string) (v any, ok bool) {
	d := canonDecoder{s: s}
	v, ok = d.value(0)
	return v, ok && d.i == len(s)
}

// canonDecoder reads s from position i.
type canonDecoder struct {
	s string
	i int
}

func (d *canonDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.s) || depth > maxDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *canonDecoder) object(depth int) (any, bool) {
	d.i++ // '{'
	m := map[string]any{}
	if d.next('}') {
		return m, true
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok || !d.next(':') {
			return nil, false
		}
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k.(string)] = v
		switch {
		case d.next(','):
		case d.next('}'):
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *canonDecoder) array(depth int) (any, bool) {
	d.i++ // '['
	a := []any{}
	if d.next(']') {
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		switch {
		case d.next(','):
		case d.next(']'):
			return a, true
		default:
			return nil, false
		}
	}
}

// next consumes c when it comes next.
func (d *canonDecoder) next(c byte) bool {
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// literal consumes word (true, false or null).
func (d *canonDecoder) literal(word string) bool {
	if len(d.s)-d.i < len(word) || d.s[d.i:d.i+len(word)] != word {
		return false
	}
	d.i += len(word)
	return true
}

// str reads a string. One with an escape or a byte outside ASCII is handed to encoding/json,
// which spells them as it does elsewhere (invalid UTF-8 as U+FFFD).
func (d *canonDecoder) str() (any, bool) {
	start := d.i
	d.i++ // '"'
	plain := true
	for d.i < len(d.s) {
		switch c := d.s[d.i]; {
		case c == '"':
			d.i++
			if plain {
				return d.s[start+1 : d.i-1], true
			}
			var out string
			if json.Unmarshal([]byte(d.s[start:d.i]), &out) != nil {
				return nil, false
			}
			return out, true
		case c == '\\':
			plain = false
			d.i += 2
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			plain = false
			d.i++
		default:
			d.i++
		}
	}
	return nil, false
}

// number reads a number as JSON spells one: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *canonDecoder) number() (any, bool) {
	start := d.i
	d.next('-')
	digits := func() int {
		n := 0
		for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	switch {
	case d.next('0'):
	case digits() == 0:
		return nil, false
	}
	if d.next('.') && digits() == 0 {
		return nil, false
	}
	if d.next('e') || d.next('E') {
		if !d.next('+') {
			d.next('-')
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(d.s[start:d.i]), true
}
