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

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
)

// tfDelete is a running trueup serve of the terraform delete tests, with its repository.
type tfDelete struct {
	repo   string                      // the Git repository (source infra, path manifests)
	mainTF string                      // the module's main.tf
	first  string                      // the first commit
	git    func(args ...string) string // runs git in repo, returns its trimmed output
	conn   *pgx.Conn                   // to trueup's database, closed when the test ends
	logs   *syncBuffer                 // serve's output
}

// startTFDelete commits a repository whose manifests/ holds the module modules/db (main.tf
// is module), a Database type with the schema properties props and action tf, and the
// resources orders (db.yaml) and keep (keep.yaml) as the first commit, message msg; it runs
// trueup serve on a fresh database with source infra of it and action tf (terraform on the
// module, no provider installed).
func startTFDelete(t *testing.T, module, props, orders, keep, msg string) *tfDelete {
	t.Helper()
	tf := terraformOnPath(t)
	dir := t.TempDir()
	offlineTerraformRC(t, dir)
	repo := filepath.Join(dir, "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	mainTF := filepath.Join(repo, "manifests", "modules", "db", "main.tf")
	writeTestFile(t, mainTF, module)
	writeTestFile(t, filepath.Join(repo, "manifests", "types.yaml"), manifesttest.TypeDoc("Database", "db.example.com", "{type: object, properties: "+props+"}", "tf"))
	writeTestFile(t, filepath.Join(repo, "manifests", "db.yaml"), orders)
	writeTestFile(t, filepath.Join(repo, "manifests", "keep.yaml"), keep)
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", msg)
	first := git("rev-parse", "HEAD")
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: "%s"}
dataDir: %s
sources:
  - name: infra
    git: {url: %s, path: manifests, interval: 1s}
    prune: {maxFraction: 1}
actions:
  - name: tf
    type: terraform
    config: {module: {source: infra, path: manifests/modules/db}, binary: %s, workDir: %s, env: {TF_CLI_CONFIG_FILE: %s}}
reconcile: {workers: 2, backoff: {initial: 100ms, max: 500ms}}
`, freeAddr(t), filepath.Join(dir, "data"), repo, tf, filepath.Join(dir, "work"), filepath.Join(dir, "terraformrc")))

	logs, conn := serveDB(t, cfgPath)
	return &tfDelete{repo: repo, mainTF: mainTF, first: first, git: git, conn: conn, logs: logs}
}

// TestTerraformDeleteAtAppliedRevisionEndToEnd reproduces the stuck delete of issue 19: the
// commit that removes a manifest also breaks the repository-kept module. The delete runs with
// the module of the revision the resource was applied at, so it succeeds at once (no
// DeleteFailed), the state row goes, and the commit that fixes the module brings nothing back.
func TestTerraformDeleteAtAppliedRevisionEndToEnd(t *testing.T) {
	goodModule := `variable "size" { type = number }
resource "terraform_data" "db" { input = var.size }
output "size" { value = terraform_data.db.output }
`
	db := func(name string, size int) string {
		return fmt.Sprintf("apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: %s, namespace: prod}\nspec: {size: %d}\n", name, size)
	}
	// keep stays: a revision that renders nothing is never pruned.
	e := startTFDelete(t, goodModule, "{size: {type: integer}}", db("orders", 3), db("keep", 1), "first")
	git, mainTF, first, conn, logs := e.git, e.mainTF, e.first, e.conn, e.logs
	ctx := context.Background()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var ready int
		_ = conn.QueryRow(ctx, `SELECT count(*) FROM resources WHERE phase = 'Ready' AND revision = $1`, first).Scan(&ready)
		if ready == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 resources Ready at %s\n%s", ready, first, logs.String())
		}
	}

	// One commit removes the manifest and breaks the module.
	writeTestFile(t, mainTF, "this is { not terraform\n")
	git("rm", "-q", "manifests/db.yaml")
	git("commit", "-q", "-am", "remove orders, break the module")
	removing := git("rev-parse", "HEAD")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var resources, states int
		_ = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM resources WHERE name = 'orders'),
			(SELECT count(*) FROM trueup_tf_tf.states WHERE name = 'prod.Database.orders')`).Scan(&resources, &states)
		if resources == 0 && states == 0 {
			break
		}
		if time.Now().After(deadline) {
			var msg string
			_ = conn.QueryRow(ctx, `SELECT message FROM resources WHERE name = 'orders'`).Scan(&msg)
			t.Fatalf("after %s removed orders and broke the module: %d resource row(s) (message %q), %d state row(s); want none\n%s",
				removing[:7], resources, msg, states, logs.String())
		}
	}
	var failed int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE name = 'orders' AND reason = 'DeleteFailed'`).Scan(&failed); err != nil {
		t.Fatal(err)
	}
	if failed != 0 {
		t.Errorf("%d DeleteFailed events: the delete ran with the removing commit's module", failed)
	}
	var result, revision, message string
	if err := conn.QueryRow(ctx, `SELECT result, revision, message FROM reconcile_history WHERE name = 'orders' AND operation = 'delete'
		ORDER BY id DESC LIMIT 1`).Scan(&result, &revision, &message); err != nil {
		t.Fatal(err)
	}
	if result != "Succeeded" || revision != first || !strings.HasPrefix(message, "at the revision it was last applied at") {
		t.Errorf("last delete: %s at %s (%q); want Succeeded, recorded at the applied commit %s", result, revision, message, first)
	}

	// The next commit fixes the module: nothing comes back, the other resource stays Ready.
	writeTestFile(t, mainTF, goodModule)
	git("commit", "-q", "-am", "fix the module")
	fixed := git("rev-parse", "HEAD")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var synced string
		_ = conn.QueryRow(ctx, `SELECT revision FROM sources WHERE name = 'infra'`).Scan(&synced)
		if synced == fixed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("source at %q, want %s\n%s", synced, fixed, logs.String())
		}
	}
	var orders int
	var keepPhase string
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM resources WHERE name = 'orders'),
		(SELECT phase FROM resources WHERE name = 'keep')`).Scan(&orders, &keepPhase); err != nil {
		t.Fatal(err)
	}
	if orders != 0 || keepPhase != "Ready" {
		t.Errorf("after the fix: %d orders row(s), keep %s; want none and Ready", orders, keepPhase)
	}
}

