//go:build unix

package terraform_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/actions/terraform"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// binary is the real terraform or tofu: these tests need one and fail without it.
func binary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"terraform", "tofu"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("neither terraform nor tofu is on PATH: the terraform action's tests run the real binary " +
		"(.ci/ensure-terraform.sh says how to get one)")
	return ""
}

// config mirrors the terraform config, so that tests write it as Go values.
type config struct {
	Module  string            `json:"module"`
	Binary  string            `json:"binary,omitempty"`
	Timeout string            `json:"timeout,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	WorkDir string            `json:"workDir,omitempty"`
	Backend map[string]any    `json:"backend,omitempty"`
}

// cliConfig is the CLI config that keeps every run off the network.
func cliConfig(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/terraformrc")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fixture is an instance with its database.
type fixture struct {
	action actions.Action
	dbURL  string
	schema string
	cfg    config
	env    actions.Env
}

// setup builds an instance named name on a fresh database, running testdata/modules/data
// unless cfg names a module.
func setup(t *testing.T, name string, cfg config) fixture {
	t.Helper()
	bin := binary(t)
	if cfg.Module == "" {
		cfg.Module = "testdata/modules/data"
	}
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	cfg.Env["TF_CLI_CONFIG_FILE"] = cliConfig(t)
	if cfg.WorkDir == "" {
		cfg.WorkDir = t.TempDir()
	}
	if cfg.Binary == "" {
		cfg.Binary = bin
	}
	url := pgtest.NewDatabase(t, nil)
	env := actions.Env{Name: name, BaseDir: ".", DatabaseURL: url}
	a, err := terraform.New(actiontest.MustJSON(t, cfg), env)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := actions.Close(a); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return fixture{action: a, dbURL: url, schema: "trueup_tf_" + name, cfg: cfg, env: env}
}

func request(name, spec string) actions.Request {
	return actions.Request{Resource: actions.Resource{
		APIVersion: "trueup.dev/v1", Kind: "Database", Namespace: "team-a", Name: name,
		UID: "uid-" + name, Generation: 1, Spec: json.RawMessage(spec),
	}}
}

// states returns the pg backend's rows: workspace name → state document.
func (f fixture) states(t *testing.T) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), f.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), "SELECT name, data FROM "+pgx.Identifier{f.schema, "states"}.Sanitize())
	if err != nil {
		t.Fatalf("query the backend's states table: %v", err)
	}
	out := map[string]string{}
	for rows.Next() {
		var name, data string
		if err := rows.Scan(&name, &data); err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// terraformCLI runs the real binary on the resource's workspace from outside the action, as
// an operator would: a copy of the module, the same backend, schema and workspace.
func (f fixture) terraformCLI(t *testing.T, ws string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"main.tf"} {
		b, err := os.ReadFile(filepath.Join(f.cfg.Module, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "backend.tf"), []byte(`terraform {
  backend "pg" {}
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+cliConfig(t), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1",
		"TF_DATA_DIR="+filepath.Join(dir, ".tfdata"), "TF_WORKSPACE="+ws, "PG_CONN_STR="+f.dbURL, "PG_SCHEMA_NAME="+f.schema)
	var out strings.Builder
	for _, cmdArgs := range [][]string{{"init", "-input=false", "-no-color"}, args} {
		cmd := exec.CommandContext(t.Context(), binary(t), cmdArgs...)
		cmd.Dir, cmd.Env = dir, env
		b, err := cmd.CombinedOutput()
		out.Write(b)
		if err != nil {
			t.Fatalf("terraform %s: %v\n%s", strings.Join(cmdArgs, " "), err, b)
		}
	}
	return out.String()
}

