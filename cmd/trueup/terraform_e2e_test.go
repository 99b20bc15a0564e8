package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestTerraformEndToEnd runs trueup serve as a process with a terraform action: the resource
// becomes Ready with the module's outputs, its state is a row of the pg backend's table in
// trueup's own database (the URL reached the action through actions.Env.DatabaseURL), and a
// change of the spec is applied; a pruned resource is destroyed with its workspace.
func TestTerraformEndToEnd(t *testing.T) {
	tf := terraformOnPath(t)
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "modules", "db", "main.tf"), `variable "size" { type = number }
resource "terraform_data" "db" { input = var.size }
output "size" { value = terraform_data.db.output }
`)
	offlineTerraformRC(t, dir)
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), manifesttest.TypeDoc("Database", "db.example.com", "{type: object, required: [size], properties: {size: {type: integer}}}", "tf"))
	db := func(size int) string {
		return fmt.Sprintf("apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: prod}\nspec: {size: %d}\n", size)
	}
	writeTestFile(t, filepath.Join(repo, "db.yaml"), db(3))
	// Another resource stays: a revision that renders nothing is never pruned.
	writeTestFile(t, filepath.Join(repo, "keep.yaml"), strings.Replace(db(1), "orders", "keep", 1))
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: "%s"}
sources:
  - name: local
    dir: {path: %s, interval: 1s}
    prune: {maxFraction: 1}
actions:
  - name: tf
    type: terraform
    config: {module: modules/db, binary: %s, workDir: %s, env: {TF_CLI_CONFIG_FILE: %s}}
reconcile: {workers: 2, backoff: {initial: 100ms, max: 500ms}}
`, freeAddr(t), repo, tf, filepath.Join(dir, "work"), filepath.Join(dir, "terraformrc")))

	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	logs := startServe(t, cfgPath, dbURL)
	conn := connect(t, dbURL)
	waitOutput := func(want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			var phase, size string
			_ = conn.QueryRow(context.Background(),
				`SELECT phase, coalesce(outputs->>'size', '') FROM resources WHERE name = 'orders'`).Scan(&phase, &size)
			if phase == "Ready" && size == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("orders: phase %q, outputs.size %q; want Ready with size %s\n%s", phase, size, want, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitOutput("3")
	var state string
	if err := conn.QueryRow(context.Background(),
		`SELECT data FROM trueup_tf_tf.states WHERE name = 'prod.Database.orders'`).Scan(&state); err != nil {
		t.Fatalf("the resource's state is not in trueup's database: %v", err)
	}
	if !strings.Contains(state, `"terraform_data"`) {
		t.Fatalf("state row without the resource: %s", state)
	}

	writeTestFile(t, filepath.Join(repo, "db.yaml"), db(4))
	waitOutput("4")

	// Pruned: destroyed, and the workspace's row gone.
	if err := os.Remove(filepath.Join(repo, "db.yaml")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var resources, states int
		_ = conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM resources WHERE name = 'orders'),
			(SELECT count(*) FROM trueup_tf_tf.states WHERE name = 'prod.Database.orders')`).Scan(&resources, &states)
		if resources == 0 && states == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the file's removal: %d resource row(s), %d state row(s); want none\n%s", resources, states, logs.String())
		}
	}
	if strings.Contains(logs.String(), dbURL) {
		t.Error("the database URL reached the logs")
	}
}

// TestTerraformModuleFromGitEndToEnd runs trueup serve with a terraform module kept in the Git
// source's repository, under the manifests path (its *.tf.json is not read as a manifest): the
// resource becomes Ready with the module's outputs at the first commit, and a commit changing
// the module and the spec is applied with the module of that commit (serve wired
// actions.Env.ReadTree to the source).
func TestTerraformModuleFromGitEndToEnd(t *testing.T) {
	tf := terraformOnPath(t)
	dir := t.TempDir()
	offlineTerraformRC(t, dir)
	repo := filepath.Join(dir, "repo")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	writeTestFile(t, filepath.Join(repo, "manifests", "modules", "db", "main.tf"), `variable "size" { type = number }
resource "terraform_data" "db" { input = var.size }
output "size" { value = terraform_data.db.output }
`)
	writeTestFile(t, filepath.Join(repo, "manifests", "modules", "db", "flavour.tf.json"), `{"output": {"flavour": {"value": "blue"}}}`)
	writeTestFile(t, filepath.Join(repo, "manifests", "types.yaml"), manifesttest.TypeDoc("Database", "db.example.com", "{type: object, properties: {size: {type: integer}}}", "tf"))
	db := func(size int) string {
		return fmt.Sprintf("apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: orders, namespace: prod}\nspec: {size: %d}\n", size)
	}
	writeTestFile(t, filepath.Join(repo, "manifests", "db.yaml"), db(3))
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "first")
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: "%s"}
dataDir: %s
sources:
  - name: infra
    git: {url: %s, path: manifests, interval: 1s}
