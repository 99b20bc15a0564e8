package store

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/status"
)

var stringsCases = []string{
	`null`, ` null `, `{}`, ` { } `, `{"a":"b"}`, `{"a": "b", "c": "d"}`, " {\n\t\"a\" :\r \"b\" } ",
	`{"team": "t1", "app.kubernetes.io/name": "db"}`, `{"ключ": "значение", "😀": "ü"}`, `{"a": ""}`, `{"": "x"}`,
	`{"a": "b", "a": "c"}`, `{"a": "b\"c"}`, `{"a": "\u00e9\n"}`, `{"a": "\ud83d\ude00"}`, "{\"a\": \"\xff\"}", "{\"a\": \"b\x01\"}",
	`{"a": 1}`, `{"a": null}`, `{"a": true}`, `{"a": ["b"]}`, `{"a": {"b": "c"}}`, `{"a": "b",}`, `{"a" "b"}`, `{"a": "b"`,
	`{} x`, `{}}`, `nul`, `nullx`, ``, ` `, `[]`, `"a"`, `{a: "b"}`, `{"a": "b" "c": "d"}`, "{\"a\": \"b\x7f\"}",
}

var conditionsCases = []string{
	`null`, `[]`, ` [ ] `, `[{}]`,
	`[{"type": "Ready", "reason": "Applied", "status": "True", "message": "applied at abc", "lastTransitionTime": "2026-11-27T19:57:21.123456789Z", "observedGeneration": 3}]`,
	`[{"type":"Ready","status":"False","lastTransitionTime":"2026-11-27T19:57:21+01:00"},{"type":"Reconciling","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z"}]`,
	`[{"type": "Ready", "observedGeneration": 0}]`, `[{"type": "Ready", "observedGeneration": -7}]`,
	`[{"type": "Ready", "observedGeneration": 9223372036854775807}]`, `[{"type": "Ready", "observedGeneration": 9223372036854775808}]`,
	`[{"type": "Ready", "observedGeneration": 1.0}]`, `[{"type": "Ready", "observedGeneration": 1e3}]`, `[{"type": "Ready", "observedGeneration": 01}]`,
	`[{"type": "Ready", "observedGeneration": -}]`, `[{"type": "Ready", "observedGeneration": "1"}]`, `[{"type": "Ready", "observedGeneration": null}]`,
	`[{"type": "Ready", "lastTransitionTime": "yesterday"}]`, `[{"type": "Ready", "lastTransitionTime": "2026-11-27 19:57:21Z"}]`,
	`[{"type": "Ready", "lastTransitionTime": null}]`, `[{"type": "Ready", "lastTransitionTime": "2026-11-27T19:57:21\u002b01:00"}]`,
	`[{"Type": "Ready"}]`, `[{"kind": "Ready"}]`, `[{"type": 1}]`, `[{"type": null}]`, `[{"type": "a\"b"}]`, `[{"type": "Ready"},]`,
	`[{"type": "Ready"} {"type": "x"}]`, `[{"type": "Ready"}`, `[{"type": "Ready"}] x`, `[{"type": "Ready",}]`, `{}`, `[1]`, `[null]`,
	`[{"type": "Ready", "message": "ü 😀 <>&"}]`, "[{\"message\": \"\xfe\"}]",
}

// TestDecodeStringsAsEncodingJSON: the fast reader gives what json.Unmarshal gives into a nil
// map, error or not, for the spellings jsonb writes and for every other input.
func TestDecodeStringsAsEncodingJSON(t *testing.T) {
	for _, in := range stringsCases {
		var want, got map[string]string
		wantErr := json.Unmarshal([]byte(in), &want)
		gotErr := decodeStrings([]byte(in), &got)
		if (wantErr != nil) != (gotErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %#v, %v; encoding/json %#v, %v", in, got, gotErr, want, wantErr)
		}
	}
}

