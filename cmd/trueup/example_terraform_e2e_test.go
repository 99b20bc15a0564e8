package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// exampleTerraform is the folder of the getting-started example (docs/getting-started.md).
const exampleTerraform = "../../examples/terraform"

// TestExampleTerraformEndToEnd runs examples/terraform as docs/getting-started.md does, with
// the example's own files: its setup.sh makes the bare repository and the work clone, and
// trueup serve reads its trueup.yaml unchanged (placed at examples/terraform/ of a temporary
// tree, so that the config's relative paths lead to that tree's .trueup/, not the
// checkout's). Both Buckets become Ready with the module's outputs, assets called with the
// logs bucket's arn; a pushed change re-applies assets, a change of the logs bucket's output
// re-applies its dependent, trueup diff previews a branch (a change, then an invalid region,
// each exit status 1) that is then merged, and a removed manifest destroys the bucket and its
// state. The output of trueup graph and trueup diff is the guide's, commit ids aside.
func TestExampleTerraformEndToEnd(t *testing.T) {
	terraformOnPath(t)
	guide := readGuide(t)
	root := t.TempDir()
	exampleDir := filepath.Join(root, ".trueup", "example-terraform")
	work := filepath.Join(exampleDir, "work")
	gitEnv := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = gitEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	out := run(filepath.Join(exampleTerraform, "setup.sh"), exampleDir)
	if !strings.Contains(out, "created "+filepath.Join(exampleDir, "infra.git")+" with one commit") {
		t.Fatalf("setup.sh said:\n%s", out)
	}
	config, err := os.ReadFile(filepath.Join(exampleTerraform, "trueup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(root, "examples", "terraform", "trueup.yaml")
	writeTestFile(t, cfgPath, string(config))

	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	addr := freeAddr(t)
	tmp := filepath.Join(root, "tmp") // terraform's working copies
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	logs := startServeWith(t, []string{"TRUEUP_DATABASE_URL=" + dbURL, "TMPDIR=" + tmp}, "--config", cfgPath, "--listen", addr)
	// cliStatus runs the CLI in the work clone, as the guide does, and returns its output and
	// exit status.
	cliStatus := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"--server", "http://" + addr}, args...)...)
		cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_TOKEN=")
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("trueup %v: %v", args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	cli := func(args ...string) string {
		t.Helper()
		out, code := cliStatus(args...)
		if code != 0 {
			t.Fatalf("trueup %v: exit status %d\n%s\n%s", args, code, out, logs.String())
		}
		return out
	}
	// push commits the work clone's changes and pushes them, then syncs as the guide does.
	push := func(message string) {
		t.Helper()
		run("git", "-C", work, "commit", "-q", "-am", message)
		run("git", "-C", work, "push", "-q")
		if out := cli("sync", "infra", "--wait"); !strings.Contains(out, "Ready=True") {
			t.Fatalf("sync: %s", out)
		}
	}
	edit := func(file, old, new string) {
		t.Helper()
		path := filepath.Join(work, "manifests", "buckets", file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), old) {
			t.Fatalf("%s holds no %q:\n%s", path, old, data)
		}
		writeTestFile(t, path, strings.Replace(string(data), old, new, 1))
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// waitFor polls query, which answers one boolean, until it is true.
	waitFor := func(what, query string, args ...any) {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var ok bool
			err := conn.QueryRow(ctx, query, args...).Scan(&ok)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				var state string
				_ = conn.QueryRow(ctx, `SELECT coalesce(string_agg(name || ': ' || phase || ' ' || message, '; '), '') FROM resources`).Scan(&state)
				t.Fatalf("%s: not within 90s (%s)\n%s", what, state, logs.String())
			}
		}
	}
	const (
		logsARN      = "arn:aws:s3:::acme-logs"
		renamedARN   = "arn:aws:s3:::acme-access-logs"
		isReady      = `phase = 'Ready' AND observed_generation = generation`
		stateOfAsset = `SELECT count(*) FROM trueup_tf_tf.states WHERE name = 'default.Bucket.assets'`
	)

	// Both Ready; assets was called with the logs bucket's arn, and its state is in trueup's
	// database.
	waitFor("logs Ready with its arn", `SELECT `+isReady+` AND outputs->>'arn' = $1 FROM resources WHERE name = 'logs'`, logsARN)
	waitFor("assets Ready, logging to the logs bucket", `SELECT `+isReady+` AND outputs->>'arn' = 'arn:aws:s3:::acme-assets'
		AND outputs->>'log_bucket' = $1 AND resolved_spec->>'log_bucket' = $1 AND spec->>'log_bucket' = '${{ Bucket/logs.outputs.arn }}'
		FROM resources WHERE name = 'assets'`, logsARN)
	var states int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM trueup_tf_tf.states WHERE name IN ('default.Bucket.logs', 'default.Bucket.assets')`).Scan(&states); err != nil || states != 2 {
		t.Fatalf("%d state rows (%v), want the two workspaces", states, err)
	}
	if out := cli("get", "resources"); strings.Count(out, "Ready") != 2 {
		t.Errorf("trueup get resources:\n%s", out)
	}
	if out := cli("describe", "Bucket/assets"); !strings.Contains(out, "log_bucket: "+logsARN) {
		t.Errorf("trueup describe Bucket/assets shows no log_bucket output:\n%s", out)
	}
	guideShows(t, guide, "trueup graph", cli("graph"))

	// A change of assets' spec re-applies it.
	edit("assets.yaml", "versioning: false", "versioning: true")
	push("Keep every version of the assets")
	waitFor("assets re-applied with versioning", `SELECT `+isReady+` AND generation = 2 AND outputs->>'versioning' = 'true'
		FROM resources WHERE name = 'assets'`)

	// A change of the output assets reads re-applies assets too.
	edit("logs.yaml", "name: acme-logs", "name: acme-access-logs")
	push("Rename the logs bucket")
	waitFor("assets re-applied with the new arn", `SELECT `+isReady+` AND outputs->>'log_bucket' = $1 FROM resources WHERE name = 'assets'`, renamedARN)
	waitFor("a history entry of trigger dependency", `SELECT count(*) > 0 FROM reconcile_history
		WHERE name = 'assets' AND trigger = 'dependency' AND result = 'Succeeded'`)

	// The preview on a branch: a change, then a region the schema does not allow. Each exits 1.
	run("git", "-C", work, "switch", "-q", "-c", "move-assets")
	edit("assets.yaml", "region: eu-west-1", "region: eu-central-1")
	run("git", "-C", work, "commit", "-q", "-am", "Move the assets bucket to Frankfurt")
	diff := func(want string) string {
		t.Helper()
		out, code := cliStatus("diff", "manifests", "--source", "infra")
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("trueup diff manifests --source infra: exit status %d, want 1 and %q:\n%s", code, want, out)
		}
		return out
	}
	guideShows(t, guide, "trueup diff of the branch", diff("resources: 0 to add, 1 to change, 0 to remove, 1 unchanged; types: 0 to add, 0 to change, 0 to remove, 1 unchanged"))
	edit("assets.yaml", "region: eu-central-1", "region: eu-north-1")
	guideShows(t, guide, "trueup diff of an invalid region", diff("! invalid manifests/buckets/assets.yaml:10: spec.region:"))
	run("git", "-C", work, "checkout", "-q", "manifests/buckets/assets.yaml")
	run("git", "-C", work, "switch", "-q", "main")
	run("git", "-C", work, "merge", "-q", "move-assets")
	run("git", "-C", work, "push", "-q")
	if out := cli("sync", "infra", "--wait"); !strings.Contains(out, "Ready=True") {
		t.Fatalf("sync: %s", out)
	}
	waitFor("assets moved", `SELECT `+isReady+` AND generation = 3 AND outputs->>'region' = 'eu-central-1' FROM resources WHERE name = 'assets'`)
	if out, code := cliStatus("diff", "manifests", "--source", "infra"); code != 0 {
		t.Errorf("trueup diff of the merged main: exit status %d, want 0 (nothing would change):\n%s", code, out)
	}

	// A removed manifest destroys the bucket: the resource and its workspace go, logs stays.
	run("git", "-C", work, "rm", "-q", "manifests/buckets/assets.yaml")
	push("Remove the assets bucket")
	waitFor("assets deleted, its state gone", `SELECT (SELECT count(*) FROM resources WHERE name = 'assets') = 0
		AND (`+stateOfAsset+`) = 0`)
	waitFor("logs still Ready", `SELECT `+isReady+` AND outputs->>'arn' = $1 FROM resources WHERE name = 'logs'`, renamedARN)
	if out := cli("history", "Bucket/assets"); !strings.Contains(out, "deleted") {
		t.Errorf("trueup history Bucket/assets shows no delete:\n%s", out)
	}
}

// readGuide returns docs/getting-started.md.
func readGuide(t *testing.T) string {
	t.Helper()
	guide, err := os.ReadFile("../../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(guide)
}

// commitID is an abbreviated commit id as the CLI prints it; they differ between runs.
var commitID = regexp.MustCompile(`\b[0-9a-f]{12}\b`)

// guideShows fails the test unless every line of the CLI's output out is a line of the guide,
// commit ids aside.
func guideShows(t *testing.T, guide, what, out string) {
	t.Helper()
	lines := map[string]bool{}
	for line := range strings.SplitSeq(commitID.ReplaceAllString(guide, "REV"), "\n") {
		lines[strings.TrimRight(line, " ")] = true
	}
	for line := range strings.SplitSeq(strings.TrimRight(commitID.ReplaceAllString(out, "REV"), "\n"), "\n") {
		if !lines[strings.TrimRight(line, " ")] {
			t.Errorf("docs/getting-started.md does not show this line of %s:\n%s\nthe whole output:\n%s", what, line, out)
		}
	}
}

// TestGettingStartedShowsTheExample keeps docs/getting-started.md and examples/terraform in
// step: every paragraph of the guide's yaml and hcl blocks is text of one of the example's
// files, so the guide shows the files the end-to-end test runs.
func TestGettingStartedShowsTheExample(t *testing.T) {
	guide := readGuide(t)
	var files []string
	err := filepath.WalkDir(exampleTerraform, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files = append(files, string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for i, block := range strings.Split(guide, "```")[1:] {
		lang, body, _ := strings.Cut(block, "\n")
		if i%2 == 1 || (lang != "yaml" && lang != "hcl") {
			continue // text between blocks, or a block of commands or output
		}
		blocks++
		for para := range strings.SplitSeq(strings.TrimSpace(body), "\n\n") {
			found := false
			for _, f := range files {
				found = found || strings.Contains(f, para)
			}
			if !found {
				t.Errorf("docs/getting-started.md shows a %s block that no file of examples/terraform holds:\n%s", lang, para)
			}
		}
	}
	if blocks < 5 {
		t.Errorf("%d yaml or hcl blocks in docs/getting-started.md, want the module, the type, both resources and the config", blocks)
	}
	// The commands setup.sh stands for include how it configures the bare repository.
	setup, err := os.ReadFile(filepath.Join(exampleTerraform, "setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	bareConfig := regexp.MustCompile(`git -C "\$tmp/infra.git" (config .+)`).FindAllStringSubmatch(string(setup), -1)
	if len(bareConfig) == 0 {
		t.Error("setup.sh configures no bare repository")
	}
	for _, m := range bareConfig {
		if !strings.Contains(guide, m[1]) {
			t.Errorf("docs/getting-started.md does not show setup.sh's %q", m[1])
		}
	}
}
