//go:build unix

package preview

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/terraform"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/commitstatus/forgetest"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

var databaseTypeDoc = manifesttest.TypeDoc("Database", "db.example.com", "{type: object, properties: {size: {type: integer}}}", "tf")

func databaseDoc(name string, size int) string {
	return fmt.Sprintf("apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: %s}\nspec: {size: %d}\n", name, size)
}

// The acceptance: a preview of a change shows Terraform's plan summary. The type's
// action is the real terraform action (the real binary, built-in resources only, state in
// the test database through the pg backend); the resource is applied first, and the preview
// of a pull request changing its spec plans an in-place update, changing nothing.
func TestPreviewTerraformPlan(t *testing.T) {
	t.Parallel()
	tf := setupTerraform(t, map[string]string{"types.yaml": databaseTypeDoc, "dbs/orders.yaml": databaseDoc("orders", 3)}, "orders")
	f, st, dbURL, forge := tf.f, tf.f.st, tf.dbURL, tf.f.forge
	ctx := context.Background()
	const ws = "default.Database.orders"
	stateBefore := tfStates(t, dbURL)
	if !strings.Contains(stateBefore[ws], `"terraform_data"`) {
		t.Fatalf("no state of %s after the apply: %v", ws, stateBefore)
	}
	appliedBefore := f.applied(t)

	sha := f.pr(3, false, map[string]string{"dbs/orders.yaml": databaseDoc("orders", 4)})
	if err := f.runner.Submit(Event{Source: "infra", Provider: ProviderGitHub, Number: 3, HeadSHA: sha}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, sha)

	p, err := st.GetPreview(ctx, "infra", 3)
	if err != nil || p.State != store.PreviewSucceeded || p.HeadSHA != sha {
		t.Fatalf("preview row %+v, %v", p, err)
	}
	var result Result
	if err := json.Unmarshal(p.Result, &result); err != nil {
		t.Fatal(err)
	}
	if len(result.Changes) != 1 || result.Changes[0].Op != "change" || result.Changes[0].Plan == nil {
		t.Fatalf("changes %+v", result.Changes)
	}
	const summary = "0 to add, 1 to change, 0 to destroy"
	if plan := result.Changes[0].Plan; plan.Status != "planned" || !plan.Changes || plan.Summary != summary ||
		!strings.Contains(plan.Text, "terraform_data.db will be updated in-place") {
		t.Fatalf("plan %+v; want Terraform's in-place update", plan)
	}
	cs := forge.Comments()
	if len(cs) != 1 || !strings.Contains(cs[0].Body, summary) || !strings.Contains(cs[0].Body, "-  \"size\": 3\n+  \"size\": 4") {
		t.Fatalf("comments %+v; want one with the plan's summary and the spec diff", cs)
	}

	// Nothing applied: the resource rows and Terraform's state are as they were.
	if after := f.applied(t); after != appliedBefore {
		t.Errorf("resource rows changed:\n%s\n%s", appliedBefore, after)
	}
	if after := tfStates(t, dbURL); after[ws] != stateBefore[ws] || len(after) != len(stateBefore) {
		t.Errorf("terraform state changed by the preview:\n%v\n%v", stateBefore, after)
	}
}

// The acceptance (issue 19, 2): a pull request that references another resource's
// output through a mistyped variable (a password where a number is declared) makes
// Terraform refuse the var file, quoting it, that is the resolved spec, in its error under
// the var file's absolute path. The comment and the stored preview carry neither the value
// nor any absolute path.
func TestPreviewTerraformErrorLeaksNoOutput(t *testing.T) {
	t.Parallel()
	const password = "prod-S3cret-pw-8c1f"
	tf := setupTerraform(t, map[string]string{"types.yaml": databaseTypeDoc, "dbs/orders.yaml": databaseDoc("orders", 3),
		"dbs/billing.yaml": databaseDoc("billing", 3)}, "orders")
	f, ctx := tf.f, context.Background()
	out, _ := json.Marshal(map[string]any{"size": 3, "password": password})
	if _, err := f.st.Pool().Exec(ctx, `UPDATE resources SET outputs = $1 WHERE name = 'billing'`, out); err != nil {
		t.Fatal(err)
	}
	mistyped := "apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: orders}\nspec: {size: \"${{ Database/billing.outputs.password }}\"}\n"
	sha := f.pr(4, false, map[string]string{"dbs/orders.yaml": mistyped})
	if err := f.runner.Submit(Event{Source: "infra", Provider: ProviderGitHub, Number: 4, HeadSHA: sha}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, sha)

	p, err := f.st.GetPreview(ctx, "infra", 4)
	if err != nil || p.HeadSHA != sha {
		t.Fatalf("preview row %+v, %v", p, err)
	}
	var result Result
	if err := json.Unmarshal(p.Result, &result); err != nil {
		t.Fatal(err)
	}
	if len(result.Changes) != 1 || result.Changes[0].Plan == nil || result.Changes[0].Plan.Status != "error" ||
		!strings.Contains(result.Changes[0].Plan.Error, "Invalid value for input variable") {
		t.Fatalf("changes %+v; want Terraform's refusal of the variable", result.Changes)
	}
	cs := f.forge.Comments()
	if len(cs) != 1 {
		t.Fatalf("comments %+v", cs)
	}
	absPath := regexp.MustCompile(`(^|[\s"'(=])/[A-Za-z0-9._-]+/`)
	for what, text := range map[string]string{"comment": cs[0].Body, "stored preview": string(p.Result)} {
		if strings.Contains(text, password) {
			t.Errorf("%s holds the resolved output:\n%s", what, text)
		}
		if m := absPath.FindString(text); m != "" || strings.Contains(text, tf.workDir) || strings.Contains(text, os.TempDir()+"/") {
			t.Errorf("%s holds an absolute path (%q):\n%s", what, m, text)
		}
		if strings.Contains(text, "spec.tfvars.json line 1") {
			t.Errorf("%s holds Terraform's source snippet:\n%s", what, text)
		}
	}
}

