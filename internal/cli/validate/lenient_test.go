package validate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trueup-dev/trueup/internal/config"
)

// TestLenientEnv: an unset database override stays unset (no override), any other unset
// variable gets a stand-in and is remembered; a set one is read as it is.
func TestLenientEnv(t *testing.T) {
	t.Setenv("TRUEUP_LENIENT_SET", "value")
	for _, k := range []string{"TRUEUP_DATABASE_URL", "TRUEUP_DATABASE_SESSION_URL", "TRUEUP_DATABASE_READ_URL", "TRUEUP_LENIENT_UNSET"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	env := LenientEnv{}
	for _, c := range []struct{ name, want string }{
		{"TRUEUP_DATABASE_URL", ""},
		{"TRUEUP_DATABASE_SESSION_URL", ""},
		{"TRUEUP_DATABASE_READ_URL", ""},
		{"TRUEUP_LENIENT_UNSET", "unset-TRUEUP_LENIENT_UNSET"},
		{"TRUEUP_LENIENT_SET", "value"},
	} {
		if got := env.Get(c.name); got != c.want {
			t.Errorf("Get(%s) = %q, want %q", c.name, got, c.want)
		}
	}
	if got := env.Names(); !slices.Equal(got, []string{"TRUEUP_LENIENT_UNSET"}) {
		t.Errorf("Names() = %v, want only TRUEUP_LENIENT_UNSET", got)
	}
}

// TestLenientEnvSessionURL: a url and a sessionURL from unset ${VAR}s both get stand-ins, so
// the config does not read as a sessionURL without url.
func TestLenientEnvSessionURL(t *testing.T) {
	for _, k := range []string{"TRUEUP_LENIENT_URL", "TRUEUP_LENIENT_SESSION"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	path := filepath.Join(t.TempDir(), "trueup.yaml")
	text := "database:\n  url: ${TRUEUP_LENIENT_URL}\n  sessionURL: ${TRUEUP_LENIENT_SESSION}\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env := LenientEnv{}
	if _, err := config.Load(path, env.Get); err != nil {
		t.Fatal(err)
	}
	if got := env.Names(); !slices.Equal(got, []string{"TRUEUP_LENIENT_SESSION", "TRUEUP_LENIENT_URL"}) {
		t.Errorf("Names() = %v", got)
	}
}
