package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	out, stderr, err := runCLI(t, "config", "check", "../../examples/trueup.yaml")
	if err != nil || out != "valid: 1 source(s), 1 action instance(s), 0 notification rule(s)\n" {
		t.Fatalf("examples: %q %q %v", out, stderr, err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("sources:\n  - name: x\n    bogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "config", "check", bad); err == nil || !strings.Contains(err.Error(), "line 3: field bogus") {
		t.Fatalf("an unknown field: %v", err)
	}
	src := filepath.Join(dir, "src.yaml")
	if err := os.WriteFile(src, []byte("sources:\n  - name: g\n    git: {url: \"gopher://example.com/x\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "config", "check", src); err == nil || !strings.Contains(err.Error(), "source g:") || !strings.Contains(err.Error(), "unsupported protocol") {
		t.Fatalf("a source that cannot be built: %v", err)
	}
	rule := filepath.Join(dir, "rule.yaml")
	if err := os.WriteFile(rule, []byte("notifications:\n  rules:\n    - {name: r, providers: [nope]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "config", "check", rule); err == nil || !strings.Contains(err.Error(), `no provider is named "nope"`) {
		t.Fatalf("a rule naming no provider: %v", err)
	}
}
