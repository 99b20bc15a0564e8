package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/status"
)

// The jsonb columns every claim, result and list reads and writes (labels, annotations,
// conditions) have one shape each, which PostgreSQL spells one way. encoding/json reads and
// writes them through reflection and validates each value first: a third of the engine's
// CPU in a drain of fresh resources. The functions below read and write that shape in one
// pass and leave anything else (an escape, an unknown key, a number with a fraction) to
// encoding/json, so that what they give is what json.Unmarshal and json.Marshal give.

// decodeStrings reads a JSON object of strings (labels, annotations) into *m as
// json.Unmarshal does into a nil map.
func decodeStrings(b []byte, m *map[string]string) error {
	if out, ok := fastStrings(b); ok {
		*m = out
		return nil
	}
	*m = nil
	return json.Unmarshal(b, m)
}

// decodeConditions reads a JSON array of conditions into *cs as json.Unmarshal does into a
// nil slice.
func decodeConditions(b []byte, cs *[]status.Condition) error {
	if out, ok := fastConditions(b); ok {
		*cs = out
		return nil
	}
	*cs = nil
	return json.Unmarshal(b, cs)
}

// jsonScan reads JSON text; its methods report false at anything the fast path leaves to
// encoding/json.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c, taking it if so.
func (s *jsonScan) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *jsonScan) end() bool {
	s.space()
	return s.i == len(s.b)
}

// literal takes word (null) after white space.
func (s *jsonScan) literal(word string) bool {
	s.space()
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

// raw returns the bytes of a string without escapes or control characters, in valid UTF-8,
// without its quotes.
func (s *jsonScan) raw() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start, wide := s.i, false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if wide && !utf8.Valid(v) {
				return nil, false // json.Unmarshal makes each bad byte U+FFFD
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			wide = true
		}
		s.i++
	}
	return nil, false
}

func (s *jsonScan) str() (string, bool) {
	v, ok := s.raw()
	return string(v), ok
}

// fastStrings reads an object of strings; ok false leaves it to json.Unmarshal.
func fastStrings(b []byte) (map[string]string, bool) {
	s := jsonScan{b: b}
	if s.literal("null") {
		return nil, s.end()
	}
	if !s.next('{') {
		return nil, false
	}
	m := map[string]string{}
	if s.next('}') {
		return m, s.end()
	}
	for {
		k, ok := s.str()
		if !ok || !s.next(':') {
			return nil, false
		}
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		m[k] = v
		if s.next(',') {
			continue
		}
		if s.next('}') {
			return m, s.end()
		}
		return nil, false
	}
}

// fastConditions reads an array of conditions with the keys status.Condition spells; ok
// false leaves it to json.Unmarshal (which also matches keys in other cases).
func fastConditions(b []byte) ([]status.Condition, bool) {
	s := jsonScan{b: b}
	if s.literal("null") {
		return nil, s.end()
	}
	if !s.next('[') {
		return nil, false
	}
	out := []status.Condition{}
	if s.next(']') {
		return out, s.end()
	}
	for {
		c, ok := s.condition()
		if !ok {
			return nil, false
		}
		out = append(out, c)
		if s.next(',') {
			continue
		}
		if s.next(']') {
			return out, s.end()
		}
		return nil, false
	}
}

func (s *jsonScan) condition() (c status.Condition, ok bool) {
	if !s.next('{') {
		return c, false
	}
	if s.next('}') {
		return c, true
	}
	for {
		k, ok := s.raw()
		if !ok || !s.next(':') {
			return c, false
		}
		switch string(k) {
		case "type":
			c.Type, ok = s.str()
		case "status":
			c.Status, ok = s.str()
		case "reason":
			c.Reason, ok = s.str()
		case "message":
			c.Message, ok = s.str()
		case "lastTransitionTime":
			var v []byte
			if v, ok = s.raw(); ok {
				// What Time.UnmarshalJSON does with the string's content: RFC 3339, strictly.
				ok = c.LastTransitionTime.UnmarshalText(v) == nil
			}
		case "observedGeneration":
			c.ObservedGeneration, ok = s.integer()
		default:
			return c, false
		}
		if !ok {
			return c, false
		}
		if s.next(',') {
			continue
		}
		return c, s.next('}')
	}
}

// integer reads an integer without fraction or exponent, as JSON spells it.
func (s *jsonScan) integer() (int64, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || s.b[digits] == '0' && s.i-digits > 1 {
		return 0, false // no digit, or a leading zero JSON does not allow
	}
	if s.i < len(s.b) {
		if c := s.b[s.i]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return n, err == nil
}

// conditionsJSON spells conditions for a jsonb column as json.Marshal and storableJSON do
// ("null" for nil), up to escapes jsonb reads the same, or reports false for a time
// json.Marshal refuses or spells otherwise (a year outside 0–9999, an odd zone).
func conditionsJSON(cs []status.Condition) (string, bool) {
	if cs == nil {
		return "null", true
	}
	var b strings.Builder
	b.Grow(len(cs) * 160)
	b.WriteByte('[')
	var buf [40]byte
	for i := range cs {
		c := &cs[i]
		t := c.LastTransitionTime
		if y := t.Year(); y < 0 || y > 9999 {
			return "", false
		}
		if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
			return "", false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":`)
		writeJSONString(&b, c.Type)
		b.WriteString(`,"status":`)
		writeJSONString(&b, c.Status)
		if c.Reason != "" {
			b.WriteString(`,"reason":`)
			writeJSONString(&b, c.Reason)
		}
		if c.Message != "" {
			b.WriteString(`,"message":`)
			writeJSONString(&b, c.Message)
		}
		b.WriteString(`,"lastTransitionTime":"`)
		b.Write(t.AppendFormat(buf[:0], time.RFC3339Nano))
		b.WriteByte('"')
		if c.ObservedGeneration != 0 {
			b.WriteString(`,"observedGeneration":`)
			b.Write(strconv.AppendInt(buf[:0], c.ObservedGeneration, 10))
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String(), true
}

// storableConditions is conditionsJSON, or json.Marshal and storableJSON where it declines.
func storableConditions(cs []status.Condition) (string, error) {
	if s, ok := conditionsJSON(cs); ok {
		return s, nil
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return "", err
	}
	return string(storableJSON(b)), nil
}