// TestTerraformDeleteWithAppliedSpecEndToEnd: the delete gets the spec the resource was
// applied with, not a later desired state that never applied. Commit A's module declares
// `size`; commit B renames it to `instance_size` (module and manifests) and fails to apply;
// commit C removes the manifest. The delete at A with B's spec would fail for ever ("No value
// for required variable"); with A's spec it succeeds at the first attempt.
func TestTerraformDeleteWithAppliedSpecEndToEnd(t *testing.T) {
	db := func(name, field string) string {
		return fmt.Sprintf("apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: %s, namespace: prod}\nspec: {%s: 3}\n", name, field)
	}
	e := startTFDelete(t, `variable "size" { type = number }
resource "terraform_data" "db" { input = var.size }
`, "{size: {type: integer}, instance_size: {type: integer}}", db("orders", "size"), db("keep", "size"), "A")
	git, repo, mainTF, a, conn, logs := e.git, e.repo, e.mainTF, e.first, e.conn, e.logs
	ctx := context.Background()
	waitFor := func(what, query string, args ...any) {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var ok bool
			_ = conn.QueryRow(ctx, query, args...).Scan(&ok)
			if ok {
				return
			}
			if time.Now().After(deadline) {
				var msg string
				_ = conn.QueryRow(ctx, `SELECT coalesce(string_agg(name || ': ' || phase || ' ' || message, '; '), '') FROM resources`).Scan(&msg)
				t.Fatalf("%s: not within 90s (%s)\n%s", what, msg, logs.String())
			}
		}
	}
	waitFor("both Ready at A", `SELECT count(*) = 2 FROM resources WHERE phase = 'Ready' AND revision = $1`, a)

	// B renames the variable and fails to apply (a precondition that never holds).
	writeTestFile(t, mainTF, `variable "instance_size" { type = number }
resource "terraform_data" "db" {
  input = var.instance_size
  lifecycle {
    precondition {
      condition     = var.instance_size > 100
      error_message = "instance_size too small"
    }
  }
}
`)
	writeTestFile(t, filepath.Join(repo, "manifests", "db.yaml"), db("orders", "instance_size"))
	writeTestFile(t, filepath.Join(repo, "manifests", "keep.yaml"), db("keep", "instance_size"))
	git("commit", "-q", "-am", "B: rename size")
	b := git("rev-parse", "HEAD")
	waitFor("orders failed at B", `SELECT count(*) > 0 FROM reconcile_history WHERE name = 'orders' AND revision = $1 AND result = 'Failed'`, b)

	// C removes orders.
	git("rm", "-q", "manifests/db.yaml")
	git("commit", "-q", "-m", "C: remove orders")
	waitFor("orders deleted, its state gone", `SELECT (SELECT count(*) FROM resources WHERE name = 'orders') = 0
		AND (SELECT count(*) FROM trueup_tf_tf.states WHERE name = 'prod.Database.orders') = 0`)
	var failed int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE name = 'orders' AND reason = 'DeleteFailed'`).Scan(&failed); err != nil {
		t.Fatal(err)
	}
	if failed != 0 {
		t.Errorf("%d DeleteFailed events: the delete at A ran with B's spec", failed)
	}
	var revision string
	if err := conn.QueryRow(ctx, `SELECT revision FROM reconcile_history WHERE name = 'orders' AND operation = 'delete' AND result = 'Succeeded'`).Scan(&revision); err != nil || revision != a {
		t.Errorf("the delete ran at %q (%v), want A %s", revision, err, a)
	}
}
