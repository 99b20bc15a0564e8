package actions_test

import (
	"encoding/json"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// TestNumbersShows names when a JSON number shows a secret: its text as written or its
// canonical form holds a secret, or its canonical form is that of a numeric secret.
func TestNumbersShows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		secrets []string
		number  string
		want    bool
	}{
		{[]string{"5432"}, "5432", true},    // the reproduction: written as the secret
		{[]string{"5432"}, "5432.0", true},  // as written, holds the secret
		{[]string{"5432"}, "5.432e3", true}, // canonical form 5432
		{[]string{"5432"}, "54320", false},  // another number, although its digits hold the secret
		{[]string{"5432"}, "15432", false},  // the same: a port is no password
		{[]string{"5432"}, "5432.5", false}, // the same
		{[]string{"5432"}, "-5432", false},  // another number
		{[]string{"15432"}, "5432", false},  // a part of the secret is no secret
		{[]string{"5432"}, "5433", false},   // another number
		{[]string{"5432"}, "543", false},    // a part of the secret is no secret
		{[]string{"1e3"}, "1e3", true},      // written as the secret
		{[]string{"1e3"}, "1000", true},     // the secret's canonical form
		{[]string{"1e3"}, "1000.0", true},   // the same number
		{[]string{"1e3"}, "1001", false},    // another number
		{[]string{"1000"}, "1e3", true},     // canonical 1000 holds the secret
		{[]string{"0.1"}, "1e-1", true},     // canonical 0.1
		{[]string{"12345678901234567890"}, "12345678901234567890", true},
		{[]string{"hunter22"}, "22", false}, // a text secret matches no number
		{[]string{"s3cret"}, "5432", false},
		{[]string{" 5432 "}, "5432", true}, // a secret with spaces around a number
		{nil, "5432", false},
	} {
		scrub := actions.Scrubber(c.secrets)
		if got := actions.NewNumbers(scrub, c.secrets).Shows(c.number); got != c.want {
			t.Errorf("secrets %q, number %s: shows a secret %v, want %v", c.secrets, c.number, got, c.want)
		}
	}
}

// TestScrubValue: every Go number type and json.Number is checked; a number showing a
// secret becomes the string "***", the rest keeps its value and type.
func TestScrubValue(t *testing.T) {
	t.Parallel()
	secrets := []string{"5432", "pw-secret"}
	scrub := actions.Scrubber(secrets)
	number := actions.NewNumbers(scrub, secrets)
	for _, c := range []struct {
		in   any
		want string
	}{
		{float64(5432), `"***"`},
		{float32(5432), `"***"`},
		{5432, `"***"`},
		{int8(54), `54`},
		{int16(5432), `"***"`},
		{int32(5432), `"***"`},
		{int64(5432), `"***"`},
		{uint(5432), `"***"`},
		{uint16(5432), `"***"`},
		{uint32(5432), `"***"`},
		{uint64(5432), `"***"`},
		{json.Number("5432"), `"***"`},
		{json.Number("5.432e3"), `"***"`},
		{json.Number("8080"), `8080`},
		{8080.5, `8080.5`},
		{true, `true`},
		{nil, `null`},
		{"pw-secret", `"***"`},
		{map[string]any{"pw-secret": 5432, "a": []any{json.Number("5432"), 1}}, `{"***":"***","a":["***",1]}`},
	} {
		b, err := json.Marshal(actions.ScrubValue(c.in, scrub, number))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("ScrubValue(%#v) = %s, want %s", c.in, b, c.want)
		}
	}
}

// TestNumbersClean: the fast path of scrubbing encoded JSON says "clean" only when neither
// the text nor any number can show a secret; anything else is decoded and scrubbed.
func TestNumbersClean(t *testing.T) {
	t.Parallel()
	secrets := []string{"5432", "1e3", "pw-secret"}
	n := actions.NewNumbers(actions.Scrubber(secrets), secrets)
	for _, c := range []struct {
		json string
		want bool
	}{
		{`{"port":8080,"name":"db","ok":true,"list":[1,-2,null]}`, true},
		{`{"port":5432}`, false},              // the text holds the secret
		{`{"name":"pw-secret"}`, false},       // a string holds one
		{`{"limit":1000}`, false},             // the canonical form of secret 1e3
		{`{"port":5.432e3}`, false},           // not canonical: decoded and checked
		{`{"ratio":0.5}`, false},              // a fraction: decoded and checked
		{`{"big":1234567890123456}`, false},   // over 15 digits: decoded and checked
		{`{"s":"1000 \" 1.5e3","n":7}`, true}, // numbers inside strings are text
		{`{"s":"a\\","n":1000}`, false},       // an escaped backslash ends no string early
		{`[]`, true},
	} {
		if got := n.Clean([]byte(c.json)); got != c.want {
			t.Errorf("Clean(%s) = %v, want %v", c.json, got, c.want)
		}
	}
	var none *actions.Numbers
	if none.Clean([]byte(`{}`)) {
		t.Error("a nil Numbers says clean")
	}
}