func TestDecodeConditionsAsEncodingJSON(t *testing.T) {
	for _, in := range conditionsCases {
		var want, got []status.Condition
		wantErr := json.Unmarshal([]byte(in), &want)
		gotErr := decodeConditions([]byte(in), &got)
		if (wantErr != nil) != (gotErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %#v, %v; encoding/json %#v, %v", in, got, gotErr, want, wantErr)
		}
	}
}

// TestFastJSONTakesJSONBSpelling: what jsonb writes is read by the fast path, not handed to
// encoding/json (which the equivalence tests alone would not tell).
func TestFastJSONTakesJSONBSpelling(t *testing.T) {
	for _, in := range []string{`null`, `{}`, `{"a": "b", "team": "t1", "ключ": "значение"}`} {
		if _, ok := fastStrings([]byte(in)); !ok {
			t.Errorf("strings %s: left to encoding/json", in)
		}
	}
	for _, in := range []string{`null`, `[]`, conditionsCases[4], conditionsCases[5]} {
		if _, ok := fastConditions([]byte(in)); !ok {
			t.Errorf("conditions %s: left to encoding/json", in)
		}
	}
}

// TestConditionsJSONAsEncodingJSON: conditionsJSON writes the value json.Marshal and
// storableJSON write (the same bytes where no character needs an HTML escape), and declines
// the times json.Marshal refuses.
func TestConditionsJSONAsEncodingJSON(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	at := time.Date(2026, 11, 27, 19, 57, 21, 123456789, time.UTC)
	cases := []struct {
		name  string
		conds []status.Condition
		bytes bool // byte for byte
	}{
		{"nil", nil, true},
		{"empty", []status.Condition{}, true},
		{"every field", []status.Condition{{Type: "Ready", Status: "True", Reason: "Applied", Message: "applied", LastTransitionTime: at, ObservedGeneration: 3}}, true},
		{"optional fields empty", []status.Condition{{Type: "Ready", Status: "Unknown", LastTransitionTime: at}}, true},
		{"two, a zone, a negative generation", []status.Condition{{Type: "Ready", Status: "False", LastTransitionTime: at.In(paris), ObservedGeneration: -2},
			{Type: "Reconciling", Status: "True", LastTransitionTime: at.Truncate(time.Second)}}, true},
		{"local time", []status.Condition{{Type: "Ready", LastTransitionTime: time.Now()}}, true},
		{"zero time", []status.Condition{{Type: "Ready"}}, true},
		{"escapes", []status.Condition{{Type: "Ready", Message: "a \"quoted\" \\ line\nnext\ttab \x01 ü 😀", LastTransitionTime: at}}, true},
		{"NUL and bad UTF-8", []status.Condition{{Type: "Ready", Message: "a\x00b\xffc", LastTransitionTime: at}}, false},
		{"HTML characters", []status.Condition{{Type: "Ready", Message: "<a> & \u2028", LastTransitionTime: at}}, false},
		{"the text \\u0000", []status.Condition{{Type: "Ready", Message: `invalid escape \u0000 and \\u0000`, LastTransitionTime: at}}, true},
		{"generations past 2^53", []status.Condition{{Type: "Ready", LastTransitionTime: at, ObservedGeneration: 1<<53 + 1}, {Type: "Stalled", LastTransitionTime: at, ObservedGeneration: -1 << 63}}, true},
		{"zones at the edge", []status.Condition{{Type: "Ready", LastTransitionTime: at.In(time.FixedZone("e", 23*3600+59*60))}, {Type: "S", LastTransitionTime: at.In(time.FixedZone("w", -(23*3600 + 59*60)))}}, true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := conditionsJSON(tt.conds)
			if !ok {
				t.Fatal("declined")
			}
			m, err := json.Marshal(tt.conds)
			if err != nil {
				t.Fatal(err)
			}
			want := string(storableJSON(m))
			if tt.bytes && got != want {
				t.Errorf("wrote %s, json.Marshal %s", got, want)
			}
			if !sameJSON(got, want) {
				t.Errorf("wrote %s, json.Marshal %s", got, want)
			}
		})
	}
	// Declined where json.Marshal spells the time otherwise (an offset with seconds, cut to
	// minutes): storableConditions writes json.Marshal's.
	for _, off := range []int{3601, -59, 19*60 + 32, 23*3600 + 59*60 + 59} {
		cs := []status.Condition{{Type: "Ready", Status: "True", LastTransitionTime: at.In(time.FixedZone("odd", off)), ObservedGeneration: 1<<53 + 1}}
		if s, ok := conditionsJSON(cs); ok {
			t.Errorf("offset %d s: wrote %s, want declined", off, s)
		}
		got, err := storableConditions(cs)
		m, merr := json.Marshal(cs)
		if err != nil || merr != nil || got != string(storableJSON(m)) {
			t.Errorf("offset %d s: storableConditions %s, %v; json.Marshal %s, %v", off, got, err, m, merr)
		}
	}
	for _, tm := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("odd", 24*3600+60))} {
		if s, ok := conditionsJSON([]status.Condition{{Type: "Ready", LastTransitionTime: tm}}); ok {
			t.Errorf("%v: wrote %s, want declined", tm, s)
		}
		_, err := storableConditions([]status.Condition{{Type: "Ready", LastTransitionTime: tm}})
		_, merr := json.Marshal([]status.Condition{{Type: "Ready", LastTransitionTime: tm}})
		if (err != nil) != (merr != nil) {
			t.Errorf("%v: storableConditions %v, json.Marshal %v", tm, err, merr)
		}
	}
}

