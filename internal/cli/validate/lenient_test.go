package validate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trueup-dev/trueup/internal/config"
)

// TestLenientEnv: a ${VAR} that is unset gets a stand-in and is remembered, whatever its name;
// a database override that is unset stays unset (no override); set ones are read as they are.
func TestLenientEnv(t *testing.T) {
	t.Setenv("TRUEUP_LENIENT_SET", "value")
	for _, k := range []string{"TRUEUP_DATABASE_URL", "TRUEUP_DATABASE_SESSION_URL", "TRUEUP_DATABASE_READ_URL", "TRUEUP_LENIENT_UNSET"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	env := LenientEnv{}
	e := env.Env()
	for _, c := range []struct{ name, wantVar, wantOverride string }{
		{"TRUEUP_DATABASE_URL", "unset-TRUEUP_DATABASE_URL", ""},
		{"TRUEUP_DATABASE_SESSION_URL", "unset-TRUEUP_DATABASE_SESSION_URL", ""},
		{"TRUEUP_DATABASE_READ_URL", "unset-TRUEUP_DATABASE_READ_URL", ""},
		{"TRUEUP_LENIENT_UNSET", "unset-TRUEUP_LENIENT_UNSET", ""},
		{"TRUEUP_LENIENT_SET", "value", "value"},
	} {
		if got := e.Override(c.name); got != c.wantOverride {
			t.Errorf("Override(%s) = %q, want %q", c.name, got, c.wantOverride)
		}
		if got := e.Var(c.name); got != c.wantVar {
			t.Errorf("Var(%s) = %q, want %q", c.name, got, c.wantVar)
		}
	}
	want := []string{"TRUEUP_DATABASE_READ_URL", "TRUEUP_DATABASE_SESSION_URL", "TRUEUP_DATABASE_URL", "TRUEUP_LENIENT_UNSET"}
	if got := env.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

// TestLenientEnvConfigs: configs read for their structure with variables unset, among them
// the override names used as ${VAR}s (the Helm chart's default config reads
// `url: ${TRUEUP_DATABASE_URL}`).
func TestLenientEnvConfigs(t *testing.T) {
	for _, k := range []string{"TRUEUP_LENIENT_URL", "TRUEUP_LENIENT_SESSION", "TRUEUP_DATABASE_URL",
		"TRUEUP_DATABASE_SESSION_URL", "TRUEUP_DATABASE_READ_URL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for _, c := range []struct {
		name, text string
		unset      []string
		session    bool
	}{
		{"url and sessionURL from unset variables", "database:\n  url: ${TRUEUP_LENIENT_URL}\n  sessionURL: ${TRUEUP_LENIENT_SESSION}\n",
			[]string{"TRUEUP_LENIENT_SESSION", "TRUEUP_LENIENT_URL"}, true},
		{"url from the override's own name", "database:\n  url: ${TRUEUP_DATABASE_URL}\n",
			[]string{"TRUEUP_DATABASE_URL"}, false},
		{"no url", "sources: []\n", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trueup.yaml")
			if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			env := LenientEnv{}
			cfg, err := config.LoadEnv(path, env.Env())
			if err != nil {
				t.Fatal(err)
			}
			if got := env.Names(); !slices.Equal(got, c.unset) {
				t.Errorf("Names() = %v, want %v", got, c.unset)
			}
			if got := cfg.Database.SessionURL != ""; got != c.session {
				t.Errorf("sessionURL set = %v, want %v (an unset override must not set it)", got, c.session)
			}
			if cfg.Database.ReadURL != "" {
				t.Errorf("readURL = %q from an unset override", cfg.Database.ReadURL)
			}
		})
	}
}
