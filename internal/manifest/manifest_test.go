package manifest

import (
	"encoding/json"
	"testing"
)

func TestValidationErrorFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  ValidationError
		want string
	}{
		{ValidationError{File: "a.yaml", Line: 3, Path: "spec.x", Msg: "bad"}, "a.yaml:3: spec.x: bad"},
		{ValidationError{File: "a.yaml", Line: 3, Msg: "bad"}, "a.yaml:3: bad"},
		{ValidationError{File: "a.yaml", Path: "spec", Msg: "bad"}, "a.yaml: spec: bad"},
		{ValidationError{File: "a.yaml", Msg: "bad"}, "a.yaml: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorsSortedOnePerLine(t *testing.T) {
	t.Parallel()
	errs := sortErrors(Errors{
		{File: "b.yaml", Line: 1, Msg: "z"},
		{File: "a.yaml", Line: 10, Path: "spec", Msg: "y"},
		{File: "a.yaml", Line: 2, Path: "spec.b", Msg: "x"},
		{File: "a.yaml", Line: 2, Path: "spec.a", Msg: "x"},
		{File: "a.yaml", Line: 2, Path: "spec.a", Msg: "x"}, // exact repeat, dropped
	})
	want := "a.yaml:2: spec.a: x\na.yaml:2: spec.b: x\na.yaml:10: spec: y\nb.yaml:1: z"
	if got := errs.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
	var err error = errs // Errors must be usable as an error
	_ = err
}

func TestCanonical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{`{"b": 1, "a": {"d": [3, 2], "c": null}}`, `{"a":{"c":null,"d":[3,2]},"b":1}`},
		{`[1.0, 1.5, -0, 1e3, 12345678901234567890, 1E-7]`, `[1,1.5,0,1000,12345678901234567890,1e-7]`},
		{`"<a & b>"`, `"<a & b>"`},
		{` true `, `true`},
	}
	for _, tt := range tests {
		got, err := Canonical(json.RawMessage(tt.in))
		if err != nil {
			t.Errorf("Canonical(%s): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Canonical(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{``, `{`, `{} {}`, `[1e999]`} {
		if got, err := Canonical(json.RawMessage(bad)); err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", bad, got)
		}
	}
}

// appendCanonical must spell every value as encoding/json does (encodeCanonical).
func TestAppendCanonicalMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		nil, true, false, "", "plain", `quote " and \ backslash`, "<html> & ünïcödé \u2028 \x01 \t\n", "\xff invalid",
		json.Number("0"), json.Number("-12.5e3"), json.Number("12345678901234567890123"),
		map[string]any(nil), []any(nil), map[string]any{}, []any{},
		map[string]any{"b": []any{json.Number("1"), "x", nil, map[string]any{"z": true, "a": false}}, "a": "<", "é": true, "": "empty key"},
	} {
		want, err := encodeCanonical(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendCanonical(nil, v, 0)
		if !ok || string(got) != string(want) {
			t.Errorf("%#v: got %s (%v), want %s", v, got, ok, want)
		}
		if m, err := marshalCanonical(v); err != nil || string(m) != string(want) {
			t.Errorf("%#v: marshalCanonical %s, %v", v, m, err)
		}
	}
	// What it leaves to encoding/json still comes out right.
	for _, v := range []any{json.Number(""), 1.5, map[string]any{"n": int64(3)}} {
		want, err := encodeCanonical(v)
		if got, err2 := marshalCanonical(v); string(got) != string(want) || (err == nil) != (err2 == nil) {
			t.Errorf("%#v: marshalCanonical %s %v, want %s %v", v, got, err2, want, err)
		}
	}
}
