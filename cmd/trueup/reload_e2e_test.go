package main

import (
	"context"
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

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestReloadEndToEnd runs `trueup serve` as a process and reloads its config: SIGHUP adds a
// source that syncs while an unchanged one is neither restarted nor synced, and a running Git
// source's fetch and preview folders in progress are left alone; a changed source restarts
// and syncs; a webhook-secret-only change restarts nothing; SIGHUP racing an API reload is
// served after it; a source is removed (its syncer stops, its resources stay); an invalid
// config is refused (logged, 422 from the API) and the old one keeps running with /readyz
// 200; an action instance changed while one of its calls runs lets that call finish with the
// old instance, and the next call uses the new one; a restart-only dataDir change is not
// used by a source the same reload adds, and stays listed on the replica's row.
func TestReloadEndToEnd(t *testing.T) {
	f := newReloadFixture(t)
	dir, repoA, repoB, gate, started, addr, cfgPath, config := f.dir, f.repoA, f.repoB, f.gate, f.started, f.addr, f.cfgPath, f.config
	writeTestFile(t, cfgPath, config([]string{"a", "g"}, "v1"))

	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath)
	const secret = "gopher://s3cr3t-host-91/x" // quoted by the source's error: scrubbed
	cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_DATABASE_URL="+dbURL, "RELOAD_SECRET="+secret, "RELOAD_OLD=s3cr3t-old-77")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		select {
		case <-exited:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("serve exited: %v\n%s", err, logs.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("serve did not stop")
		}
	}()
	conn := connect(t, dbURL)

	type resource struct {
		Status struct {
			Phase   string
			Outputs map[string]any
		}
	}
	get := func(kind, name string) (resource, bool) {
		resp, err := http.Get("http://" + addr + "/api/v1/resources/default/" + kind + "/" + name)
		if err != nil {
			return resource{}, false
		}
		defer resp.Body.Close()
		var r resource
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&r) != nil {
			return resource{}, false
		}
		return r, true
	}
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
	ready := func(kind, name, version string) func() bool {
		return func() bool {
			r, ok := get(kind, name)
			return ok && r.Status.Phase == "Ready" && r.Status.Outputs["version"] == version
		}
	}
	hup := func() {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	reloads := func() int {
		return strings.Count(logs.String(), "config reloaded") + strings.Count(logs.String(), "config reload refused")
	}
	leaseHeld := func(source string) bool {
		var n int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM leases WHERE name = $1 AND expires_at > now()`, "source:"+source).Scan(&n)
		return n > 0
	}
	postReload := func() (int, map[string]any) {
		t.Helper()
		resp, err := http.Post("http://"+addr+"/api/v1/admin/reload", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("reload answer %d: %s", resp.StatusCode, raw)
		}
		return resp.StatusCode, out
	}

	waitFor("a1 Ready", ready("Thing", "a1", "v1"))
	waitFor("g1 Ready", ready("Gadget", "g1", "v1"))
	// A fetch and a preview of the running Git source in progress: no reload may touch them.
	gDir := filepath.Join(f.dataDir, "git", "g")
	inFlight := []string{"tmp-in-flight", "ref-preview"}
	for _, name := range inFlight {
		if err := os.MkdirAll(filepath.Join(gDir, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	checkInFlight := func(when string) {
		t.Helper()
		for _, name := range inFlight {
			if _, err := os.Stat(filepath.Join(gDir, name)); err != nil {
				t.Errorf("%s: the running Git source's %s: %v", when, name, err)
			}
		}
	}

	// Add source b; a, unchanged, is neither restarted nor synced again.
	aLines := func() (leases, syncs int) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(l, " source=a ") {
				continue
			}
			if strings.Contains(l, "holding the source's lease") {
				leases++
			}
			if strings.Contains(l, "applied revision") || strings.Contains(l, "no change") {
				syncs++
			}
		}
		return leases, syncs
	}
	leasesBefore, syncsBefore := aLines()
	writeTestFile(t, cfgPath, config([]string{"a", "g", "b"}, "v1"))
	n := reloads()
	hup()
	waitFor("b1 Ready (source b added by SIGHUP)", ready("Widget", "b1", "v1"))
	checkInFlight("after a reload")
	if reloads() != n+1 || !strings.Contains(logs.String(), "sources_added=[b]") {
		t.Errorf("one reload adding b expected:\n%s", logs.String())
	}
	if leases, syncs := aLines(); leasesBefore != 1 || leases != leasesBefore || syncs != syncsBefore {
		t.Errorf("unchanged source a: lease taken %d→%d times, synced %d→%d times across the reload", leasesBefore, leases, syncsBefore, syncs)
	}

	// Change source a's entry: it restarts (takes its lease again, syncs) and keeps syncing.
	f.aInterval = "2h"
	writeTestFile(t, cfgPath, config([]string{"a", "g", "b"}, "v1"))
	leasesBefore, _ = aLines()
	if code, body := postReload(); code != 200 || fmt.Sprint(body["sources"].(map[string]any)["changed"]) != "[a]" {
		t.Errorf("API reload changing source a: %d %v", code, body)
	}
	waitFor("source a restarted", func() bool { leases, _ := aLines(); return leases == leasesBefore+1 })
	writeTestFile(t, filepath.Join(repoA, "a1b.yaml"), thing("Thing", "things.example.com", "a1b"))
	waitFor("a1b Ready (changed source a syncs)", ready("Thing", "a1b", "v1"))

	// Only a's webhook secret changes: applied without restarting it.
	f.aWebhook = "hook-secret-1234"
	writeTestFile(t, cfgPath, config([]string{"a", "g", "b"}, "v1"))
	leasesBefore, _ = aLines()
	if code, body := postReload(); code != 200 || fmt.Sprint(body["sources"].(map[string]any)["changed"]) != "[a]" {
		t.Errorf("API reload changing a's webhook secret: %d %v", code, body)
	}

	// SIGHUP racing an API reload: both are served, one after the other.
	f.aInterval = "3h"
	writeTestFile(t, cfgPath, config([]string{"a", "g", "b"}, "v1"))
	n = reloads()
	raced := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+addr+"/api/v1/admin/reload", "application/json", nil)
		if err != nil {
			raced <- 0
			return
		}
		resp.Body.Close()
		raced <- resp.StatusCode
	}()
	hup()
	if code := <-raced; code != 200 {
		t.Errorf("the API reload racing SIGHUP answered %d", code)
	}
	waitFor("both racing reloads done", func() bool { return reloads() == n+2 })
	waitFor("source a restarted by the racing change", func() bool { leases, _ := aLines(); return leases > leasesBefore })
	writeTestFile(t, filepath.Join(repoA, "a1c.yaml"), thing("Thing", "things.example.com", "a1c"))
	waitFor("a1c Ready after the racing reloads", ready("Thing", "a1c", "v1"))
	if leases, _ := aLines(); leases != leasesBefore+1 {
		t.Errorf("source a took its lease %d times since the webhook-only reload, want 1 (the racing change)", leases-leasesBefore)
	}
	checkInFlight("after the racing reloads")

	// Remove source a: its syncer stops and gives its lease up; its resources stay.
	writeTestFile(t, cfgPath, config([]string{"b"}, "v1"))
	hup()
	waitFor("source a's lease released", func() bool { return !leaseHeld("a") })
	writeTestFile(t, filepath.Join(repoA, "a2.yaml"), thing("Thing", "things.example.com", "a2"))
	writeTestFile(t, filepath.Join(repoB, "b2.yaml"), thing("Widget", "widgets.example.com", "b2"))
	waitFor("b2 Ready (source b still syncs)", ready("Widget", "b2", "v1"))
	if _, ok := get("Thing", "a2"); ok {
		t.Error("a resource added to removed source a was synced")
	}
	if r, ok := get("Thing", "a1"); !ok || r.Status.Phase != "Ready" {
		t.Errorf("a1 of removed source a: %+v %v, want kept and Ready", r, ok)
	}

	// An invalid config is refused; the old one keeps running.
	writeTestFile(t, cfgPath, config([]string{"b"}, "v1")+"  - name: broken\n    type: no-such-kind\n")
	n = reloads()
	hup()
	waitFor("the refused reload logged", func() bool { return reloads() == n+1 })
	if !strings.Contains(logs.String(), "config reload refused") || !strings.Contains(logs.String(), "no-such-kind") {
		t.Errorf("the refusal and its error are not logged:\n%s", logs.String())
	}
	writeTestFile(t, filepath.Join(repoB, "b3.yaml"), thing("Widget", "widgets.example.com", "b3"))
	waitFor("b3 Ready after a refused reload", ready("Widget", "b3", "v1"))
	if resp, err := http.Get("http://" + addr + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/readyz after a refused reload: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// Every source is built too: a config with one that cannot be is refused through the API.
	// One error quotes a ${VAR} of this config, the other a literal that was a ${VAR} of the
	// configs loaded before (this one no longer names it): both are scrubbed.
	badSource := "sources:\n  - name: g\n    git: {url: \"${RELOAD_SECRET}\"}\n  - name: h\n    git: {url: \"gopher://s3cr3t-old-77/y\"}\n"
	withoutOld := strings.Replace(config([]string{"b"}, "v1"), `, "${RELOAD_OLD}"`, "", 1)
	writeTestFile(t, cfgPath, strings.Replace(withoutOld, "sources:\n", badSource, 1))
	code, body := postReload()
	if errs, _ := body["errors"].([]any); code != 422 || body["ok"] != false || len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), "unsupported protocol") {
		t.Errorf("API reload of a config with a bad source: %d %v", code, body)
	}
	if strings.Contains(fmt.Sprint(body), "s3cr3t") || strings.Contains(logs.String(), "s3cr3t") {
		t.Errorf("a ${VAR} value of the refused or of an earlier config leaked: %v\n%s", body, logs.String())
	}
	if page := httpGetBody(t, "http://"+addr+"/"); !strings.Contains(page, "Config reload refused") || !strings.Contains(page, `cond-bad">reload refused`) {
		t.Error("the overview does not show the refused reload (banner and replicas table)")
	}
	var replicas struct {
		Items []struct {
			Config struct {
				Hash     string     `json:"hash"`
				LoadedAt *time.Time `json:"loadedAt"`
				Error    string     `json:"error"`
			} `json:"config"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(httpGetBody(t, "http://"+addr+"/api/v1/replicas")), &replicas); err != nil || len(replicas.Items) != 1 {
		t.Fatalf("GET /api/v1/replicas: %v %+v", err, replicas)
	}
	if c := replicas.Items[0].Config; c.Hash == "" || c.LoadedAt == nil || !strings.Contains(c.Error, "unsupported protocol") || strings.Contains(c.Error, "s3cr3t") {
		t.Errorf("GET /api/v1/replicas: config status %+v, want the running hash and the refusal", c)
	}

	// An action instance changed while its call runs: the call finishes with v1, the next
	// call is v2's.
	writeTestFile(t, filepath.Join(repoB, "slow.yaml"), thing("Widget", "widgets.example.com", "slow"))
	waitFor("the slow call to start", func() bool { _, err := os.Stat(started); return err == nil })
	// With it, the notification rules change (the sender restarts) and a restart-only block.
	writeTestFile(t, cfgPath, config([]string{"b"}, "v2")+`notifications:
  providers:
    - {name: hook, type: webhook, url: "http://127.0.0.1:9/never"}
  rules:
    - {name: stalled, providers: [hook], events: [Stalled]}
log: {level: debug}
`)
	code, body = postReload()
	if acts, _ := body["actions"].(map[string]any); code != 200 || body["ok"] != true || fmt.Sprint(acts["changed"]) != "[run]" ||
		body["notifications"] != true || fmt.Sprint(body["restartRequired"]) != "[log]" {
		t.Errorf("API reload changing action run, notifications and log: %d %v", code, body)
	}
	// The line may be written just after the answer is sent.
	waitFor("the restart-only change logged", func() bool {
		return strings.Contains(logs.String(), "log changed: takes effect at the next restart")
	})
	writeTestFile(t, filepath.Join(repoB, "b4.yaml"), thing("Widget", "widgets.example.com", "b4"))
	waitFor("b4 Ready with the new instance", ready("Widget", "b4", "v2"))
	if r, _ := get("Widget", "slow"); r.Status.Phase == "Ready" {
		t.Errorf("the slow call finished before its gate opened: %+v", r)
	}
	writeTestFile(t, gate, "")
	waitFor("slow Ready with the instance it started with", ready("Widget", "slow", "v1"))
	if page := httpGetBody(t, "http://"+addr+"/"); strings.Contains(page, `id="config-refused"`) || !strings.Contains(page, ">"+body["hash"].(string)+"</code>") ||
		!strings.Contains(page, "restart required: log") {
		t.Errorf("the overview still shows a refused reload after one was applied, or not the config's hash %v, or not the block waiting for a restart", body["hash"])
	}
	metrics := httpGetBody(t, "http://"+addr+"/metrics")
	for _, want := range []string{`trueup_config_reloads_total{result="success"} 7`, `trueup_config_reloads_total{result="failure"} 2`,
		"trueup_config_last_reload_success_timestamp_seconds "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	// A restart-only block is not half-applied: with dataDir changed in the file, a source
	// added by the same reload keeps its mirror under the dataDir running.
	oldDataDir := f.dataDir
	f.dataDir = filepath.Join(dir, "data2")
	writeTestFile(t, cfgPath, config([]string{"b", "g2"}, "v2"))
	code, body = postReload()
	if code != 200 || fmt.Sprint(body["restartRequired"]) != "[dataDir]" || fmt.Sprint(body["sources"].(map[string]any)["added"]) != "[g2]" {
		t.Errorf("API reload adding g2 and changing dataDir: %d %v", code, body)
	}
	waitFor("g2's mirror under the running dataDir", func() bool {
		_, err := os.Lstat(filepath.Join(oldDataDir, "git", "g2", "mirror"))
		return err == nil
	})
	if _, err := os.Stat(f.dataDir); !os.IsNotExist(err) {
		t.Errorf("the new dataDir, not in effect, was used: %v", err)
	}
	if !strings.Contains(httpGetBody(t, "http://"+addr+"/api/v1/replicas"), "restart required: dataDir") {
		t.Error("GET /api/v1/replicas does not show the block waiting for a restart")
	}
}
