package config

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestScrubError: a value from the environment goes from an error in every escaping (a
// password inside a database URL is URL-escaped), the error stays in the chain, and an error
// with nothing to scrub is returned as it is.
func TestScrubError(t *testing.T) {
	t.Parallel()
	secret := "p@ss/w0rd-from-env" // as if a ${VAR} had expanded to it
	c := &Config{secrets: map[string]int{secret: 1, "postgres://u:p@ss/w0rd@db/x": 1}}
	for _, tc := range []struct{ name, in, want string }{
		{"as written", "auth " + secret + " refused", "auth *** refused"},
		{"query-escaped", "postgres://u:p%40ss%2Fw0rd-from-env@db", "postgres://u:***@db"},
		{"path-escaped", "https://h/p@ss%2Fw0rd-from-env", "https://h/***"},
		{"whole URL", "dial postgres://u:p@ss/w0rd@db/x: refused", "dial ***: refused"},
	} {
		got := c.ScrubError(fmt.Errorf("%s: %w", tc.in, fs.ErrNotExist))
		if want := tc.want + ": file does not exist"; got.Error() != want || !errors.Is(got, fs.ErrNotExist) {
			t.Errorf("%s: ScrubError = %q (chain kept: %v); want %q", tc.name, got, errors.Is(got, fs.ErrNotExist), want)
		}
	}
	plain := errors.New("plain")
	if c.ScrubError(plain) != plain || c.ScrubError(nil) != nil {
		t.Error("an error with nothing to scrub was replaced")
	}
}