// tfFixture is a preview runner whose type Database is planned by the real terraform action.
type tfFixture struct {
	f       *fixture
	dbURL   string
	workDir string // the action's workDir
}

// setupTerraform applies files (the revision main) to the store and each of apply (Database
// names, spec {size: 3}) through the real terraform action, and starts a preview runner on
// a GitHub fake forge.
func setupTerraform(t *testing.T, files map[string]string, apply ...string) tfFixture {
	t.Helper()
	bin := terraformBinary(t)
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	st, err := store.Open(ctx, dbURL, store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "infra", URL: "file:///x", Branch: "main"}); err != nil {
		t.Fatal(err)
	}

	module, err := filepath.Abs("testdata/terraform/module")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := filepath.Abs("testdata/terraform/terraformrc")
	if err != nil {
		t.Fatal(err)
	}
	workDir := t.TempDir()
	cfg, err := json.Marshal(map[string]any{"module": module, "binary": bin, "workDir": workDir,
		"env": map[string]string{"TF_CLI_CONFIG_FILE": rc}})
	if err != nil {
		t.Fatal(err)
	}
	tf, err := terraform.New(cfg, actions.Env{Name: "tf", BaseDir: ".", DatabaseURL: dbURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = actions.Close(tf) })

	// Applied: the revision in the store, and the resources through the action.
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	main := r.commit("", files)
	var snap []sources.File
	for name, data := range files {
		snap = append(snap, sources.File{Path: name, Data: []byte(data)})
	}
	set, err := manifest.NewLoader().Load(snap, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: main, Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	for _, name := range apply {
		res, err := tf.Reconcile(ctx, actions.Request{Resource: actions.Resource{APIVersion: "db.example.com/v1", Kind: "Database",
			Namespace: "default", Name: name, Spec: json.RawMessage(`{"size":3}`), Source: "infra", Revision: main}})
		if err != nil || !res.Done || res.Outputs["size"] != json.Number("3") {
			t.Fatalf("apply %s: %+v, %v", name, res, err)
		}
	}

	src, err := gitsource.New(gitsource.Config{Name: "infra", URL: r.dir, Dir: filepath.Join(t.TempDir(), "mirror")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	forge := forgetest.New(token, false)
	t.Cleanup(forge.Close)
	pub, err := commitstatus.NewPreviewer(commitstatus.Config{Provider: commitstatus.ProviderGitHub, Token: token, BaseURL: forge.URL + "/", Repo: "acme/infra"}, "infra")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, repo: r, main: main, forge: forge, runs: make(chan Event, 4)}
	f.runner = New(Options{Source: "infra", Store: st, Fetcher: src, Publisher: pub, ExternalURL: "http://127.0.0.1:8080/",
		Checker: &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true, Actions: map[string]actions.Action{"tf": tf},
			PlanTimeout: 2 * time.Minute},
		Logger: slog.New(slog.DiscardHandler)})
	f.runner.runs = f.runs
	if err := f.runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.runner.Stop)
	return tfFixture{f: f, dbURL: dbURL, workDir: workDir}
}

// terraformBinary is the real terraform or tofu: the test needs one and fails without it.
func terraformBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"terraform", "tofu"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("neither terraform nor tofu is on PATH: this test runs the real binary (.ci/ensure-terraform.sh says how to get one)")
	return ""
}

// tfStates returns the pg backend's rows of instance tf: workspace → state document.
func tfStates(t *testing.T, url string) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT name, data FROM trueup_tf_tf.states`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (kv [2]string, err error) {
		err = row.Scan(&kv[0], &kv[1])
		return kv, err
	})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range out {
		m[kv[0]] = kv[1]
	}
	return m
}
