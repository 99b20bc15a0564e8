package envvar

import "testing"

func TestRef(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{"${A}": "A", "x${_b9}y": "_b9", "${9A}": "", "$A": "", "${}": "", "${A-B}": ""} {
		got := ""
		if m := Ref.FindStringSubmatch(s); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q: %q, want %q", s, got, want)
		}
	}
}
