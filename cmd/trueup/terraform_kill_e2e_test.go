//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions/proc"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// procInfo is a running process as /proc shows it.
type procInfo struct {
	pid     int
	cwd     string
	cmdline string
}

// processesUnder lists the processes whose working directory is under dir or whose command
// line holds marker.
func processesUnder(dir, marker string) []procInfo {
	ents, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		raw, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmdline := string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '}))
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); bytes.Contains(stat, []byte(") Z ")) {
			continue // a zombie runs nothing
		}
		if (cwd != "" && strings.HasPrefix(cwd, dir)) || (marker != "" && strings.Contains(cmdline, marker)) {
			out = append(out, procInfo{pid: pid, cwd: cwd, cmdline: cmdline})
		}
	}
	return out
}

// TestTerraformDiesWithTrueup: trueup killed with SIGKILL while terraform applies leaves no
// terraform process running, nor (where PID namespaces contain the run) anything terraform
// started: here a local-exec provisioner's shell and its sleep.
func TestTerraformDiesWithTrueup(t *testing.T) {
	tf := terraformOnPath(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	const marker = "987.625" // the sleep's argument: no other process has it
	writeTestFile(t, filepath.Join(dir, "modules", "slow", "main.tf"), fmt.Sprintf(`variable "size" { type = number }
resource "terraform_data" "slow" {
  input = var.size
  provisioner "local-exec" { command = "touch %s; sleep %s" }
}
`, started, marker))
	offlineTerraformRC(t, dir)
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), manifesttest.TypeDoc("Slow", "db.example.com", "{type: object, properties: {size: {type: integer}}}", "tf"))
	writeTestFile(t, filepath.Join(repo, "slow.yaml"), "apiVersion: db.example.com/v1\nkind: Slow\nmetadata: {name: slow, namespace: prod}\nspec: {size: 1}\n")
	work := filepath.Join(dir, "work")
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: "%s"}
sources:
  - name: local
    dir: {path: %s, interval: 1s}
actions:
  - name: tf
    type: terraform
    config: {module: modules/slow, binary: %s, workDir: %s, env: {TF_CLI_CONFIG_FILE: %s}}
`, freeAddr(t), repo, tf, work, filepath.Join(dir, "terraformrc")))

	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_DATABASE_URL="+pgtest.NewDatabase(t, store.MigrateURL))
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// If this test process dies, serve (and so its terraform run) dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, p := range processesUnder(work, marker) { // whatever a failed run left
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the apply's provisioner did not start\n%s", logs.String())
		}
	}
	running := processesUnder(work, marker)
	var terraform bool
	for _, p := range running {
		terraform = terraform || strings.HasPrefix(p.cmdline, tf+" ")
	}
	if !terraform {
		t.Fatalf("no terraform process while the apply runs: %+v", running)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	namespaced := proc.NewTree().Namespaced()
	var left []procInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		for _, p := range processesUnder(work, marker) {
			if namespaced || strings.HasPrefix(p.cmdline, tf+" ") {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Fatalf("still running 10s after trueup was killed (%d processes of the apply before): %+v", len(running), left)
	}
	if !namespaced {
		t.Logf("no PID namespaces here: only terraform itself is checked; %+v", processesUnder(work, marker))
	}
}
