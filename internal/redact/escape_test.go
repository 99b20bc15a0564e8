package redact

import (
	"encoding/json"
	"testing"
)

// TestNumberText: every Go numeric type a plugin may build its outputs with reads as its
// JSON text; anything else is no number.
func TestNumberText(t *testing.T) {
	t.Parallel()
	type port uint16
	for _, tc := range []struct {
		v    any
		want string
		ok   bool
	}{
		{json.Number("1e3"), "1e3", true},
		{float64(5432), "5432", true},
		{float64(0.1), "0.1", true},
		{float32(0.5), "0.5", true},
		{int(-5432), "-5432", true},
		{int8(-8), "-8", true},
		{int16(16), "16", true},
		{int32(32), "32", true},
		{int64(1) << 60, "1152921504606846976", true},
		{uint(5432), "5432", true},
		{uint8(8), "8", true},
		{uint32(32), "32", true},
		{uint64(1) << 63, "9223372036854775808", true},
		{port(5432), "5432", true},
		{"5432", "", false},
		{true, "", false},
		{nil, "", false},
	} {
		got, ok := numberText(tc.v)
		if got != tc.want || ok != tc.ok {
			t.Errorf("numberText(%#v) = %q, %v; want %q, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
