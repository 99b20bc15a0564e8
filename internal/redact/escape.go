package redact

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/trueup-dev/trueup/internal/jsonscan"
)

// Error returns err with scrub applied to its message (removing secrets a server or a
// command echoed back), keeping err in the chain so that errors.Is, errors.As and
// actions.IsTerminal still see through it. It returns err itself when scrub changes nothing.
func Error(err error, scrub func(string) string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := scrub(msg); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// Replacer returns a function that replaces every secret, and its JSON- and URL-escaped
// forms, with "***". Longer secrets are replaced first: a secret that
// contains another (a user name inside a token) goes whole, not leaving its tail behind.
func Replacer(secrets []string) func(string) string { return replacerOf(forms(secrets)) }

// forms lists the texts that show secrets, each once, longest first.
func forms(secrets []string) []string {
	seen := map[string]bool{}
	var all []string
	for _, s := range secrets {
		// As written; JSON-escaped as json.Marshal writes it (outputs are scrubbed as encoded
		// JSON) and without its HTML escapes (log/slog's JSON handler); quoted as Go quotes it
		// (log/slog's text handler); URL-escaped (a password inside a DSN or a query string).
		for _, v := range []string{s, jsonEscaped(s, true), jsonEscaped(s, false), unquoted(strconv.Quote(s)),
			url.QueryEscape(s), url.PathEscape(s)} {
			if v != "" && !seen[v] {
				seen[v] = true
				all = append(all, v)
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	return all
}

// mergeForms merges two lists of forms, each longest first, into one list longest first. A
// text in both lists is listed twice, which changes nothing: both replace it with "***".
func mergeForms(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if len(a[0]) >= len(b[0]) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// replacerOf returns the function that replaces each of all (longest first) with "***".
func replacerOf(all []string) func(string) string {
	if len(all) == 0 {
		return func(s string) string { return s }
	}
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s, "***")
	}
	return strings.NewReplacer(pairs...).Replace
}

// jsonEscaped is s as encoding/json writes it inside a string, with or without its HTML
// escapes (\u003c for <).
func jsonEscaped(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s)
	return unquoted(strings.TrimSuffix(b.String(), "\n"))
}

// unquoted is q without its first and last characters, the quotes around it.
func unquoted(q string) string { return q[1 : len(q)-1] }

// Value returns a decoded JSON value (as encoding/json decodes it, with or without
// UseNumber, or as a plugin built it) with every string and key passed through scrub, and
// every number that shows a secret (numbers.Shows) replaced by the string "***": a number
// cannot be partly masked, and a string keeps the JSON valid. numbers may be nil (numbers
// are kept).
func Value(v any, scrub func(string) string, numbers *Numbers) any {
	switch x := v.(type) {
	case string:
		return scrub(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[scrub(k)] = Value(e, scrub, numbers)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e, scrub, numbers)
		}
		return out
	}
	if text, ok := numberText(v); ok && numbers != nil && numbers.Shows(text) {
		return "***"
	}
	return v
}

// Numbers tells which JSON numbers show a secret.
type Numbers struct {
	scrub   func(string) string
	numeric map[string]bool // canonical forms of the secrets that read as numbers
}

// NewNumbers returns the check of JSON numbers against secrets, scrub being their scrubber
// (Replacer(secrets), possibly with more secrets than listed). A number, given by its text
// as written (5432, 1e3, 5432.0), shows a secret when that text or the number's canonical
// form (the text encoding/json writes for the float64 it reads as: 1e3 is 1000) is a secret
// as a whole (scrub turns it into "***"), or when that canonical form is the canonical form
// of a listed secret that reads as a number (secret "1e3", output 1000). A number that only
// contains a secret's digits (15432 for "5432") is another number and is kept: replacing it
// would break typed outputs and state for nothing.
func NewNumbers(scrub func(string) string, secrets []string) *Numbers {
	n := &Numbers{scrub: scrub}
	for _, s := range secrets {
		if c, ok := canonicalNumber(strings.TrimSpace(s)); ok {
			if n.numeric == nil {
				n.numeric = map[string]bool{}
			}
			n.numeric[c] = true
		}
	}
	return n
}

// Shows reports whether the number written as text shows a secret.
func (n *Numbers) Shows(text string) bool {
	if n.whole(text) {
		return true
	}
	c, ok := canonicalNumber(text)
	return ok && (n.numeric[c] || n.whole(c))
}

// whole reports whether text is one secret as a whole: scrub replaces it by a single "***"
// (a longer text keeps other characters, two secrets in a row give two).
func (n *Numbers) whole(text string) bool { return text != "***" && n.scrub(text) == "***" }

// Clean reports, without decoding it, that the encoded JSON value v has nothing to scrub:
// scrub leaves its text unchanged (so every string, key and number as written is clean), and
// each number is a short integer (at most 15 digits, written in its canonical form) that is
// no numeric secret's canonical form. False only means that v must be decoded and scrubbed.
func (n *Numbers) Clean(v []byte) bool {
	if n == nil || n.scrub(string(v)) != string(v) {
		return false
	}
	for num := range jsonscan.Numbers(v) {
		if len(num) > 15 || bytes.ContainsAny(num, ".eE") || n.numeric[string(num)] {
			return false
		}
	}
	return true
}

// canonicalNumber is the text encoding/json writes for the float64 text reads as; false when
// text is no finite number.
func canonicalNumber(text string) (string, bool) {
	if text == "" || !strings.ContainsAny(text, "0123456789") {
		return "", false
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	b, err := json.Marshal(f)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// numberText is the JSON text of a number of any Go numeric type; false for anything else.
func numberText(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), true
	}
	return "", false
}

// Leaves appends the text of every leaf of v (a decoded JSON value) to out: strings as they
// are, numbers as JSON. Booleans and null carry nothing worth hiding, and scrubbing "true" out
// of a text would garble it.
func Leaves(out []string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			out = Leaves(out, e)
		}
	case []any:
		for _, e := range x {
			out = Leaves(out, e)
		}
	case string:
		out = append(out, x)
	case nil, bool:
	default:
		if b, err := json.Marshal(x); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}
