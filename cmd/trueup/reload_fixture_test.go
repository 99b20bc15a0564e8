package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
)

// reloadFixture is TestReloadEndToEnd's world: dir sources a and b, Git source g, an exec
// action whose script prints its version and, for a resource named slow, waits for the gate
// file (writing started first), and the config serve reads.
type reloadFixture struct {
	dir, repoA, repoB, repoG, gate, started, script string
	addr, cfgPath, dataDir                          string
	// Source a polls hourly (it is watched anyway): a sync of a in the log is a restart's
	// first sync or a file's change, never a poll of a slow run.
	aInterval, aWebhook string
}

func newReloadFixture(t *testing.T) *reloadFixture {
	dir := t.TempDir()
	f := &reloadFixture{dir: dir, repoA: filepath.Join(dir, "a"), repoB: filepath.Join(dir, "b"), repoG: filepath.Join(dir, "g"),
		gate: filepath.Join(dir, "gate"), started: filepath.Join(dir, "started"), script: filepath.Join(dir, "run.sh"),
		addr: freeAddr(t), cfgPath: filepath.Join(dir, "trueup.yaml"), dataDir: filepath.Join(dir, "data"), aInterval: "1h"}
	writeTestFile(t, filepath.Join(f.repoA, "types.yaml"), manifesttest.TypeDoc("Thing", "things.example.com", "{type: object}", "run"))
	writeTestFile(t, filepath.Join(f.repoA, "a1.yaml"), thing("Thing", "things.example.com", "a1"))
	writeTestFile(t, filepath.Join(f.repoB, "types.yaml"), manifesttest.TypeDoc("Widget", "widgets.example.com", "{type: object}", "run"))
	writeTestFile(t, filepath.Join(f.repoB, "b1.yaml"), thing("Widget", "widgets.example.com", "b1"))
	// Prints its argument (the instance's version) as an output; "slow" waits for the gate.
	writeTestFile(t, f.script, `#!/bin/sh
cat >/dev/null
if [ "$TRUEUP_NAME" = slow ]; then
  : > "`+f.started+`"
  i=0
  while [ ! -e "`+f.gate+`" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
fi
printf '{"done": true, "outputs": {"version": "%s"}}\n' "$1"
`)
	if err := os.Chmod(f.script, 0o755); err != nil {
		t.Fatal(err)
	}
	// Source g is a Git repository: a reload must leave its folder's work in progress alone.
	writeTestFile(t, filepath.Join(f.repoG, "types.yaml"), manifesttest.TypeDoc("Gadget", "gadgets.example.com", "{type: object}", "run"))
	writeTestFile(t, filepath.Join(f.repoG, "g1.yaml"), thing("Gadget", "gadgets.example.com", "g1"))
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "first"}} {
		git := exec.Command("git", append([]string{"-C", f.repoG, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		git.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return f
}

// config is the controller config with sources (a, b, g, g2) and the action's version.
func (f *reloadFixture) config(sources []string, version string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server: {listen: %q}\ndataDir: %s\nreconcile: {workers: 3, backoff: {initial: 100ms, max: 500ms}}\nsources:\n", f.addr, f.dataDir)
	for _, s := range sources {
		switch s {
		case "a":
			fmt.Fprintf(&b, "  - name: a\n    dir: {path: %s, interval: %s}\n", filepath.Join(f.dir, s), f.aInterval)
			if f.aWebhook != "" {
				fmt.Fprintf(&b, "    webhook: {secret: %s}\n", f.aWebhook)
			}
		case "g":
			fmt.Fprintf(&b, "  - name: g\n    git: {url: %s, interval: 1h}\n", f.repoG)
		case "g2": // its folder is what matters, not its (missing) manifests
			fmt.Fprintf(&b, "  - name: g2\n    git: {url: %s, path: none, interval: 1h}\n", f.repoG)
		default:
			fmt.Fprintf(&b, "  - name: %s\n    dir: {path: %s}\n", s, filepath.Join(f.dir, s))
		}
	}
	// ${RELOAD_OLD}: a secret of the configs loaded so far (see the refused config below).
	fmt.Fprintf(&b, "actions:\n  - name: run\n    type: exec\n    config: {command: [%q, %q, \"${RELOAD_OLD}\"]}\n", f.script, version)
	return b.String()
}

func httpGetBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func thing(kind, group, name string) string {
	return fmt.Sprintf("apiVersion: %s/v1\nkind: %s\nmetadata: {name: %s, namespace: default}\nspec: {}\n", group, kind, name)
}
