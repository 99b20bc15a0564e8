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
	if err != nil || out != "valid: 1 source, 1 action instance, 0 notification rules\n" {
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
	status := filepath.Join(dir, "status.yaml")
	if err := os.WriteFile(status, []byte("sources:\n  - name: d\n    dir: {path: .}\n    commitStatus: {provider: github, token: t0k3n, repo: norepo}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "config", "check", status); err == nil || !strings.Contains(err.Error(), `source d: commitStatus: commit status: repo "norepo" must be owner/repo`) {
		t.Fatalf("a commit status that cannot be built: %v", err)
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"a rule naming no provider", "notifications:\n  rules:\n    - {name: r, providers: [nope]}\n", `no provider is named "nope"`},
		{"a policy whose rule does not compile", "policies:\n  - {name: prod-db, action: deny, when: \"plan.destroy > 0 && chnge.type == 'delete'\"}\n",
			"policies[0] (prod-db).when: rule does not compile: undeclared reference to 'chnge' (in container '') (line 1, column 21)"},
	} {
		file := filepath.Join(dir, "rule.yaml")
		if err := os.WriteFile(file, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := runCLI(t, "config", "check", file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	// tracing: is checked too, and a header's value is never quoted.
	tr := filepath.Join(dir, "tracing.yaml")
	if err := os.WriteFile(tr, []byte("tracing: {endpoint: \"http://collector.example.com:4318\", headers: {X-Key: hdr-secret-9}, sampleRatio: 2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = runCLI(t, "config", "check", tr)
	if err == nil || !strings.Contains(err.Error(), "tracing.sampleRatio: 2 is outside 0..1") || !strings.Contains(err.Error(), "tracing.endpoint") {
		t.Fatalf("a bad tracing block: %v", err)
	}
	if strings.Contains(err.Error()+stderr, "hdr-secret-9") {
		t.Fatalf("a header value was printed: %v %s", err, stderr)
	}
}

// config check builds every source without touching dataDir: a running serve's in-progress
// fetch (tmp-) and preview (ref-) folders stay, and no folder is created for a new source
// (as root, that would leave a folder the service cannot write).
func TestConfigCheckLeavesDataDirAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	running := filepath.Join(dataDir, "git", "running")
	inFlight := []string{"tmp-in-flight", "ref-preview", "gen-abc"}
	for _, name := range inFlight {
		if err := os.MkdirAll(filepath.Join(running, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("gen-abc", filepath.Join(running, "mirror")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "trueup.yaml")
	if err := os.WriteFile(cfg, []byte("dataDir: "+dataDir+`
sources:
  - name: running
    git: {url: "https://example.com/running.git"}
  - name: added
    git: {url: "https://example.com/added.git"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := runCLI(t, "config", "check", cfg); err != nil || !strings.HasPrefix(out, "valid: 2 sources") {
		t.Fatalf("config check: %q %q %v", out, stderr, err)
	}
	for _, name := range inFlight {
		if _, err := os.Stat(filepath.Join(running, name)); err != nil {
			t.Errorf("config check removed %s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "git", "added")); !os.IsNotExist(err) {
		t.Errorf("config check created the new source's folder: %v", err)
	}
}

// TestConfigCheckReferences: the references block is checked strictly: an unknown key and a
// grant without outputs fail `config check`; a complete grant passes.
func TestConfigCheckReferences(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"references:\n  expose:\n    - {namespace: production, kinds: [Db], outputs: [host], to: [{namespace: staging}], output: [x]}\n", "line 3: field output not found"},
		{"references:\n  expose:\n    - {namespace: production, kinds: [Db], to: [{namespace: staging}]}\n", `references.expose[0].outputs: required (write "*" to allow every one, or [] to allow dependsOn only)`},
		{"references:\n  expose:\n    - {namespace: production, kinds: [Db], outputs: [host], to: [{namespace: staging}]}\n", ""},
	} {
		p := filepath.Join(dir, "refs.yaml")
		if err := os.WriteFile(p, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := runCLI(t, "config", "check", p)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.text, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.text, err, c.want)
		}
	}
}

// TestConfigCheckOverrideAsVar: the Helm chart's config reads `url: ${TRUEUP_DATABASE_URL}`;
// checked where that variable is unset, it stands in like any other ${VAR} and is reported.
func TestConfigCheckOverrideAsVar(t *testing.T) {
	t.Setenv("TRUEUP_DATABASE_URL", "")
	os.Unsetenv("TRUEUP_DATABASE_URL")
	file := filepath.Join(t.TempDir(), "chart.yaml")
	if err := os.WriteFile(file, []byte("database:\n  url: ${TRUEUP_DATABASE_URL}\nsources:\n  - name: d\n    dir: {path: .}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLI(t, "config", "check", file)
	if err != nil || out != "valid: 1 source, 0 action instances, 0 notification rules\n" {
		t.Fatalf("config check: %q %q %v", out, stderr, err)
	}
}
