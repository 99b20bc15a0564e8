//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestSecondSignalEndsServe: while serve drains after a first SIGINT or SIGTERM, and the
// drain waits (an exec action ignoring SIGTERM, an HTTP request half sent), a second signal
// ends the process at once, by that signal's default action, as `trueup serve --help` says
// ("the first drains, the second exits"); the action's command dies with it.
func TestSecondSignalEndsServe(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { secondSignal(t, sig) })
	}
}

func secondSignal(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), manifesttest.TypeDoc("Thing", "things.example.com", "{type: object}", "run"))
	writeTestFile(t, filepath.Join(repo, "stuck.yaml"), thing("Thing", "things.example.com", "stuck"))
	started := filepath.Join(dir, "started")
	script := filepath.Join(dir, "stuck.sh")
	// Ignores SIGTERM (its sleeps inherit that) and never answers: only SIGKILL ends it.
	writeTestFile(t, script, "#!/bin/sh\ntrap '' TERM\n: > "+started+"\nwhile :; do sleep 1; done\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: %q}
dataDir: %s
sources:
  - name: local
    dir: {path: %s}
actions:
  - name: run
    type: exec
    config: {command: [%q]}
`, addr, filepath.Join(dir, "data"), repo, script))

	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_DATABASE_URL="+pgtest.NewDatabase(t, store.MigrateURL))
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.WaitDelay = 5 * time.Second // output a leftover child holds open is not waited for longer
	// If this test process dies, serve (and so the action's command) dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once serve is reaped; waitErr is then set
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	// Registered after the database's cleanup, so it runs first: serve is gone (reaped, and
	// whatever it left killed) before the database is dropped.
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Errorf("serve not reaped 30s after SIGKILL")
			}
		}
		for _, p := range processesUnder(dir, script) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	waitUntil(t, exited, logs, "the action's command to start", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	// A request whose header never ends: the server's shutdown waits for it.
	var conn net.Conn
	waitUntil(t, exited, logs, "a connection to the server", func() bool {
		var err error
		conn, err = net.Dial("tcp", addr)
		return err == nil
	})
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: trueup\r\n")); err != nil {
		t.Fatal(err)
	}

	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, exited, logs, "the drain to begin", func() bool { return strings.Contains(logs.String(), "shutting down") })
	// The second signal. main restores the signals' default action on a goroutine of its own
	// once the first came; a signal that arrives before that is taken for the first again, so
	// it is sent anew until serve ends (the drain takes seconds: it waits for the action's
	// command, which only its SIGKILL 2 s after SIGTERM ends, and for the half-sent request).
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for sent := 0; ; {
		if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		if sent++; sent > 1 {
			t.Logf("second %v sent again (%d)", sig, sent)
		}
		select {
		case <-tick.C:
			continue
		case <-deadline:
			t.Fatalf("serve still runs a minute after the second %v\n%s", sig, logs.String())
		case <-exited:
		}
		break
	}
	var ee *exec.ExitError
	if err := waitErr; !errors.As(err, &ee) {
		t.Fatalf("serve exited with %v after the second %v, want death by the signal\n%s", err, sig, logs.String())
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
		t.Fatalf("serve ended with %v after the second %v, want death by %v (a drain that ran to its end exits 0)\n%s", ee, sig, sig, logs.String())
	}
	var left []procInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = processesUnder(dir, script); len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("the action's command outlived serve: %+v", left)
	}
}

// waitUntil polls cond for up to a minute; it fails the test if serve exits or the minute
// passes first.
func waitUntil(t *testing.T, exited <-chan struct{}, logs *syncBuffer, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("serve exited while waiting for %s\n%s", what, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s\n%s", what, logs.String())
		}
	}
}
