package wire

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/status"
)

// WriteResources writes the answer of a resource list, {"continue": cont, "items": items
// converted by conv} (never null), byte for byte as WriteJSON writes it, without
// encoding/json's reflection: encoding/json sorts each label map into a fresh slice,
// compacts each spec through its scanner and marshals each time on its own, a third of a
// page's CPU, and grows its buffer per answer. A page holding what appendResource leaves to
// encoding/json goes through WriteJSON.
func WriteResources[T any](w http.ResponseWriter, code int, items []T, conv func(T) Resource, cont string) {
	bp := answerBuffers.Get().(*[]byte)
	b := append((*bp)[:0], `{"continue":`...)
	b = appendString(b, cont)
	b = append(b, `,"items":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		r := conv(items[i])
		var ok bool
		if b, ok = appendResource(b, &r); !ok {
			if cap(b) <= maxPooledAnswer {
				*bp = b
				answerBuffers.Put(bp)
			}
			all := make([]Resource, len(items))
			for i := range items {
				all[i] = conv(items[i])
			}
			WriteJSON(w, code, map[string]any{"items": all, "continue": cont})
			return
		}
	}
	b = append(b, "]}\n"...)
	writeAnswer(w, code, bp, b)
}

// writeAnswer writes b, the answer written into the pooled buffer bp, and puts it back.
func writeAnswer(w http.ResponseWriter, code int, bp *[]byte, b []byte) {
	writeJSONHeader(w, code)
	_, _ = w.Write(b)
	if cap(b) <= maxPooledAnswer {
		*bp = b
		answerBuffers.Put(bp)
	}
}

// answerBuffers holds the buffers answers are written into; one larger than maxPooledAnswer
// (a page of 1,000 large specs) is left to the collector.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledAnswer = 1 << 20

// appendResource appends r as encoding/json (json.Encoder, HTML escaped) spells it, or
// reports false for what it leaves to encoding/json: an approval (GET of one resource
// only), a time encoding/json refuses or spells otherwise, a raw value that is not JSON.
func appendResource(b []byte, r *Resource) ([]byte, bool) {
	if r.Approval != nil {
		return b, false
	}
	ok := true
	b = appendField(b, `{"apiVersion":`, r.APIVersion)
	b = appendField(b, `,"kind":`, r.Kind)

	m := &r.Metadata
	b = appendField(b, `,"metadata":{"name":`, m.Name)
	b = appendField(b, `,"namespace":`, m.Namespace)
	b = appendField(b, `,"uid":`, m.UID)
	b = append(b, `,"generation":`...)
	b = strconv.AppendInt(b, m.Generation, 10)
	b = append(b, `,"labels":`...)
	b = appendStringMap(b, m.Labels)
	b = append(b, `,"annotations":`...)
	b = appendStringMap(b, m.Annotations)
	b = append(b, `,"creationTimestamp":`...)
	b, ok = appendTime(b, &m.CreationTimestamp, ok)
	b = append(b, `,"deletionTimestamp":`...)
	b, ok = appendTime(b, m.DeletionTimestamp, ok)

	b = append(b, `},"spec":`...)
	b, ok = appendRaw(b, r.Spec, ok)

	s := &r.Status
	b = appendField(b, `,"status":{"phase":`, s.Phase)
	b = append(b, `,"observedGeneration":`...)
	b = strconv.AppendInt(b, s.ObservedGeneration, 10)
	b = append(b, `,"conditions":`...)
	b, ok = appendConditions(b, s.Conditions, ok)
	b = appendField(b, `,"message":`, s.Message)
	b = append(b, `,"outputs":`...)
	b, ok = appendRaw(b, s.Outputs, ok)
	b = append(b, `,"lastReconcileTime":`...)
	b, ok = appendTime(b, s.LastReconcileTime, ok)
	if s.NextReconcileTime != nil {
		b = append(b, `,"nextReconcileTime":`...)
		b, ok = appendTime(b, s.NextReconcileTime, ok)
	}
	if s.Orphaned {
		b = append(b, `,"orphaned":true`...)
	}

	src := &r.Source
	b = appendField(b, `},"source":{"name":`, src.Name)
	b = appendField(b, `,"path":`, src.Path)
	if src.Line != 0 {
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(src.Line), 10)
	}
	b = appendField(b, `,"revision":`, src.Revision)
	b = appendOmitEmpty(b, `,"resourceSet":`, src.ResourceSet)
	b = append(b, '}')

	if len(r.DependsOn) > 0 {
		b = append(b, `,"dependsOn":[`...)
		for i := range r.DependsOn {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendDependency(b, &r.DependsOn[i])
		}
		b = append(b, ']')
	}
	return append(b, '}'), ok
}

func appendDependency(b []byte, d *Dependency) []byte {
	b = appendField(b, `{"kind":`, d.Kind)
	b = appendField(b, `,"namespace":`, d.Namespace)
	b = appendField(b, `,"name":`, d.Name)
	b = append(b, `,"explicit":`...)
	b = strconv.AppendBool(b, d.Explicit)
	b = append(b, `,"outputs":`...)
	if d.Outputs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, o := range d.Outputs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, o)
		}
		b = append(b, ']')
	}
	b = appendOmitEmpty(b, `,"phase":`, d.Phase)
	b = appendOmitEmpty(b, `,"source":`, d.Source)
	if d.Ready != nil {
		b = append(b, `,"ready":`...)
		b = strconv.AppendBool(b, *d.Ready)
	}
	if d.Missing {
		b = append(b, `,"missing":true`...)
	}
	return append(b, '}')
}

func appendConditions(b []byte, cs []status.Condition, ok bool) ([]byte, bool) {
	if cs == nil {
		return append(b, "null"...), ok
	}
	b = append(b, '[')
	for i := range cs {
		c := &cs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendField(b, `{"type":`, c.Type)
		b = appendField(b, `,"status":`, c.Status)
		b = appendOmitEmpty(b, `,"reason":`, c.Reason)
		b = appendOmitEmpty(b, `,"message":`, c.Message)
		b = append(b, `,"lastTransitionTime":`...)
		b, ok = appendTime(b, &c.LastTransitionTime, ok)
		if c.ObservedGeneration != 0 {
			b = append(b, `,"observedGeneration":`...)
			b = strconv.AppendInt(b, c.ObservedGeneration, 10)
		}
		b = append(b, '}')
	}
	return append(b, ']'), ok
}

// appendStringMap appends m with its keys sorted, as encoding/json does ("null" for nil).
func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	var stack [16]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// appendTime appends t as time.Time.MarshalJSON does ("null" for nil); ok becomes false for
// a time it refuses or spells otherwise than RFC 3339 of the offset (a year outside 0–9999,
// an offset of a day or more or with seconds).
func appendTime(b []byte, t *time.Time, ok bool) ([]byte, bool) {
	if t == nil {
		return append(b, "null"...), ok
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), ok
}

// appendRaw appends the JSON value raw as encoding/json spells a json.RawMessage: compact
// (no space between tokens) and HTML escaped in its strings, "null" for nil. raw is a value
// PostgreSQL's jsonb wrote (its text spells what encoding/json would compact); ok becomes
// false when it is not JSON as far as its strings and brackets tell (empty, unbalanced,
// ending inside a string), for encoding/json to answer with its error.
func appendRaw(b []byte, raw []byte, ok bool) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), ok
	}
	depth, start := 0, len(b)
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case ' ', '\t', '\n', '\r':
		case '{', '[':
			depth++
			b = append(b, c)
		case '}', ']':
			if depth--; depth < 0 {
				return b, false
			}
			b = append(b, c)
		case '"':
			end := stringEnd(raw, i)
			if end < 0 {
				return b, false
			}
			b = appendEscapedHTML(b, raw[i:end])
			i = end - 1
		default:
			b = append(b, c)
		}
	}
	if depth != 0 || len(b) == start {
		return b, false
	}
	return b, ok
}

// stringEnd is the index just past the JSON string that starts at raw[i] (a quote), or -1
// when it does not end.
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// appendEscapedHTML appends s, a JSON string with its quotes, with the characters
// encoding/json escapes for HTML (<, >, &, U+2028, U+2029) escaped, as its compaction of a
// json.RawMessage does; every other byte as it is.
func appendEscapedHTML(b []byte, s []byte) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '<' || c == '>' || c == '&' {
			b = append(b, s[last:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			last = i + 1
		}
		// U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
		if c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8 {
			b = append(b, s[last:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
			last = i + 3
			i += 2
		}
	}
	return append(b, s[last:]...)
}

// appendField appends key, the text before a member's value (`,"kind":`, with what closes or
// opens objects around it), and s as a JSON string.
func appendField(b []byte, key, s string) []byte {
	return appendString(append(b, key...), s)
}

// appendOmitEmpty is appendField for a field tagged omitempty: nothing when s is "".
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendField(b, key, s)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string as encoding/json spells it with HTML escaping:
// \", \\, \b, \f, \n, \r, \t, \u00XX for the other controls and <, >, &, \ufffd for invalid
// UTF-8, \u2028 and \u2029.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
