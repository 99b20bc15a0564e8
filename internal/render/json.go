package render

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// appendJSON appends the JSON of the resource node n to b, as kyaml's RNode.MarshalJSON
// writes it (keys sorted, strings escaped as encoding/json does) without its round trip
// through YAML text, a decoded map and encoding/json, which costs a fifth of a render. ok is false for a node whose JSON it does not write the same (aliases, anchors,
// merge keys, keys that are not strings, repeated keys, explicit or unusual tags, invalid
// UTF-8, integers out of the plain decimal form): the caller then uses MarshalJSON, whose
// result or error stands.
func appendJSON(b []byte, n *yaml.Node) ([]byte, bool) {
	if n.Anchor != "" {
		return b, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content)%2 != 0 {
			return b, false
		}
		pairs := make([]int, 0, len(n.Content)/2)
		for i := 0; i < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Anchor != "" || scalarTag(k) != strTag || !utf8.ValidString(k.Value) {
				return b, false
			}
			pairs = append(pairs, i)
		}
		slices.SortFunc(pairs, func(x, y int) int { return strings.Compare(n.Content[x].Value, n.Content[y].Value) })
		b = append(b, '{')
		for j, i := range pairs {
			if j > 0 {
				if n.Content[pairs[j-1]].Value == n.Content[i].Value {
					return b, false // a repeated key, which the YAML decoder refuses
				}
				b = append(b, ',')
			}
			b = appendString(b, n.Content[i].Value)
			b = append(b, ':')
			var ok bool
			if b, ok = appendJSON(b, n.Content[i+1]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case yaml.SequenceNode:
		b = append(b, '[')
		for i, c := range n.Content {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSON(b, c); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case yaml.ScalarNode:
		return appendScalar(b, n)
	}
	return b, false
}

const (
	strTag   = "!!str"
	intTag   = "!!int"
	boolTag  = "!!bool"
	nullTag  = "!!null"
	floatTag = "!!float"
)

// scalarTag is the tag the YAML decoder reads the scalar n as after the YAML encoder wrote
// it, "" when that is not plain to see (an explicit tag that disagrees with the value or its
// quotes, a tag of another kind).
func scalarTag(n *yaml.Node) string {
	quoted := n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	switch {
	case n.Style&yaml.TaggedStyle != 0:
		return ""
	case n.Tag == strTag:
		return strTag
	case n.Tag == "":
		return n.ShortTag() // quoted: a string; plain: as the value reads
	case quoted:
		return "" // an explicit tag on a quoted value: the encoder keeps the quotes, not the tag
	}
	// An explicit tag the value reads as anyway; otherwise the encoder writes the tag.
	if t := (&yaml.Node{Kind: yaml.ScalarNode, Value: n.Value}).ShortTag(); t == n.Tag {
		return t
	}
	return ""
}

func appendScalar(b []byte, n *yaml.Node) ([]byte, bool) {
	switch scalarTag(n) {
	case strTag:
		if !utf8.ValidString(n.Value) || strings.Contains(n.Value, "\n") && n.Style&yaml.DoubleQuotedStyle == 0 {
			// The encoder writes a string of several lines as a block, which does not
			// always read back the same ("a: >\n 0\n  x" comes back with one more line).
			return b, false
		}
		return appendString(b, n.Value), true
	case nullTag:
		if n.Value != "" { // the encoder writes an empty value as "", a string
			return append(b, "null"...), true
		}
	case boolTag:
		switch n.Value {
		case "true", "True", "TRUE":
			return append(b, "true"...), true
		case "false", "False", "FALSE":
			return append(b, "false"...), true
		}
	case intTag:
		if plainDecimal(n.Value) {
			return append(b, n.Value...), true
		}
	case floatTag:
		// As the decoder reads it and encoding/json writes a float64 (NaN and infinities
		// are errors, left to MarshalJSON).
		var v any
		if err := n.Decode(&v); err != nil {
			return b, false
		}
		f, ok := v.(float64)
		if !ok {
			return b, false
		}
		j, err := json.Marshal(f)
		if err != nil {
			return b, false
		}
		return append(b, j...), true
	}
	return b, false
}

// plainDecimal reports whether s is an integer written as encoding/json writes it (no sign
// but a leading minus, no leading zero, no underscore) and small enough for an int64.
func plainDecimal(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 18 || d[0] == '0' && (len(d) > 1 || len(s) > 1) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// appendString appends s as a JSON string, escaped as encoding/json escapes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always marshals
			return append(b, escapeForYAML(j)...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// escapeForYAML rewrites, in the JSON text j, the characters encoding/json leaves raw that a
// YAML reader takes otherwise: U+0085 (NEL) is a line break in YAML and folds into a space
// inside a quoted string, the other C1 controls (U+0080–U+009F) are refused, and U+FEFF is a
// byte order mark. JSON and YAML read their \uXXXX escapes alike. In UTF-8 these are exactly
// the pairs C2 80–C2 9F and the triple EF BB BF, which only a string of j can hold.
func escapeForYAML(j []byte) []byte {
	const hex = "0123456789abcdef"
	var out []byte
	last := 0
	for i := 0; i < len(j); i++ {
		var r int
		var n int
		switch {
		case j[i] == 0xc2 && i+1 < len(j) && j[i+1] >= 0x80 && j[i+1] <= 0x9f:
			r, n = int(j[i+1]), 2
		case j[i] == 0xef && i+2 < len(j) && j[i+1] == 0xbb && j[i+2] == 0xbf:
			r, n = 0xfeff, 3
		default:
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(j)+12)
		}
		out = append(out, j[last:i]...)
		out = append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		i += n - 1
		last = i + 1
	}
	if out == nil {
		return j
	}
	return append(out, j[last:]...)
}