// TestFastJSONThroughJSONB reads back what PostgreSQL spells: values the store writes,
// stored as jsonb and read as text, decode as encoding/json decodes them.
func TestFastJSONThroughJSONB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openTest(t)
	labels := []map[string]string{nil, {}, {"team": "t1", "app.kubernetes.io/name": "db"}, {"a": `quote " backslash \ tab 	`, "ключ": "😀 <&>"},
		{strings.Repeat("k", 300): strings.Repeat("v", 3000)}}
	for _, l := range labels {
		var text []byte
		if err := st.pool.QueryRow(ctx, `SELECT $1::jsonb::text`, stringsJSON(l)).Scan(&text); err != nil {
			t.Fatal(err)
		}
		if _, ok := fastStrings(text); !ok && !strings.Contains(string(text), `\`) {
			t.Errorf("%s: PostgreSQL's spelling left to encoding/json", text)
		}
		var got, want map[string]string
		if err := decodeStrings(text, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(text, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || len(l) > 0 && !reflect.DeepEqual(got, l) {
			t.Errorf("%s: read %#v, want %#v", text, got, want)
		}
	}
	at := time.Date(2026, 11, 27, 19, 57, 21, 123456789, time.FixedZone("CET", 3600))
	for _, cs := range [][]status.Condition{nil, {}, {{Type: "Ready", Status: "True", Reason: "Applied", Message: "applied ü \"x\"\n<a>", LastTransitionTime: at, ObservedGeneration: 12}},
		{{Type: "Ready", Status: "False", LastTransitionTime: at.UTC()}, {Type: "Reconciling", Status: "True", Reason: "Started", Message: "call started", LastTransitionTime: time.Now()}}} {
		js, err := storableConditions(cs)
		if err != nil {
			t.Fatal(err)
		}
		var text []byte
		if err := st.pool.QueryRow(ctx, `SELECT $1::jsonb::text`, js).Scan(&text); err != nil {
			t.Fatal(err)
		}
		if _, ok := fastConditions(text); !ok && !strings.Contains(string(text), `\`) {
			t.Errorf("%s: PostgreSQL's spelling left to encoding/json", text)
		}
		var got, want []status.Condition
		if err := decodeConditions(text, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(text, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read %#v, want %#v", text, got, want)
		}
		for i := range got {
			if !got[i].LastTransitionTime.Equal(cs[i].LastTransitionTime) || got[i].Message != cs[i].Message {
				t.Errorf("%s: condition %d read %#v, wrote %#v", text, i, got[i], cs[i])
			}
		}
	}
}

func FuzzDecodeStrings(f *testing.F) {
	for _, in := range stringsCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want, got map[string]string
		wantErr := json.Unmarshal(in, &want)
		gotErr := decodeStrings(in, &got)
		if (wantErr != nil) != (gotErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %#v, %v; encoding/json %#v, %v", in, got, gotErr, want, wantErr)
		}
	})
}

func FuzzDecodeConditions(f *testing.F) {
	for _, in := range conditionsCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want, got []status.Condition
		wantErr := json.Unmarshal(in, &want)
		gotErr := decodeConditions(in, &got)
		if (wantErr != nil) != (gotErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %#v, %v; encoding/json %#v, %v", in, got, gotErr, want, wantErr)
		}
	})
}

// sameJSON reports whether a and b are the same JSON value, numbers compared exactly.
func sameJSON(a, b string) bool {
	decode := func(s string) (any, bool) {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// TestStorableJSON: the \u0000 escape, which jsonb refuses, becomes \ufffd; the text \u0000
// (an escaped backslash before u0000) stays as written.
func TestStorableJSON(t *testing.T) {
	for in, want := range map[string]string{
		`"a\u0000b"`:           `"a\ufffdb"`,
		`"\\u0000"`:            `"\\u0000"`,
		`"\\\u0000"`:           `"\\\ufffd"`,
		`{"\u0000": "\\"}`:     `{"\ufffd": "\\"}`,
		`"\\\\u0000"`:          `"\\\\u0000"`,
		`["\"\u0000", 1]`:      `["\"\ufffd", 1]`,
		`"plain"`:              `"plain"`,
		`"\ud83d\ude00"`:       `"\ud83d\ude00"`,
		`"\uD83D\uDE00 x"`:     `"\uD83D\uDE00 x"`,
		`"\ud800"`:             `"\ufffd"`,
		`"\udc00\ud800"`:       `"\ufffd\ufffd"`,
		`"\ud800\u0041"`:       `"\ufffd\u0041"`,
		`"\ud800\ud800\udc00"`: `"\ufffd\ud800\udc00"`,
		`"\\ud800"`:            `"\\ud800"`,
		`"\u00e9\ud800x"`:      `"\u00e9\ufffdx"`,
		`{"\uDBFF": 1}`:        `{"\ufffd": 1}`,
		"\"a\xffb\"":           `"a\ufffdb"`,
		"\"\xed\xa0\x80é\"":    `"\ufffd\ufffd\ufffdé"`,
	} {
		if got := string(storableJSON([]byte(in))); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{``, `{`, `"\u0000`} {
		if got := storableJSON([]byte(in)); got != nil {
			t.Errorf("%q: %s, want nil", in, got)
		}
	}
}

// FuzzConditionsJSON: what storableConditions writes is json.Marshal's value after
// storableJSON, and it fails where json.Marshal does.
func FuzzConditionsJSON(f *testing.F) {
	f.Add("Ready", "True", "Applied", "applied at abc", int64(1795000000), int64(123456789), 3600, int64(3))
	f.Add("", "", "", "a\x00b\xff<>&\u2028\\u0000\"\n", int64(-62135596800), int64(0), 0, int64(0))
	f.Add("R", "U", "", "", int64(253402300800), int64(1), 24*3600, int64(-1<<63))
	f.Fuzz(func(t *testing.T, typ, st, reason, msg string, sec, nsec int64, off int, gen int64) {
		cs := []status.Condition{{Type: typ, Status: st, Reason: reason, Message: msg,
			LastTransitionTime: time.Unix(sec, nsec).In(time.FixedZone("z", off%(100*3600))), ObservedGeneration: gen}}
		got, err := storableConditions(cs)
		m, merr := json.Marshal(cs)
		if (err != nil) != (merr != nil) {
			t.Fatalf("%#v: storableConditions %v, json.Marshal %v", cs, err, merr)
		}
		if err == nil && !sameJSON(got, string(storableJSON(m))) {
			t.Fatalf("%#v: wrote %s, json.Marshal and storableJSON %s", cs, got, storableJSON(m))
		}
	})
}

// TestStorableJSONIntoJSONB: what storableJSON returns, jsonb accepts, holding what
// encoding/json reads from the input (which reads a lone surrogate as U+FFFD too) with NULs
// as U+FFFD.
func TestStorableJSONIntoJSONB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openTest(t)
	for _, in := range []string{`{"a": "\u0000"}`, `{"a": "\ud800"}`, `{"a": "\udfff\ud83d"}`, `["\ud83d\ude00", "\\ud800", "\\u0000"]`,
		`{"\u0000k": {"\ud800": ["\u0000\udc00x"]}}`, `"\uDBFF\uDFFF"`, `"\u00e9"`, "{\"a\xff\": \"\xc0\x80\xed\xa0\x80 é\"}"} {
		out := storableJSON([]byte(in))
		var text string
		if err := st.pool.QueryRow(ctx, `SELECT $1::jsonb::text`, string(out)).Scan(&text); err != nil {
			t.Errorf("%s stored as %s: %v", in, out, err)
			continue
		}
		var got, want any
		if err := json.Unmarshal([]byte(text), &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if want = withoutNUL(want); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: jsonb holds %s, want %#v", in, text, want)
		}
	}
}

