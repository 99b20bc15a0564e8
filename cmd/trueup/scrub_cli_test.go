package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigErrorsAreScrubbed: a value taken from ${VAR} that a plugin refuses (and quotes in
// its error) is not printed by serve nor by validate --config.
func TestConfigErrorsAreScrubbed(t *testing.T) {
	const secret = "bad owner-s3cret-6a7b8c"
	t.Setenv("GH_OWNER", secret)
	t.Setenv("GH_TOKEN", "ghp_token0123456789")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, `dataDir: `+filepath.Join(dir, "data")+`
actions:
  - name: gh
    type: github-actions
    config: {token: "${GH_TOKEN}", owner: "${GH_OWNER}", repo: infra, workflow: deploy.yml}
`)
	for _, args := range [][]string{
		{"serve", "--config", cfgPath},
		{"serve", "--config", cfgPath, "--log-level", "debug"},
		{"validate", dir, "--config", cfgPath},
	} {
		stdout, stderr, err := runCLI(t, args...)
		if err == nil {
			t.Fatalf("%v: no error", args)
		}
		if !strings.Contains(err.Error(), `owner "***"`) {
			t.Errorf("%v: err = %v; want the owner scrubbed", args, err)
		}
		for _, out := range []string{err.Error(), stdout, stderr} {
			if strings.Contains(out, "s3cret") {
				t.Errorf("%v: the secret leaked: %s", args, out)
			}
		}
	}
}
