package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// The example repository's counts, which the smoke test (make smoke) expects too.
const (
	exampleTypes     = 4
	exampleResources = 8
)

func TestValidateExamples(t *testing.T) {
	t.Parallel()
	out, stderr, err := runCLI(t, "validate", "../../examples/repo", "--config", "../../examples/trueup.yaml")
	if err != nil {
		t.Fatalf("validate examples: %v\n%s", err, stderr)
	}
	if want := fmt.Sprintf("../../examples/repo: valid: %d resource types, %d resources\n", exampleTypes, exampleResources); out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	types, _ := os.ReadFile("../../examples/repo/types/databasecluster.yaml")
	write("types/db.yaml", string(types))
	write("dbs/bad.yaml", `apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: orders
spec:
  engine: oracle
  storage_gb: 5
`)
	write("dbs/unknown.yaml", "apiVersion: x.io/v1\nkind: Queue\nmetadata: {name: q}\nspec: {}\n")
	write("notes.txt", "ignored")
	_, stderr, err := runCLI(t, "validate", dir, "--config", "../../examples/trueup.yaml")
	var code exitCode
	if !errors.As(err, &code) || code != 1 {
		t.Fatalf("exit %v, want 1\n%s", err, stderr)
	}
	for _, want := range []string{"dbs/bad.yaml:6: spec.engine", "dbs/bad.yaml:7: spec.storage_gb", "dbs/unknown.yaml:2", "3 errors"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestValidateUnknownAction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	types, _ := os.ReadFile("../../examples/repo/types/bucket.yaml")
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(strings.Replace(string(types), "name: provision", "name: missing", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCLI(t, "validate", dir, "--config", "../../examples/trueup.yaml")
	if err == nil || !strings.Contains(stderr, `t.yaml:19: spec.action: action "missing" is not declared`) {
		t.Errorf("err %v stderr:\n%s", err, stderr)
	}
}

// TestValidateAppliesAllowlists: with --config, a type whose with: the instance's allowedRefs
// or allowedVariables do not cover fails validate with the message serve's ingest gives, and
// a type within them passes.
func TestValidateAppliesAllowlists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, allowlistConfig)
	for _, tc := range append(allowlistCases, struct{ with, want string }{`{ref: main, bogus: 1}`, `t.yaml:7: spec.action.with: `}) {
		repo := t.TempDir()
		writeTestFile(t, filepath.Join(repo, "t.yaml"), databaseType(`{name: ci, with: `+tc.with+`}`))
		_, stderr, err := runCLI(t, "validate", repo, "--config", cfgPath)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("with %s: %v\n%s", tc.with, err, stderr)
		case tc.want != "" && (err == nil || !strings.Contains(stderr, tc.want)):
			t.Errorf("with %s: err = %v; stderr lacks %q:\n%s", tc.with, err, tc.want, stderr)
		}
	}
}

// TestValidateWithLine: a with: problem is reported at the line of the with: field it names
// (or of with: itself), not at the type's first line.
func TestValidateWithLine(t *testing.T) {
	t.Parallel()
	cfgPath := filepath.Join(t.TempDir(), "trueup.yaml")
	writeTestFile(t, cfgPath, allowlistConfig)
	repo := t.TempDir()
	block := strings.Replace(databaseType("\n    name: ci\n    with:\n      variables: {TIER: gold}\n      ref: evil"), "action: \n", "action:\n", 1)
	writeTestFile(t, filepath.Join(repo, "t.yaml"), block)
	_, stderr, err := runCLI(t, "validate", repo, "--config", cfgPath)
	const want = `t.yaml:11: spec.action.with.ref: "evil" is not in the action's allowedRefs [main release/*]`
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("err %v; stderr lacks %q:\n%s", err, want, stderr)
	}
}

