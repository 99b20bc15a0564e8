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

// TestSmoke starts what `make run` starts (the built binary with examples/trueup.yaml, on a
// free port and a fresh data dir), waits until every example resource is Ready, prints them,
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
			Phase   string
			Message string
			Outputs map[string]any
		}
	}
	var items []item
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("example resources not Ready within 60 s: %+v\n--- logs ---\n%s", items, logs.String())
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
		ready := len(items) >= 5
		for _, it := range items {
			ready = ready && it.Status.Phase == "Ready"
		}
		if ready {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Printf("%-12s %-16s %-14s %-8s %s\n", "NAMESPACE", "KIND", "NAME", "PHASE", "ENDPOINT")
	for _, it := range items {
		fmt.Printf("%-12s %-16s %-14s %-8s %v\n", it.Metadata.Namespace, it.Kind, it.Metadata.Name, it.Status.Phase, it.Status.Outputs["endpoint"])
	}
	resp, err := http.Get("http://" + addr + "/")
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
