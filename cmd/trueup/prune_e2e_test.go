package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// TestPruneLastResourceEndToEnd runs `trueup serve` with a folder source of one resource
// and removes its manifest: without prune.allowEmpty the deletion is refused, and the
// refusal is visible (PruneSkipped on the API, get sources, describe source, the dashboard;
// `sync --wait` exits 1). A reload whose prune: block has an unknown key is refused (422,
// naming the key and its line); one that sets allowEmpty is applied, and the source's
// restart deletes the resource.
func TestPruneLastResourceEndToEnd(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), manifesttest.TypeDoc("Thing", "things.example.com", "{type: object}", "run"))
	writeTestFile(t, filepath.Join(repo, "only.yaml"), thing("Thing", "things.example.com", "only"))
	script := filepath.Join(dir, "run.sh")
	writeTestFile(t, script, "#!/bin/sh\ncat >/dev/null\necho '{\"done\": true}'\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfgPath := filepath.Join(dir, "trueup.yaml")
	config := func(prune string) string {
		return fmt.Sprintf("server: {listen: %q}\ndataDir: %s\nreconcile: {backoff: {initial: 100ms, max: 500ms}}\n"+
			"sources:\n  - name: p\n    dir: {path: %s, interval: 1h}\n    prune: %s\n"+
			"actions:\n  - name: run\n    type: exec\n    config: {command: [%q]}\n", addr, filepath.Join(dir, "data"), repo, prune, script)
	}
	writeTestFile(t, cfgPath, config("{maxFraction: 0.5}"))

	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_DATABASE_URL="+pgtest.NewDatabase(t, store.MigrateURL))
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("serve did not stop")
		}
	}()
	base := "http://" + addr
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			select {
			case err := <-exited:
				t.Fatalf("serve exited while waiting for %s: %v\n%s", what, err, logs.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\n%s", what, logs.String())
			}
		}
	}
	resource := func() (phase string, code int) {
		resp, err := http.Get(base + "/api/v1/resources/default/Thing/only")
		if err != nil {
			return "", 0
		}
		defer resp.Body.Close()
		var r struct{ Status struct{ Phase string } }
		_ = json.NewDecoder(resp.Body).Decode(&r)
		return r.Status.Phase, resp.StatusCode
	}
	source := func() wire.Source {
		var src wire.Source
		if err := json.Unmarshal([]byte(httpGetBody(t, base+"/api/v1/sources/p")), &src); err != nil {
			t.Fatal(err)
		}
		return src
	}
	// The CLI is the real binary too: its exit status is what scripts see.
	cli := func(args ...string) (string, int) {
		t.Helper()
		return cliProcess(t, base, args...)
	}
	reload := func() (int, string) {
		resp, err := http.Post(base+"/api/v1/admin/reload", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	waitFor("only Ready", func() bool { p, _ := resource(); return p == "Ready" })

	// The last manifest goes: refused, and visible.
	if err := os.Remove(filepath.Join(repo, "only.yaml")); err != nil {
		t.Fatal(err)
	}
	out, code := cli("sync", "p", "--wait")
	if code != 1 || !strings.Contains(out, "Ready=True") || !strings.Contains(out, "PruneSkipped=True (EmptyRender)") ||
		!strings.Contains(out, "not deleting the source's 1 resource") {
		t.Errorf("sync --wait of the empty revision: exit %d\n%s", code, out)
	}
	if c, ok := status.Get(source().Conditions, status.PruneSkipped); !ok || c.Status != status.True || c.Reason != "EmptyRender" {
		t.Errorf("the API's source conditions: %+v", source().Conditions)
	}
	if p, code := resource(); code != 200 || p != "Ready" {
		t.Errorf("the resource after a refused prune: %d %s, want kept and Ready", code, p)
	}
	if out, code := cli("get", "sources"); code != 0 || !strings.Contains(out, "PruneSkipped (EmptyRender)") {
		t.Errorf("get sources: exit %d\n%s", code, out)
	}
	if out, code := cli("describe", "source", "p"); code != 0 || !strings.Contains(out, "allowEmpty false") ||
		!strings.Contains(out, "PruneSkipped") || !strings.Contains(out, "Resources:       1 (Ready 1)") {
		t.Errorf("describe source p: exit %d\n%s", code, out)
	}
	if page := httpGetBody(t, base+"/sources/p"); !strings.Contains(page, "Prune skipped: EmptyRender") {
		t.Error("the dashboard's source page does not show the refused prune")
	}

	// A misspelt key inside prune: is refused, with its line.
	writeTestFile(t, cfgPath, config("{allowEmpti: true}"))
	if code, body := reload(); code != 422 || !strings.Contains(body, "line 7: field allowEmpti not found in Prune") {
		t.Errorf("reload with prune.allowEmpti: %d %s", code, body)
	}

	// allowEmpty: the source restarts and its empty revision deletes the resource.
	writeTestFile(t, cfgPath, config("{allowEmpty: true}"))
	if code, body := reload(); code != 200 {
		t.Fatalf("reload with prune.allowEmpty: %d %s", code, body)
	}
	waitFor("only deleted", func() bool { _, code := resource(); return code == 404 })
	conds := source().Conditions
	if _, ok := status.Get(conds, status.PruneSkipped); ok {
		t.Errorf("PruneSkipped kept after the deletion: %+v", conds)
	}
	if c, ok := status.Get(conds, "Pruned"); !ok || c.Status != status.True {
		t.Errorf("no Pruned=True after the deletion: %+v", conds)
	}
	if out, code := cli("sync", "p", "--wait"); code != 0 || strings.Contains(out, "PruneSkipped") {
		t.Errorf("sync --wait after the deletion: exit %d\n%s", code, out)
	}
}
