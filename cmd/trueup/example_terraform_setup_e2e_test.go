package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleTerraformSetup runs examples/terraform/setup.sh where a run can go wrong: it
// never removes a work clone, a failed commit leaves nothing half made that a second run would
// keep, and a signing setup of the user's own does not stop it.
func TestExampleTerraformSetup(t *testing.T) {
	setup, err := filepath.Abs(filepath.Join(exampleTerraform, "setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// run runs setup.sh on dir with the global git config gitconfig, and returns its output
	// and whether it succeeded.
	run := func(dir, gitconfig string) (string, bool) {
		t.Helper()
		cmd := exec.Command(setup, dir)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+gitconfig)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return string(out), err == nil
	}
	entries := func(dir string) []string {
		t.Helper()
		des, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		return names
	}
	tmp := t.TempDir()
	failingHook := filepath.Join(tmp, "hooks", "pre-commit")
	writeTestFile(t, failingHook, "#!/bin/sh\nexit 1\n")
	if err := os.Chmod(failingHook, 0o755); err != nil {
		t.Fatal(err)
	}
	configs := map[string]string{
		"none":    "/dev/null",
		"signing": "[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n",
		"hook":    "[core]\n\thooksPath = " + filepath.Dir(failingHook) + "\n",
	}
	for name, text := range configs {
		if text != "/dev/null" {
			configs[name] = filepath.Join(tmp, name+".gitconfig")
			writeTestFile(t, configs[name], text)
		}
	}

	t.Run("fresh, in a folder with a space, then again", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "my example")
		if out, ok := run(dir, configs["none"]); !ok || !strings.Contains(out, "created "+dir+"/infra.git") {
			t.Fatalf("setup.sh failed:\n%s", out)
		}
		if got := strings.Join(entries(dir), " "); got != "infra.git work" {
			t.Errorf("%s holds %s, want infra.git work", dir, got)
		}
		cmd := exec.Command("git", "-C", filepath.Join(dir, "work"), "remote", "get-url", "origin")
		if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != filepath.Join(dir, "infra.git") {
			t.Errorf("origin of work: %q (%v), want %s", out, err, filepath.Join(dir, "infra.git"))
		}
		if out, ok := run(dir, configs["none"]); !ok || !strings.Contains(out, "kept as it is") {
			t.Errorf("second run:\n%s", out)
		}
	})
	t.Run("a work clone without the bare repository is kept", func(t *testing.T) {
		dir := t.TempDir()
		notes := filepath.Join(dir, "work", "notes.txt")
		writeTestFile(t, notes, "mine")
		out, ok := run(dir, configs["none"])
		if ok || !strings.Contains(out, "setup.sh never removes a work clone") {
			t.Errorf("setup.sh succeeded or did not say why it stops:\n%s", out)
		}
		if data, err := os.ReadFile(notes); err != nil || string(data) != "mine" {
			t.Errorf("work/notes.txt: %q, %v", data, err)
		}
		if got := strings.Join(entries(dir), " "); got != "work" {
			t.Errorf("%s holds %s, want work alone", dir, got)
		}
	})
	t.Run("a failed commit leaves nothing, and the next run creates both", func(t *testing.T) {
		dir := t.TempDir()
		if out, ok := run(dir, configs["hook"]); ok {
			t.Fatalf("setup.sh succeeded with a failing pre-commit hook:\n%s", out)
		}
		if got := entries(dir); len(got) != 0 {
			t.Errorf("a failed setup.sh left %v", got)
		}
		if out, ok := run(dir, configs["none"]); !ok || !strings.Contains(out, "created ") {
			t.Errorf("setup.sh after a failed run:\n%s", out)
		}
	})
	t.Run("commit.gpgsign of the user's own", func(t *testing.T) {
		if out, ok := run(t.TempDir(), configs["signing"]); !ok {
			t.Errorf("setup.sh failed with commit.gpgsign=true:\n%s", out)
		}
	})
}

// TestExampleTerraformDataDirQuoted runs .ci/run-data-dir.sh as make example-terraform does:
// a DATA_DIR with a space reaches the command as one argument.
func TestExampleTerraformDataDirQuoted(t *testing.T) {
	cmd := exec.Command("../../.ci/run-data-dir.sh", "printf", "[%s]\n", "serve")
	cmd.Env = append(os.Environ(), "DATA_DIR=/var/lib/my trueup", "RUN_NAME=make example-terraform", "DEFAULT_DIR=.trueup/example-terraform/data")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run-data-dir.sh: %v\n%s", err, stderr.String())
	}
	if got, want := stdout.String(), "[serve]\n[--data-dir]\n[/var/lib/my trueup]\n"; got != want {
		t.Errorf("the command got the arguments\n%s\nwant\n%s", got, want)
	}
	if got, want := stderr.String(), "make example-terraform: data (database, Git cache) in /var/lib/my trueup\n"; got != want {
		t.Errorf("run-data-dir.sh said %q, want %q", got, want)
	}
}