actions:
  - name: tf
    type: terraform
    config: {module: {source: infra, path: manifests/modules/db}, binary: %s, workDir: %s, env: {TF_CLI_CONFIG_FILE: %s}}
reconcile: {workers: 2, backoff: {initial: 100ms, max: 500ms}}
`, freeAddr(t), filepath.Join(dir, "data"), repo, tf, filepath.Join(dir, "work"), filepath.Join(dir, "terraformrc")))

	logs, conn := serveDB(t, cfgPath)
	waitOutputs := func(size, flavour string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			var phase, gotSize, gotFlavour string
			_ = conn.QueryRow(context.Background(), `SELECT phase, coalesce(outputs->>'size', ''), coalesce(outputs->>'flavour', '')
				FROM resources WHERE name = 'orders'`).Scan(&phase, &gotSize, &gotFlavour)
			if phase == "Ready" && gotSize == size && gotFlavour == flavour {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("orders: phase %q, outputs size %q flavour %q; want Ready with %s, %s\n%s", phase, gotSize, gotFlavour, size, flavour, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitOutputs("3", "blue")

	writeTestFile(t, filepath.Join(repo, "manifests", "modules", "db", "flavour.tf.json"), `{"output": {"flavour": {"value": "green"}}}`)
	writeTestFile(t, filepath.Join(repo, "manifests", "db.yaml"), db(4))
	git("commit", "-q", "-am", "second")
	waitOutputs("4", "green")
}

// terraformOnPath is the real terraform or tofu: the tests need one and fail without it.
func terraformOnPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"terraform", "tofu"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("neither terraform nor tofu is on PATH (.ci/ensure-terraform.sh says how to get one)")
	return ""
}

// startServe runs trueup serve with the config on the database, stopped (SIGTERM) when the
// test ends; it returns the process's output.
func startServe(t *testing.T, cfgPath, dbURL string) *syncBuffer {
	t.Helper()
	return startServeWith(t, []string{"TRUEUP_DATABASE_URL=" + dbURL}, "--config", cfgPath)
}

// startServeWith runs trueup serve with the flags args and the variables env added to the
// test's environment, stopped (SIGTERM) when the test ends; it returns the process's output.
// A serve that does not stop within 30 seconds is killed, and the test waits until it is gone.
// Its terraform runs go with it: each leads a process group of its own (so a signal to serve's
// group would not reach them), and each dies with serve (actions/proc: a parent-death signal,
// and a PID namespace of its own where the machine allows one).
func startServeWith(t *testing.T, env []string, args ...string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, args...)...)
	cmd.Env = append(append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1"), env...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.WaitDelay = 10 * time.Second // output a leftover child still holds open is not waited for longer
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve exited: %v\n%s", err, logs.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("serve did not stop within 30s of SIGTERM; killed\n%s", logs.String())
		}
	})
	return logs
}

// offlineTerraformRC writes dir/terraformrc, a terraform CLI config that installs providers
// only from a mirror that does not exist: nothing is downloaded.
func offlineTerraformRC(t *testing.T, dir string) {
	t.Helper()
	writeTestFile(t, filepath.Join(dir, "terraformrc"), "disable_checkpoint = true\nprovider_installation {\n  filesystem_mirror {\n    path = \"/nonexistent/mirror\"\n  }\n}\n")
}

// serveDB runs trueup serve with the config on a fresh database (startServe) and connects to
// that database.
func serveDB(t *testing.T, cfgPath string) (*syncBuffer, *pgx.Conn) {
	t.Helper()
	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	logs := startServe(t, cfgPath, dbURL)
	return logs, connect(t, dbURL)
}

// connect opens a connection to the database dbURL, closed when the test ends.
func connect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