// TestValidateWithUnsetVariables: when an instance cannot be built because the config's
// variables are unset (CI of a manifests repository rarely has them), validate still checks
// the manifests and the action names, and warns that with: was not checked; a config that
// fails with every variable set fails validate.
func TestValidateWithUnsetVariables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, `dataDir: /tmp/trueup-test
actions:
  - name: ci
    type: gitlab
    config: {baseURL: "${TRUEUP_TEST_UNSET_GITLAB_URL}", project: infra/db, triggerToken: t, token: u, allowedRefs: [main]}
`)
	repo := t.TempDir()
	writeTestFile(t, filepath.Join(repo, "t.yaml"), databaseType("{name: ci, with: {ref: evil}}"))
	stdout, stderr, err := runCLI(t, "validate", repo, "--config", cfgPath)
	if err != nil || !strings.Contains(stdout, "valid: 1 resource type,") {
		t.Fatalf("err %v, stdout %q, stderr:\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "with TRUEUP_TEST_UNSET_GITLAB_URL unset") || !strings.Contains(stderr, "with: is not checked") {
		t.Errorf("no warning:\n%s", stderr)
	}
	writeTestFile(t, filepath.Join(repo, "t.yaml"), databaseType("{name: other}"))
	if _, stderr, err := runCLI(t, "validate", repo, "--config", cfgPath); err == nil || !strings.Contains(stderr, `action "other" is not declared`) {
		t.Errorf("an undeclared action passed: %v\n%s", err, stderr)
	}
	writeTestFile(t, cfgPath, `dataDir: /tmp/trueup-test
actions:
  - name: ci
    type: gitlab
    config: {baseURL: "not a url", project: infra/db, triggerToken: t, token: u}
`)
	if _, stderr, err := runCLI(t, "validate", repo, "--config", cfgPath); err == nil || !strings.Contains(err.Error(), "baseURL") || strings.Contains(stderr, "warning") {
		t.Errorf("a broken config passed: %v\n%s", err, stderr)
	}
}

// A dependency cycle is reported at every member, in order; a reference may stand in an
// integer field.
func TestValidateDependencyCycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	types, _ := os.ReadFile("../../examples/repo/types/databasecluster.yaml")
	files := map[string]string{
		"types/db.yaml": string(types),
		"dbs/a.yaml":    "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: a}\nspec: {engine: postgres, storage_gb: '${{ DatabaseCluster/b.outputs.size }}'}\n",
		"dbs/b.yaml":    "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: b}\ndependsOn: [{kind: DatabaseCluster, name: a}]\nspec: {engine: mysql, storage_gb: 20}\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, err := runCLI(t, "validate", dir, "--config", "../../examples/trueup.yaml")
	var code exitCode
	if !errors.As(err, &code) || code != 1 {
		t.Fatalf("exit %v, want 1\n%s", err, stderr)
	}
	const cycle = "dependsOn: dependency cycle: DatabaseCluster/default/a (dbs/a.yaml:1) → DatabaseCluster/default/b (dbs/b.yaml:1) → DatabaseCluster/default/a"
	for _, want := range []string{"dbs/a.yaml:1: " + cycle, "dbs/b.yaml:1: " + cycle, "2 errors"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestValidateCrossNamespaceGrant: with --config, a reference across namespaces fails validate
// at its file:line naming the missing grant, as serve's ingest does, and passes once the
// config's references.expose grants it.
func TestValidateCrossNamespaceGrant(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	types, _ := os.ReadFile("../../examples/repo/types/databasecluster.yaml")
	writeTestFile(t, filepath.Join(repo, "types/db.yaml"), string(types))
	writeTestFile(t, filepath.Join(repo, "prod.yaml"), "apiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: orders, namespace: production}\nspec: {engine: postgres, storage_gb: 20}\n")
	writeTestFile(t, filepath.Join(repo, "staging.yaml"), "# staging\napiVersion: example.com/v1\nkind: DatabaseCluster\nmetadata: {name: orders, namespace: staging}\nspec: {engine: postgres, storage_gb: '${{ DatabaseCluster/production/orders.outputs.size }}'}\n")
	base := "dataDir: " + t.TempDir() + "\nsources: [{name: s, dir: {path: " + repo + "}}]\nactions: [{name: provision, type: exec, config: {command: [/bin/true]}}]\n"
	cfgPath := filepath.Join(t.TempDir(), "trueup.yaml")
	writeTestFile(t, cfgPath, base)
	_, stderr, err := runCLI(t, "validate", repo, "--config", cfgPath)
	const want = "staging.yaml:2: spec: reference to DatabaseCluster/production/orders outputs size crosses from namespace staging to production without a grant: the controller config's references.expose needs {namespace: production, kinds: [DatabaseCluster], outputs: [size], to: [{namespace: staging}]}"
	if err == nil || !strings.Contains(stderr, want) {
		t.Fatalf("err %v; stderr lacks %q:\n%s", err, want, stderr)
	}
	writeTestFile(t, cfgPath, base+
		"references:\n  expose:\n    - {namespace: production, kinds: [DatabaseCluster], outputs: [size], to: [{namespace: staging}]}\n")
	if _, stderr, err := runCLI(t, "validate", repo, "--config", cfgPath); err != nil {
		t.Fatalf("granted: %v\n%s", err, stderr)
	}
}
