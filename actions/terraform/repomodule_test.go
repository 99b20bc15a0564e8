//go:build unix

package terraform_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/actions/terraform"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

// gitRepo is a real Git repository with a worktree, built with the git CLI.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=trueup test", "-c", "user.email=test@trueup.dev"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files, commits everything and returns the commit's hash.
func (r *gitRepo) commit(files map[string]string) string {
	r.t.Helper()
	for name, data := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", "change")
	return r.git("rev-parse", "HEAD")
}

// The module is a folder of the manifests repository, read at the revision each resource
// came from: a commit changing the module reaches the resource's next reconcile at that
// revision; a commit that leaves the module alone initialises nothing again.
func TestModuleFromSource(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	mainTF, err := os.ReadFile("testdata/modules/data/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t)
	before := repo.commit(map[string]string{"manifests/db.yaml": "# manifests\n"})
	c1 := repo.commit(map[string]string{"modules/database/main.tf": string(mainTF)})

	src, err := gitsource.New(gitsource.Config{Name: "infra", URL: repo.dir, Path: "manifests", Dir: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	ctx := t.Context()
	if _, err := src.Fetch(ctx, c1); err != nil { // as the syncer would: the mirror holds c1
		t.Fatal(err)
	}

	rec := t.TempDir()
	url := pgtest.NewDatabase(t, nil)
	cfg := map[string]any{
		"module":  map[string]any{"source": "infra", "path": "modules/database"},
		"binary":  "testdata/record-tf.sh",
		"workDir": t.TempDir(),
		"env":     map[string]string{"RECORD_DIR": rec, "TF_REAL": bin, "TF_CLI_CONFIG_FILE": cliConfig(t)},
		// The plan at c4 below is a pull request's: its module is trusted here.
		"pullRequestModules": true,
	}
	a, err := terraform.New(actiontest.MustJSON(t, cfg), actions.Env{Name: "repomod", BaseDir: ".", DatabaseURL: url,
		ReadTree: func(ctx context.Context, source, revision, dir string) ([]sources.TreeFile, error) {
			if source != "infra" {
				return nil, fmt.Errorf("no source %q", source)
			}
			return src.ReadTree(ctx, revision, dir)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = actions.Close(a) })
	f := fixture{action: a, dbURL: url, schema: "trueup_tf_repomod"}
	at := func(rev string) actions.Request {
		req := request("orders", `{"size": 3}`)
		req.Resource.Source, req.Resource.Revision = "infra", rev
		return req
	}
	inits := func() int { return strings.Count(read(t, filepath.Join(rec, "args")), "init ") }

	// Create at c1: Ready with the module's outputs, state in the pg backend.
	res, err := a.Reconcile(ctx, at(c1))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !res.Done || res.Outputs["size"] != json.Number("3") || res.Outputs["flavour"] != nil {
		t.Fatalf("create: %+v", res)
	}
	if st := f.states(t)["team-a.Database.orders"]; !strings.Contains(st, `"terraform_data"`) {
		t.Fatalf("no state row for the resource: %q", st)
	}

	// A commit adds an output to the module: the reconcile at that revision applies it. The
	// mirror is still at c1, so the commit is read from a scratch fetch.
	c2 := repo.commit(map[string]string{"modules/database/extra.tf": "output \"flavour\" {\n  value = \"blue\"\n}\n"})
	res, err = a.Reconcile(ctx, at(c2))
	if err != nil {
		t.Fatalf("reconcile at the new revision: %v", err)
	}
	if res.Outputs["flavour"] != "blue" || res.Outputs["size"] != json.Number("3") {
		t.Fatalf("outputs at c2: %v; want the new module's output", res.Outputs)
	}
	if n := inits(); n != 2 {
		t.Fatalf("init ran %d times; want 2 (the module changed once)", n)
	}

	// A commit that leaves the module alone, synced by the source: nothing initialised again.
	c3 := repo.commit(map[string]string{"manifests/db.yaml": "# manifests v3\n"})
	if _, err := src.Fetch(ctx, c3); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{c3, c2} {
		if res, err := a.Reconcile(ctx, at(rev)); err != nil || res.Outputs["flavour"] != "blue" || !strings.HasPrefix(res.Message, "No changes") {
			t.Fatalf("reconcile at %s: %+v, %v", rev, res, err)
		}
	}
	if n := inits(); n != 2 {
		t.Fatalf("init ran %d times; want still 2 (same module content)", n)
	}
	// A preview's plan at a revision reads that revision's module too.
	c4 := repo.commit(map[string]string{"modules/database/extra.tf": "output \"flavour\" {\n  value = \"green\"\n}\n"})
	plan, err := a.(actions.Planner).Plan(ctx, at(c4))
	// (Plans carry the names of what changes, never values.)
	if err != nil || !plan.Changes || !strings.Contains(plan.Text, "~ flavour") || strings.Contains(plan.Text, "green") {
		t.Fatalf("plan at c4: %+v, %v", plan, err)
	}

	// Errors only a new revision (or a fixed config) cures are terminal.
	other := at(c2)
	other.Resource.Source = "apps"
	for name, req := range map[string]actions.Request{
		"another source's resource":  other,
		"module not in the revision": at(before),
		"no revision":                at(""),
	} {
		if _, err := a.Reconcile(ctx, req); err == nil || !actions.IsTerminal(err) {
			t.Errorf("%s: %v; want a terminal error", name, err)
		}
	}
	del, err := a.Delete(ctx, at(c2))
	if err != nil || !del.Done {
		t.Fatalf("Delete = %+v, %v", del, err)
	}
}

// A pull request's module is unreviewed code that a plan would run: by default an instance
// reading its module from a source does not plan, and says why.
func TestModuleFromSourceNoPullRequestPlans(t *testing.T) {
	t.Parallel()
	read := func(context.Context, string, string, string) ([]sources.TreeFile, error) {
		t.Error("the pull request's module was read")
		return nil, nil
	}
	a, err := terraform.New(json.RawMessage(`{"module": {"source": "infra", "path": "modules/db"}, "backend": {"type": "local"}, "workDir": "`+t.TempDir()+`"}`),
		actions.Env{Name: "noprplans", BaseDir: ".", ReadTree: read})
	if err != nil {
		t.Fatal(err)
	}
	defer actions.Close(a)
	req := request("db", `{}`)
	req.Resource.Source, req.Resource.Revision = "infra", strings.Repeat("a", 40)
	if _, err := a.(actions.Planner).Plan(t.Context(), req); !errors.Is(err, actions.ErrNoPlan) || !strings.Contains(err.Error(), "pullRequestModules: true") {
		t.Fatalf("Plan err = %v; want ErrNoPlan saying why", err)
	}
	if a.(actions.PullRequestCodePlanner).RunsPullRequestCode() {
		t.Error("without pullRequestModules the instance says its plans run the pull request's code")
	}
	folder, err := terraform.New(json.RawMessage(`{"module": "m"}`), actions.Env{BaseDir: "."})
	if err != nil {
		t.Fatal(err)
	}
	if folder.(actions.PullRequestCodePlanner).RunsPullRequestCode() {
		t.Error("a folder module's plans say they run the pull request's code")
	}
	if _, err := terraform.New(json.RawMessage(`{"module": "m", "pullRequestModules": true}`), actions.Env{BaseDir: "."}); err == nil {
		t.Error("pullRequestModules with a folder module was accepted")
	}
}

// Without a source to read from (trueup validate), the config is accepted and calls fail.
func TestModuleFromSourceWithoutReader(t *testing.T) {
	t.Parallel()
	a, err := terraform.New(json.RawMessage(`{"module": {"source": "infra", "path": "modules/db"}, "backend": {"type": "local"}, "workDir": "`+t.TempDir()+`"}`),
		actions.Env{Name: "noreader", BaseDir: "."})
	if err != nil {
		t.Fatal(err)
	}
	defer actions.Close(a)
	req := request("db", `{}`)
	req.Resource.Source, req.Resource.Revision = "infra", strings.Repeat("a", 40)
	if _, err := a.Reconcile(t.Context(), req); err == nil || !strings.Contains(err.Error(), "no source repository can be read here") {
		t.Fatalf("err = %v", err)
	}
	// The gate's plan (KeepPlan) reads the module of the merged revision, as the reconcile
	// does, without pullRequestModules.
	req.KeepPlan = true
	if _, err := a.(actions.Planner).Plan(t.Context(), req); err == nil || !strings.Contains(err.Error(), "no source repository can be read here") {
		t.Fatalf("Plan(KeepPlan) err = %v; want the module read", err)
	}
}

// A delete reads the module at the revision the resource was applied at. When history was
// rewritten and that commit is gone, it falls back to the source's newest revision
// (Resource.FallbackRevision); without one the delete fails, and is retried.
func TestDeleteFallsBackWhenRevisionGone(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	mainTF, err := os.ReadFile("testdata/modules/data/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t)
	before := repo.commit(map[string]string{"manifests/db.yaml": "# manifests\n"})
	src, err := gitsource.New(gitsource.Config{Name: "infra", URL: repo.dir, Path: "manifests", Dir: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	ctx := t.Context()
	if _, err := src.Fetch(ctx, before); err != nil {
		t.Fatal(err)
	}
	applied := repo.commit(map[string]string{"modules/database/main.tf": string(mainTF)})
	cfg := map[string]any{
		"module":  map[string]any{"source": "infra", "path": "modules/database"},
		"binary":  bin,
		"backend": map[string]any{"type": "local"},
		"workDir": t.TempDir(),
		"env":     map[string]string{"TF_CLI_CONFIG_FILE": cliConfig(t)},
	}
	// A replica: an instance with its working copies (a restart starts a new one on them).
	replica := func() actions.Action {
		a, err := terraform.New(actiontest.MustJSON(t, cfg), actions.Env{Name: "fallback", BaseDir: ".", Logger: slog.New(slog.DiscardHandler),
			ReadTree: func(ctx context.Context, _, revision, dir string) ([]sources.TreeFile, error) {
				return src.ReadTree(ctx, revision, dir)
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = actions.Close(a) })
		return a
	}
	a := replica()
	req := request("orders", `{"size": 3}`)
	req.Resource.Source, req.Resource.Revision = "infra", applied
	if res, err := a.Reconcile(ctx, req); err != nil || !res.Done {
		t.Fatalf("create at %s: %+v, %v", applied[:7], res, err)
	}

	// History rewritten: the applied commit is gone from the repository.
	repo.git("reset", "-q", "--hard", before)
	head := repo.commit(map[string]string{"modules/database/main.tf": string(mainTF) + "\n# rewritten\n"})
	repo.git("reflog", "expire", "--expire=now", "--all")
	repo.git("gc", "-q", "--prune=now")

	// After a restart, the instance reads the module again.
	a = replica()
	del := req
	if _, err := a.Delete(ctx, del); !errors.Is(err, sources.ErrRevisionNotFound) || actions.IsTerminal(err) {
		t.Fatalf("delete at a gone revision without a fallback: %v; want a retried revision-not-found error", err)
	}
	del.Resource.FallbackRevision = head
	if res, err := a.Delete(ctx, del); err != nil || !res.Done {
		t.Fatalf("delete falling back to %s: %+v, %v", head[:7], res, err)
	}
}

// TestSourcesRead: an instance names the source its module is read from, a local module none.
func TestSourcesRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ module, want string }{
		{`{"source": "infra", "path": "modules/db"}`, "infra"},
		{`"modules/db"`, ""},
	} {
		a, err := terraform.New(json.RawMessage(`{"module": `+tc.module+`, "backend": {"type": "local"}}`), actions.Env{Name: "t", BaseDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(a.(actions.SourceReader).SourcesRead(), ","); got != tc.want {
			t.Errorf("module %s: sources read %q, want %q", tc.module, got, tc.want)
		}
		_ = actions.Close(a)
	}
}
