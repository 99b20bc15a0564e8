package preview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/terraform"
	"github.com/trueup-dev/trueup/sources"
)

// ciPlanner stands for github-actions and gitlab: its plans run the forge's CI.
type ciPlanner struct{ specRecorder }

func (*ciPlanner) RunsPullRequestCode() bool { return true }

var _ actions.PullRequestCodePlanner = (*ciPlanner)(nil)

// A pull request from a fork (issue 19, 6) is planned through the forge's CI, or by a
// terraform instance that plans the pull request's own module, only with preview.forkPlans, and its plans see output references resolved only with
// preview.resolveOutputs: always. A pull request from a branch of the repository is
// planned and resolved as before. Both forges: the comment says why a plan was skipped.
func TestForkPullRequests(t *testing.T) {
	t.Parallel()
	for _, gitlab := range []bool{false, true} {
		t.Run(map[bool]string{false: "github", true: "gitlab"}[gitlab], func(t *testing.T) {
			t.Parallel()
			testForkPullRequests(t, gitlab)
		})
	}
}

func testForkPullRequests(t *testing.T, gitlab bool) {
	f := setup(t, gitlab)
	ctx := context.Background()
	const endpoint = "mq-a.internal.example"
	if _, err := f.st.Pool().Exec(ctx, `UPDATE resources SET outputs = $1 WHERE name = 'a'`, fmt.Sprintf(`{"endpoint":%q}`, endpoint)); err != nil {
		t.Fatal(err)
	}
	provider := map[bool]string{false: ProviderGitHub, true: ProviderGitLab}[gitlab]
	const ref = "${{ Queue/a.outputs.endpoint }}"
	tests := []struct {
		name                          string
		fork, ci, forkPlans, resolve  bool // resolve: resolveOutputs always
		prModule                      bool // the real terraform action, its module read from the repository at the PR's head
		never                         bool // resolveOutputs never
		wantStatus, wantSpec, wantSum string
		wantWarning                   bool
	}{
		{name: "fork, CI: skipped", fork: true, ci: true, wantStatus: "skipped", wantSum: forkCISkipped, wantWarning: true},
		{name: "fork, terraform PR-head module: skipped", fork: true, prModule: true, wantStatus: "skipped", wantSum: forkCISkipped, wantWarning: true},
		{name: "fork, CI, forkPlans", fork: true, ci: true, forkPlans: true, wantStatus: "planned", wantSpec: ref, wantWarning: true},
		{name: "fork, exec-like", fork: true, wantStatus: "planned", wantSpec: ref, wantWarning: true},
		{name: "fork, resolveOutputs always", fork: true, resolve: true, wantStatus: "planned", wantSpec: endpoint},
		{name: "same repository, CI", ci: true, wantStatus: "planned", wantSpec: endpoint},
		{name: "same repository, resolveOutputs never", never: true, wantStatus: "planned", wantSpec: ref},
	}
	for i, tt := range tests {
		// The runner is idle between previews (f.wait): the checker can be set up for the next.
		var rec *specRecorder
		var act actions.Action
		switch {
		case tt.prModule:
			rec, act = &specRecorder{}, prModuleTerraform(t)
		case tt.ci:
			c := &ciPlanner{}
			rec, act = &c.specRecorder, c
		default:
			rec = &specRecorder{}
			act = rec
		}
		c := f.runner.opts.Checker
		c.Actions = map[string]actions.Action{"planner": act}
		c.ForkPlans, c.ResolveForks, c.NoResolve = tt.forkPlans, tt.resolve, tt.never

		number := 20 + i
		b := fmt.Sprintf("apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: b}\nspec: {size: %d, url: %q}\n", 10+i, ref)
		sha := f.pr(number, gitlab, map[string]string{"queues/b.yaml": b})
		if err := f.runner.Submit(Event{Source: "infra", Provider: provider, Number: number, HeadSHA: sha, Fork: tt.fork}); err != nil {
			t.Fatal(err)
		}
		f.wait(t, sha)
		p, err := f.st.GetPreview(ctx, "infra", number)
		if err != nil {
			t.Fatal(err)
		}
		var res Result
		if err := json.Unmarshal(p.Result, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Changes) != 1 || res.Changes[0].Plan == nil {
			t.Fatalf("%s: changes %+v", tt.name, res.Changes)
		}
		plan := res.Changes[0].Plan
		rec.mu.Lock()
		specs := slices.Clone(rec.specs)
		rec.mu.Unlock()
		switch {
		case plan.Status != tt.wantStatus:
			t.Errorf("%s: plan %+v, want %s", tt.name, plan, tt.wantStatus)
		case tt.wantStatus == "skipped" && (len(specs) != 0 || plan.Summary != tt.wantSum):
			t.Errorf("%s: plan %+v after %d calls; want skipped without a call: %s", tt.name, plan, len(specs), tt.wantSum)
		case tt.wantStatus == "planned" && (len(specs) != 1 || !strings.Contains(specs[0], fmt.Sprintf(`"url":%q`, tt.wantSpec))):
			t.Errorf("%s: planned specs %q; want url %s", tt.name, specs, tt.wantSpec)
		}
		if got := slices.Contains(res.Warnings, forkNotResolved); got != tt.wantWarning {
			t.Errorf("%s: warnings %q; want the fork warning: %v", tt.name, res.Warnings, tt.wantWarning)
		}
		var body string
		for _, cm := range f.forge.Comments() {
			if cm.Number == number {
				body = cm.Body
			}
		}
		if tt.wantStatus == "skipped" && !strings.Contains(body, "not planned (preview.forkPlans)") {
			t.Errorf("%s: comment does not say why the plan was skipped:\n%s", tt.name, body)
		}
	}
	if calls := f.act.reconciled(); len(calls) != 0 {
		t.Errorf("the action was called to act: %v", calls)
	}
}

// prModuleTerraform is a real terraform instance whose module is read from the repository at
// the resource's revision (a pull request's head in a preview) and planned for pull requests
// (pullRequestModules): its plan would run the pull request's code on the controller. Reading
// the module fails the test.
func prModuleTerraform(t *testing.T) actions.Action {
	t.Helper()
	read := func(context.Context, string, string, string) ([]sources.TreeFile, error) {
		t.Error("a fork's module was read to plan it")
		return nil, errors.New("not read here")
	}
	a, err := terraform.New(json.RawMessage(`{"module": {"source": "infra", "path": "modules/db"}, "pullRequestModules": true,
		"backend": {"type": "local"}, "workDir": `+strconv.Quote(t.TempDir())+`}`), actions.Env{Name: "prmod", BaseDir: ".", ReadTree: read})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = actions.Close(a) })
	if !a.(actions.PullRequestCodePlanner).RunsPullRequestCode() {
		t.Fatal("terraform with pullRequestModules does not say that it runs the pull request's code")
	}
	return a
}
