package store

import (
	"context"
	"strings"
	"testing"
)

// UnstorableNumber finds the numbers PostgreSQL's jsonb refuses: each case is also cast to
// jsonb by the test's server, whose verdict must be the same.
func TestUnstorableNumber(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	const (
		before   = "a number beyond PostgreSQL's numeric (more than 131072 digits before the decimal point)"
		after    = "a number beyond PostgreSQL's numeric (more than 16383 digits after the decimal point)"
		exponent = "a number beyond PostgreSQL's numeric (an exponent of 1073741823 or more either way)"
	)
	cases := []struct {
		js   string
		want string // "" when every number is stored
	}{
		{`{"a": 1, "b": [2.5, -3e10], "c": "1e200000"}`, ""},
		{`{"a": 1e131071}`, ""},
		{`{"a": -1e131071}`, ""},
		{`{"a": 1e131072}`, before},
		{`{"a":1e131072}`, before},
		{`[1,-1e131072]`, before},
		{`{"a": 1e+131072}`, before},
		{`{"a": 1e000000000000000000131072}`, before},
		{`{"a": 1e200000}`, before},
		{`{"a": 0.001e131074}`, ""},
		{`{"a": 0.001e131075}`, before},
		{`{"a": 0.0001e131075}`, ""},
		{`{"a": 0.0001e131076}`, before},
		{`{"a": 1e-16383}`, ""},
		{`{"a": 123e-16383}`, ""},
		{`{"a": 1e-16384}`, after},
		{`{"a": 1E-16384}`, after},
		{`{"a": 123.5e-16383}`, after},
		{`{"a": 0e200000}`, ""},
		{`{"a": 0e-20000}`, after},
		{`{"a": 0e536870912}`, ""},
		{`{"a": 0e1073741822}`, ""},
		{`{"a": 0e1073741823}`, exponent},
		{`{"a": 0e-1073741823}`, exponent},
		{`{"a": 1e99999999999999999999}`, exponent},
		{`{"a": 1e-99999999999999999999}`, exponent},
		{`{"a": 1E+1000, "b": 2}`, ""},
		{`{"s": "a \" 1e200000 \\", "n": [1, 1e200000]}`, before},
		{`{"1e200000": 1}`, ""},
		{`["\\", 1e200000]`, before},
		{`1e-16384`, after},
		{`{"a": 0.` + strings.Repeat("0", 16383) + `}`, ""},
		{`{"a": 0.` + strings.Repeat("0", 16384) + `}`, after},
		{`{"a": 1.` + strings.Repeat("0", 16384) + `}`, after},
		{`{"a": 1` + strings.Repeat("0", 131071) + `}`, ""},
		{`{"a": 1` + strings.Repeat("0", 131072) + `}`, before},
	}
	for _, tc := range cases {
		got := UnstorableNumber([]byte(tc.js))
		if got != tc.want {
			t.Errorf("UnstorableNumber(%.60s) = %q, want %q", tc.js, got, tc.want)
		}
		var ok bool
		err := st.pool.QueryRow(context.Background(), "SELECT $1::text::jsonb IS NOT NULL", tc.js).Scan(&ok)
		if (err == nil) != (tc.want == "") {
			t.Errorf("the server casts %.60s: %v; the table says %q", tc.js, err, tc.want)
		}
	}
}