func TestConformance(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	url := pgtest.NewDatabase(t, nil)
	env := map[string]string{"TF_CLI_CONFIG_FILE": cliConfig(t)}
	actiontest.Run(t, actiontest.Suite{
		Factory:    terraform.New,
		Config:     actiontest.MustJSON(t, config{Module: "testdata/modules/data", Binary: bin, Env: env, WorkDir: t.TempDir()}),
		SlowConfig: actiontest.MustJSON(t, config{Module: "testdata/modules/slow", Binary: bin, Env: env, WorkDir: t.TempDir()}),
		Env:        actions.Env{Name: "conformance", BaseDir: ".", DatabaseURL: url},
	})
}

// The acceptance: create → Ready with outputs; a plan of a change shows Terraform's
// summary and changes nothing; change → applied; state edited out of band → drift, then
// reconciled; delete → destroyed; the state is rows of the backend's table all along.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t, "lifecycle", config{})
	a := f.action
	ctx := t.Context()
	const ws = "team-a.Database.orders"

	// Create.
	req := request("orders", `{"size": 3, "password": "pa55word-very-secret"}`)
	res, err := a.Reconcile(ctx, req)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !res.Done || res.Outputs["size"] != json.Number("3") || res.Outputs["engine"] != "postgres" || res.Outputs["password"] != "***" {
		t.Fatalf("create: Done %v, outputs %v; want Done with size 3, engine postgres and the password redacted", res.Done, res.Outputs)
	}
	if !strings.Contains(res.Message, "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.") {
		t.Fatalf("create: message %q; want the apply's log tail", res.Message)
	}
	id := res.Outputs["id"]
	rows := f.states(t)
	if !strings.Contains(rows[ws], `"terraform_data"`) || !strings.Contains(rows[ws], fmt.Sprint(id)) {
		t.Fatalf("states table: %v; want workspace %s holding terraform_data %v", keys(rows), ws, id)
	}

	// In sync right after.
	obs, err := a.(actions.Observer).Observe(ctx, req)
	if err != nil || !obs.InSync {
		t.Fatalf("Observe after create = %+v, %v; want in sync", obs, err)
	}

	// A plan of a changed variable: Terraform's summary, and nothing written.
	req.Resource.Spec = json.RawMessage(`{"size": 4, "password": "pa55word-very-secret"}`)
	plan, err := a.(actions.Planner).Plan(ctx, req)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if !plan.Changes || plan.Summary != "0 to add, 1 to change, 0 to destroy" || !strings.Contains(plan.Text, "terraform_data.db will be updated in-place") {
		t.Fatalf("Plan = %+v; want changes, Terraform's summary and its text", plan)
	}
	if after := f.states(t); after[ws] != rows[ws] {
		t.Fatal("Plan changed the state")
	}

	// Change: applied.
	res, err = a.Reconcile(ctx, req)
	if err != nil {
		t.Fatalf("change: %v", err)
	}
	if res.Outputs["size"] != json.Number("4") || res.Outputs["id"] != id {
		t.Fatalf("change: outputs %v; want size 4 and the same id %v (updated in place)", res.Outputs, id)
	}
	if !strings.Contains(res.Message, "0 added, 1 changed, 0 destroyed") {
		t.Fatalf("change: message %q", res.Message)
	}
	// Nothing to do: nothing applied.
	res, err = a.Reconcile(ctx, req)
	if err != nil || !strings.HasPrefix(res.Message, "No changes") {
		t.Fatalf("unchanged Reconcile: %q, %v; want No changes", res.Message, err)
	}

	// Out of band: an operator removes the resource from the state.
	f.terraformCLI(t, ws, "state", "rm", "-no-color", "terraform_data.db")
	obs, err = a.(actions.Observer).Observe(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if obs.InSync || !strings.Contains(obs.Message, "1 to add, 0 to change, 0 to destroy") {
		t.Fatalf("Observe after state rm = %+v; want drift with the plan summary", obs)
	}
	if _, err := a.Reconcile(ctx, req); err != nil {
		t.Fatalf("reconcile the drift: %v", err)
	}
	if obs, err := a.(actions.Observer).Observe(ctx, req); err != nil || !obs.InSync {
		t.Fatalf("Observe after the drift was reconciled = %+v, %v; want in sync", obs, err)
	}

	// Out of band: someone applies other variables to the workspace.
	f.terraformCLI(t, ws, "apply", "-input=false", "-no-color", "-auto-approve", "-var=size=9")
	obs, err = a.(actions.Observer).Observe(ctx, req)
	if err != nil || obs.InSync || !strings.Contains(obs.Message, "0 to add, 1 to change, 0 to destroy") {
		t.Fatalf("Observe after an out-of-band apply = %+v, %v; want drift", obs, err)
	}
	if res, err = a.Reconcile(ctx, req); err != nil || res.Outputs["size"] != json.Number("4") {
		t.Fatalf("reconcile the out-of-band apply: %v, %v", res.Outputs, err)
	}

	// Delete: destroyed, and the workspace's row gone.
	del, err := a.Delete(ctx, req)
	if err != nil || !del.Done {
		t.Fatalf("Delete = %+v, %v", del, err)
	}
	if !strings.Contains(del.Message, "Destroy complete! Resources: 1 destroyed.") {
		t.Fatalf("Delete message %q", del.Message)
	}
	if rows := f.states(t); rows[ws] != "" {
		t.Fatalf("states after Delete: %v; want workspace %s gone", keys(rows), ws)
	}
	if _, err := os.Stat(filepath.Join(f.cfg.WorkDir, ws)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the working copy is left after Delete (stat: %v)", err)
	}
	// The password never reached a message or an output.
	for _, s := range []string{res.Message, del.Message, plan.Text, fmt.Sprint(res.Outputs)} {
		if strings.Contains(s, "pa55word-very-secret") {
			t.Fatalf("the spec's sensitive variable leaked: %q", s)
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// recording builds an instance whose binary is testdata/record-tf.sh around the real one.
func recording(t *testing.T, name string, cfg config) (fixture, string) {
	t.Helper()
	dir := t.TempDir()
	cfg.Binary = "testdata/record-tf.sh"
	cfg.Env = map[string]string{"RECORD_DIR": dir, "TF_REAL": binary(t)}
	return setup(t, name, cfg), dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// Secrets never reach a command line: the spec goes in a var file, the database URL in the
// environment. The var file is gone after the call. init runs once per module content.
func TestRuns(t *testing.T) {
	t.Parallel()
	f, rec := recording(t, "runs", config{})
	req := request("db", `{"size": 2, "password": "pa55word-very-secret"}`)
	for range 2 {
		if _, err := f.action.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	args := read(t, filepath.Join(rec, "args"))
	if strings.Contains(args, "pa55word") || strings.Contains(args, f.dbURL) {
		t.Fatalf("a secret is on a command line:\n%s", args)
	}
	if n := strings.Count(args, "init "); n != 1 {
		t.Fatalf("init ran %d times for two calls on an unchanged module:\n%s", n, args)
	}
	for _, want := range []string{"plan -input=false -no-color -detailed-exitcode -var-file=", "apply -input=false -no-color -auto-approve"} {
		if !strings.Contains(args, want) {
			t.Fatalf("no run with %q:\n%s", want, args)
		}
	}
	env := read(t, filepath.Join(rec, "env"))
	for _, want := range []string{"TF_IN_AUTOMATION=1", "TF_INPUT=0", "TF_WORKSPACE=team-a.Database.db", "PG_SCHEMA_NAME=trueup_tf_runs"} {
		if !strings.Contains(env, want+"\n") {
			t.Fatalf("the runs' environment lacks %s", want)
		}
	}
	// No var file or plan left behind.
	leftovers, _ := filepath.Glob(filepath.Join(f.cfg.WorkDir, "*", "call-*"))
	if len(leftovers) > 0 {
		t.Fatalf("call files left: %v", leftovers)
	}
}

// Concurrent calls for one resource run one after the other.
func TestOneRunPerResource(t *testing.T) {
	t.Parallel()
	f, rec := recording(t, "serial", config{})
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			req := request("db", fmt.Sprintf(`{"size": %d}`, i))
			if i%2 == 0 {
				_, errs[i] = f.action.Reconcile(t.Context(), req)
			} else if _, err := f.action.(actions.Planner).Plan(t.Context(), req); err != nil && !strings.Contains(err.Error(), "being reconciled") {
				errs[i] = err // a plan gives way to a reconcile; anything else is a failure
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if o := read(t, filepath.Join(rec, "overlap")); o != "" {
		t.Fatalf("two runs of one resource overlapped (%d times)", strings.Count(o, "OVERLAP"))
	}
}

// moduleCopy copies the main.tf of the module in dir to a folder of the test, which it can
// change.
func moduleCopy(t *testing.T, dir string) string {
	t.Helper()
	mod := t.TempDir()
	src, err := os.ReadFile(filepath.Join(dir, "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "main.tf"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	return mod
}

// A changed module is initialised again and applied.
func TestModuleChange(t *testing.T) {
	t.Parallel()
	mod := moduleCopy(t, "testdata/modules/data")
	f, rec := recording(t, "modchange", config{Module: mod})
	req := request("db", `{"size": 1}`)
	if _, err := f.action.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	extra := "output \"flavour\" {\n  value = \"blue\"\n}\n"
	if err := os.WriteFile(filepath.Join(mod, "extra.tf"), []byte(extra), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := f.action.Reconcile(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["flavour"] != "blue" {
		t.Fatalf("outputs %v; want the new module's output", res.Outputs)
	}
	if n := strings.Count(read(t, filepath.Join(rec, "args")), "init "); n != 2 {
		t.Fatalf("init ran %d times; want 2 (the module changed once)", n)
	}
}

func TestSpecErrorsAreTerminal(t *testing.T) {
	t.Parallel()
	f := setup(t, "specerr", config{})
	for _, tc := range []struct{ spec, want string }{
		{`["size", 1]`, "spec must be a JSON object"},
		// The spec is the var file: the fix is the type's schema, not terraform's -var.
		{`{"engine": "mysql"}`, "spec.size is not set: set it in the resource (make it required or give it a default in the type's schema), or give the variable a default in the module."},
		{`{"size": 1, "engine": {"a": 1}}`, "Invalid value for input variable"},
	} {
		_, err := f.action.Reconcile(t.Context(), request("bad", tc.spec))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "-var or -var-file") || !actions.IsTerminal(err) {
			t.Errorf("spec %s: err = %v; want a terminal error containing %q (and no -var advice)", tc.spec, err, tc.want)
		}
	}
}

// Terraform wraps its message at 78 columns, inside "input variable … is not set" for a
// long name: the advice is rewritten all the same.
func TestSpecErrorLongVariableName(t *testing.T) {
	t.Parallel()
	mod := t.TempDir()
	const name = "vpc_security_group_ids_for_the_database"
	if err := os.WriteFile(filepath.Join(mod, "main.tf"), []byte(`variable "`+name+`" { type = list(string) }`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := setup(t, "longvar", config{Module: mod})
	_, err := f.action.Reconcile(t.Context(), request("bad", `{}`))
	want := "spec." + name + " is not set: set it in the resource"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "-var-file") || !actions.IsTerminal(err) {
		t.Errorf("err = %v; want a terminal error containing %q (and no -var advice)", err, want)
	}
}

func TestTimeoutInterrupts(t *testing.T) {
	t.Parallel()
	f := setup(t, "timeout", config{Module: "testdata/modules/slow", Timeout: "3s"})
	start := time.Now()
	_, err := f.action.Reconcile(t.Context(), request("slow", `{"size": 1}`))
	if err == nil || !strings.Contains(err.Error(), "timed out after 3s") {
		t.Fatalf("err = %v; want a timeout", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the call returned %s after it started; want soon after its 3s timeout", d)
	}
	// Terraform got the SIGINT (as the init of its PID namespace it gets only the signals it
	// handles) and stopped gracefully, not by the kill after the grace.
	if !strings.Contains(err.Error(), "Interrupt received") {
		t.Errorf("err = %v; want terraform's own answer to the interrupt", err)
	}
}

func TestCallErrors(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	for _, tc := range []struct {
		name string
		cfg  config
		db   string
		want string
	}{
		{"binary missing", config{Module: "testdata/modules/data", Binary: "/nonexistent/terraform"}, "postgres://x", "binary:"},
		{"module missing", config{Module: "testdata/modules/nope", Binary: bin}, "postgres://x", "module"},
		{"no database", config{Module: "testdata/modules/data", Binary: bin}, "", "no database for the pg backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.WorkDir = t.TempDir()
			a, err := terraform.New(actiontest.MustJSON(t, tc.cfg), actions.Env{Name: "x", BaseDir: ".", DatabaseURL: tc.db})
			if err != nil {
				t.Fatalf("New: %v (a missing binary, module or database fails calls, not the factory)", err)
			}
			defer actions.Close(a)
			_, err = a.Reconcile(t.Context(), request("db", `{"size": 1}`))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one containing %q", err, tc.want)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cfg, want string }{
		{`{}`, "module is required"},
		{`{"module": "m", "modules": "x"}`, `unknown field "modules"`},
		{`{"module": "m", "timeout": "soon"}`, "timeout"},
		{`{"module": "m", "timeout": "-1s"}`, "negative"},
		{`{"module": "m", "env": {"TF_WORKSPACE": "x"}}`, "env TF_WORKSPACE: set by the terraform action"},
		{`{"module": "m", "env": {"PG_CONN_STR": "x"}}`, "env PG_CONN_STR"},
		{`{"module": "m", "env": {"TF_CLI_ARGS_plan": "-refresh=false"}}`, "env TF_CLI_ARGS_plan"},
		{`{"module": "m", "backend": {"type": "S3 bucket"}}`, "backend.type"},
		{`{"module": "m", "backend": {"type": "s3", "config": [1]}}`, "backend.config must be an object"},
		{`{"module": 3}`, "module must be a folder or {source, path}"},
		{`{"module": {"source": "infra"}}`, "source and path are both required"},
		{`{"module": {"source": "infra", "path": "m", "ref": "main"}}`, `unknown field "ref"`},
		{`{"module": {"source": "infra", "path": "../m"}}`, "must be a folder inside the repository"},
		{`{"module": {"source": "infra", "path": "/m"}}`, "must be a folder inside the repository"},
		{`{"module": {"source": "infra", "path": "."}}`, "must be a folder inside the repository"},
	} {
		_, err := terraform.New(json.RawMessage(tc.cfg), actions.Env{BaseDir: "."})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s) err = %v; want one containing %q", tc.cfg, err, tc.want)
		}
	}
}

// A backend block from the config replaces the pg backend: here the local backend, in a
// folder of the test's.
func TestBackendFromConfig(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	f := setup(t, "localbackend", config{Backend: map[string]any{"type": "local", "config": map[string]any{"workspace_dir": stateDir}}})
	if _, err := f.action.Reconcile(t.Context(), request("db", `{"size": 5}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "team-a.Database.db", "terraform.tfstate")); err != nil {
		t.Fatalf("no state in the configured backend: %v", err)
	}
}

func TestValidateWith(t *testing.T) {
	t.Parallel()
	a, err := terraform.New(json.RawMessage(`{"module": "m"}`), actions.Env{BaseDir: "."})
	if err != nil {
		t.Fatal(err)
	}
	v := a.(actions.WithValidator)
	for _, ok := range []string{"", "null", "{}"} {
		if err := v.ValidateWith(json.RawMessage(ok)); err != nil {
			t.Errorf("ValidateWith(%q): %v", ok, err)
		}
	}
	if err := v.ValidateWith(json.RawMessage(`{"module": "x"}`)); err == nil {
		t.Error("ValidateWith accepted parameters")
	}
}
