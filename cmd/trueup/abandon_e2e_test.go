package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestAbandonEndToEnd: a resource whose action's delete always fails stays Deleting for ever
// once its manifest is removed; `trueup delete NS/KIND/NAME --abandon --reason` by an
// operator of its namespace removes it without calling the action, and its history and events
// name the operator and the reason. A viewer and an operator of another namespace are refused.
func TestAbandonEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	// Reconcile succeeds; delete always fails.
	writeTestFile(t, script, "#!/bin/sh\ncat >/dev/null\nif [ \"$TRUEUP_OPERATION\" = delete ]; then echo 'the job service is gone' >&2; exit 1; fi\nexit 0\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), manifesttest.TypeDoc("Job", "jobs.example.com", "{type: object}", "run"))
	job := func(name string) string {
		return fmt.Sprintf("apiVersion: jobs.example.com/v1\nkind: Job\nmetadata: {name: %s, namespace: prod}\nspec: {}\n", name)
	}
	writeTestFile(t, filepath.Join(repo, "stuck.yaml"), job("stuck"))
	writeTestFile(t, filepath.Join(repo, "keep.yaml"), job("keep"))
	oncall, oncallLine := createToken(t, "oncall", "--role", "operator", "-n", "prod")
	viewer, viewerLine := createToken(t, "reader", "--role", "viewer", "-n", "prod")
	other, otherLine := createToken(t, "staging-bot", "--role", "operator", "-n", "staging")
	addr := freeAddr(t)
	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	logs, wait := serveProcess(t, fmt.Sprintf(`server: {listen: "%s"}
auth:
  tokens:
    %s
    %s
    %s
sources:
  - name: local
    dir: {path: %s, interval: 1s}
    prune: {maxFraction: 1}
actions:
  - name: run
    type: exec
    config: {command: [%q]}
reconcile: {workers: 2, backoff: {initial: 100ms, max: 500ms}}
`, addr, oncallLine, viewerLine, otherLine, repo, script), "TRUEUP_DATABASE_URL="+dbURL)
	defer func() {
		if err := wait(true); err != nil {
			t.Errorf("serve: %v\n%s", err, logs.String())
		}
	}()
	conn := connect(t, dbURL)
	ctx := context.Background()
	poll := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !done(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 60s\n%s", what, logs.String())
			}
		}
	}
	poll("both jobs Ready", func() bool {
		var n int
		_ = conn.QueryRow(ctx, `SELECT count(*) FROM resources WHERE phase = 'Ready'`).Scan(&n)
		return n == 2
	})
	if err := os.Remove(filepath.Join(repo, "stuck.yaml")); err != nil {
		t.Fatal(err)
	}
	poll("the delete failing twice", func() bool {
		var n int
		_ = conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE name = 'stuck' AND reason = 'DeleteFailed'`).Scan(&n)
		return n >= 2
	})

	cli := func(token string, args ...string) (string, error) {
		cmd := exec.Command(os.Args[0], append([]string{"--server", "http://" + addr, "--token", token}, args...)...)
		cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_SERVER=", "TRUEUP_TOKEN=", "XDG_CONFIG_HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	abandon := []string{"delete", "prod/Job/stuck", "--abandon", "--reason", "the job service was shut down"}
	if out, err := cli(viewer, abandon...); err == nil || !strings.Contains(out, "operator role is needed in namespace prod") {
		t.Errorf("abandon by a viewer: %v %s", err, out)
	}
	if out, err := cli(other, abandon...); err == nil || !strings.Contains(out, "not found") {
		t.Errorf("abandon by an operator of another namespace: %v %s", err, out)
	}
	if out, err := cli(oncall, "delete", "prod/Job/keep", "--abandon", "--reason", "x"); err == nil || !strings.Contains(out, "manifest still in Git") {
		t.Errorf("abandon of a resource still in Git: %v %s", err, out)
	}
	out, err := cli(oncall, abandon...)
	if err != nil || !strings.Contains(out, "Job/stuck in namespace prod abandoned by token:oncall") {
		t.Fatalf("abandon: %v %s", err, out)
	}
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM resources WHERE name = 'stuck'`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("stuck rows after the abandon: %d %v", rows, err)
	}
	out, err = cli(oncall, "history", "Job/stuck", "-n", "prod")
	if err != nil || !strings.Contains(out, "Abandoned") || !strings.Contains(out, "token:oncall") {
		t.Errorf("history: %v\n%s", err, out)
	}
	var typ, msg string
	if err := conn.QueryRow(ctx, `SELECT type, message FROM events WHERE name = 'stuck' AND reason = 'Abandoned'`).Scan(&typ, &msg); err != nil {
		t.Fatal(err)
	}
	if typ != "Warning" || !strings.Contains(msg, "abandoned by token:oncall: the job service was shut down") {
		t.Errorf("event: %s %q", typ, msg)
	}
	var keep string
	if err := conn.QueryRow(ctx, `SELECT phase FROM resources WHERE name = 'keep'`).Scan(&keep); err != nil || keep != "Ready" {
		t.Errorf("keep: %q %v", keep, err)
	}
}
