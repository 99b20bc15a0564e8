package clip

import "testing"

func TestRev(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":             "",
		"abc":          "abc",
		"0123456789ab": "0123456789ab",
		"0123456789abcdef0123456789abcdef01234567":                                "0123456789ab",
		"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": "sha256:0123456789ab",
		"sha256:0123": "sha256:0123",
	} {
		if got := Rev(in); got != want {
			t.Errorf("Rev(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRunes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one two three", 8, "one two…"},
		{"one two three", 5, "one…"}, // the space before the cut is dropped
		{"héllo wörld", 6, "héllo…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"abc", 0, "…"},
	} {
		if got := Runes(tc.in, tc.n); got != tc.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestStorable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"fits", "hello", 10, "hello"},
		{"NUL dropped", "a\x00b", 10, "ab"},
		{"invalid UTF-8 replaced", "a\xffb", 10, "a\uFFFDb"},
		{"cut", "abcdefgh", 4, "abcd…"},
		{"cut on a character boundary", "aé", 2, "a…"}, // é is two bytes
		{"NUL first, then the size", "\x00\x00abc", 3, "abc"},
	} {
		if got := Storable(tc.in, tc.n); got != tc.want {
			t.Errorf("%s: Storable(%q, %d) = %q, want %q", tc.name, tc.in, tc.n, got, tc.want)
		}
	}
}
