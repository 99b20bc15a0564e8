//go:build smoke

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The example repository's resources (exampleResources, which TestValidateExamples checks),
// one of which fails on purpose (exit 78 of examples/scripts/provision.sh, so Failed and
// Stalled, never retried).
const (
	smokeBroken        = "App/production/broken-on-purpose"
	smokeBrokenMessage = "exit status 78: App/production/broken-on-purpose fails on purpose: the demo script refuses every resource named broken-on-purpose"
)

// TestSmoke starts what `make run` starts (the built binary with examples/trueup.yaml, on a
// free port and a fresh data dir), waits until every example resource is Ready but the one
// that fails on purpose, which must be Failed with the demo script's message, prints them,
// and stops everything with SIGTERM.
func TestSmoke(t *testing.T) {
	bin := os.Getenv("TRUEUP_SMOKE_BIN")
	if bin == "" {
		t.Fatal("TRUEUP_SMOKE_BIN is not set: run `make smoke`")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dataDir, err := os.MkdirTemp("", "trueup-smoke-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dataDir)
	// MkdirTemp makes the folder 0700; as root, the private PostgreSQL's user must traverse
	// it, and trueup refuses to widen a folder it did not create. It is the test's to open.
	if err := os.Chmod(dataDir, 0o711); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "serve", "--config", "../../examples/trueup.yaml", "--listen", addr, "--data-dir", dataDir)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()

	type item struct {
		Kind     string `json:"kind"`
		Metadata struct{ Name, Namespace string }
		Status   struct {
			Phase      string
			Message    string
			Outputs    map[string]any
			Conditions []struct{ Type, Status, Reason string }
		}
	}
	// stalled: the action refused the resource for good (Stalled=True, ActionRejected), which
	// a retryable failure, also Failed, is not.
	stalled := func(it item) bool {
		for _, c := range it.Status.Conditions {
			if c.Type == "Stalled" {
				return c.Status == "True" && c.Reason == "ActionRejected"
			}
		}
		return false
	}
	var items []item
	// settled: every example resource is there, the one that fails on purpose is Failed and
	// Stalled with the demo script's message, and every other one is Ready (the dependency
	// chain included).
	settled := func(items []item) bool {
		if len(items) < exampleResources {
			return false
		}
		for _, it := range items {
			id := it.Kind + "/" + it.Metadata.Namespace + "/" + it.Metadata.Name
			if id == smokeBroken {
				if it.Status.Phase != "Failed" || !stalled(it) || !strings.Contains(it.Status.Message, smokeBrokenMessage) {
					return false
				}
			} else if it.Status.Phase != "Ready" {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("example resources not settled (all Ready but %s Failed and Stalled) within 60 s: %+v\n--- logs ---\n%s", smokeBroken, items, logs.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("trueup exited early: %v\n%s", err, logs.String())
		default:
		}
		items = nil
		if resp, err := http.Get("http://" + addr + "/api/v1/resources"); err == nil {
			var page struct{ Items []item }
			_ = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			items = page.Items
		}
		if settled(items) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(items) != exampleResources {
		t.Errorf("%d example resources, want %d: %+v", len(items), exampleResources, items)
	}
	fmt.Printf("%-12s %-16s %-18s %-8s %s\n", "NAMESPACE", "KIND", "NAME", "PHASE", "ENDPOINT OR MESSAGE")
	for _, it := range items {
		shown := it.Status.Outputs["endpoint"]
		if it.Status.Phase != "Ready" {
			shown = it.Status.Message
		}
		fmt.Printf("%-12s %-16s %-18s %-8s %v\n", it.Metadata.Namespace, it.Kind, it.Metadata.Name, it.Status.Phase, shown)
	}
	// Outputs flow along the chain: the app's action got the database's endpoint output.
	var checkout struct {
		Status struct{ ResolvedSpec map[string]any }
	}
	resp, err := http.Get("http://" + addr + "/api/v1/resources/production/App/checkout")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&checkout)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("GET App/production/checkout: %s, decoding: %v", resp.Status, err)
	}
	if got, want := checkout.Status.ResolvedSpec["database_url"], "postgres://orders-pg.production.db.example.internal:5432/orders"; got != want {
		t.Errorf("App/production/checkout resolved database_url %v, want %q", got, want)
	}
	resp, err = http.Get("http://" + addr + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("dashboard: %v %v", resp, err)
	}
	resp.Body.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("trueup did not exit cleanly: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("trueup did not stop within 30 s of SIGTERM\n%s", logs.String())
	}
	if out, _ := exec.Command("pgrep", "-f", "postgres -D "+dataDir).Output(); len(out) > 0 {
		t.Errorf("private PostgreSQL still running after shutdown: %s", out)
	}
}