// withoutNUL is v with every NUL of its strings and keys as U+FFFD.
func withoutNUL(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "\x00", "\ufffd")
	case []any:
		for i := range x {
			x[i] = withoutNUL(x[i])
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[strings.ReplaceAll(k, "\x00", "\ufffd")] = withoutNUL(e)
		}
		return m
	}
	return v
}

// FuzzStorableJSON: storableJSON keeps what the JSON says, but for NULs and lone surrogates
// (U+FFFD), and leaves neither escape in what it writes.
func FuzzStorableJSON(f *testing.F) {
	for _, in := range []string{`"a\u0000b"`, `"\\u0000"`, `"\ud800"`, `"\ud83d\ude00"`, `{"\u0000": ["\udc00", 1, null]}`, `"\uD800\u0041"`} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := storableJSON(in)
		if !json.Valid(in) {
			if out != nil {
				t.Fatalf("%q: invalid JSON gave %q", in, out)
			}
			return
		}
		if !utf8.Valid(out) {
			t.Fatalf("%q: wrote invalid UTF-8 %q", in, out)
		}
		decode := func(b []byte) (any, error) {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var v any
			return v, d.Decode(&v)
		}
		a, err := decode(in)
		if err != nil {
			return // valid, but deeper than a decode goes
		}
		b, err := decode(out)
		if err != nil {
			t.Fatalf("%q: wrote %q, which does not decode: %v", in, out, err)
		}
		if !sameKeys(a) {
			return // two keys that differ only by a NUL and a U+FFFD
		}
		if wa := withoutNUL(a); !reflect.DeepEqual(wa, b) {
			t.Fatalf("%q: wrote %q: %#v, want %#v", in, out, b, wa)
		}
		for i := 0; i+1 < len(out); i++ {
			if out[i] != '\\' {
				continue
			}
			if out[i+1] != 'u' {
				i++
				continue
			}
			r := hex4(out[i+2 : i+6])
			switch {
			case 0xd800 <= r && r <= 0xdbff && i+12 <= len(out) && out[i+6] == '\\' && out[i+7] == 'u' &&
				0xdc00 <= hex4(out[i+8:i+12]) && hex4(out[i+8:i+12]) <= 0xdfff:
				i += 6 // a pair
			case r == 0 || 0xd800 <= r && r <= 0xdfff:
				t.Fatalf("%q: wrote %q, with \\u%04x left", in, out, r)
			}
			i += 5
		}
	})
}

// sameKeys reports whether no object in v has two keys that are one once NULs are U+FFFD.
func sameKeys(v any) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if !sameKeys(e) {
				return false
			}
		}
	case map[string]any:
		seen := make(map[string]bool, len(x))
		for k, e := range x {
			k = strings.ReplaceAll(k, "\x00", "\ufffd")
			if seen[k] || !sameKeys(e) {
				return false
			}
			seen[k] = true
		}
	}
	return true
}
