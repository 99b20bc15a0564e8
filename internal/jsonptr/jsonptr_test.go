package jsonptr

import "testing"

func TestCheck(t *testing.T) {
	t.Parallel()
	for p, ok := range map[string]bool{
		"/tags":        true,
		"/tags/owner":  true,
		"/a~1b/c~0d":   true,
		"/":            true, // the key "" of the spec
		"/items/0":     true,
		"":             false,
		"tags":         false,
		"#/tags":       false,
		"/tags~":       false,
		"/tags~2":      false,
		"/a~~1":        false,
		"/ok/then~x/y": false,
	} {
		if err := Check(p); (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok %v", p, err, ok)
		}
	}
}

func TestCovers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ignore, path string
		want         bool
	}{
		{"/tags", "/tags", true},
		{"/tags", "/tags/owner", true},
		{"/tags", "/tags/owner/x", true},
		{"/tags", "/tagsets", false},
		{"/tags/owner", "/tags", false},
		{"/a~1b", "/a~1b/c", true},
		{"/a~1b", "/a/b", false}, // a key "a/b" is not the path a, b
		{"/a~0b", "/a~0b", true},
		{"/", "/", true},
		{"/", "/x", false},
		{"tags", "/tags", false},
		{"/tags", "tags", false},
	} {
		if got := Covers(tc.ignore, tc.path); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.ignore, tc.path, got, tc.want)
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	got := Tokens("/a~1b/c~0d/~01/")
	want := []string{"a/b", "c~d", "~1", ""}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if e := Escape("a/b~c"); e != "a~1b~0c" {
		t.Errorf("Escape: %q", e)
	}
}
