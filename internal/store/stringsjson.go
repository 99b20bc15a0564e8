package store

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// stringsJSON spells a string map (labels, annotations) as a JSON object for a jsonb column,
// "{}" for none. It writes what json.Marshal and storableJSON give, up to escapes jsonb reads
// the same ("<" unescaped), in one allocation where json.Marshal took four: the apply spells
// one or two per created resource, and under the server's memory limit every allocation
// is the collector's work (BenchmarkApplyBuild100k).
func stringsJSON(v map[string]string) string {
	if len(v) == 0 {
		return "{}"
	}
	var buf [8]string
	keys := buf[:0]
	n := 2
	for k, val := range v {
		keys = append(keys, k)
		n += len(k) + len(val) + 6
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, k)
		b.WriteByte(':')
		writeJSONString(&b, v[k])
	}
	b.WriteByte('}')
	return b.String()
}

// writeJSONString writes s as a JSON string. Like json.Marshal it writes invalid UTF-8 as
// U+FFFD; NUL too, as storableJSON does, because jsonb refuses \u0000.
func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
		}
		b.WriteString(s[start:i])
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == 0 || c >= utf8.RuneSelf: // NUL, or a byte of invalid UTF-8
			b.WriteString(`\ufffd`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		i++
		start = i
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
