//go:build unix

package execaction_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/actions/execaction"
)

// planConfig is config with the plan opt-in.
type planConfig struct {
	config
	Plan bool `json:"plan,omitempty"`
}

// buildPlanner makes an instance from cfg with OUT_DIR set to a fresh folder unless cfg sets it.
func buildPlanner(t *testing.T, cfg planConfig) (actions.Planner, string) {
	t.Helper()
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	out := cfg.Env["OUT_DIR"]
	if out == "" {
		out = t.TempDir()
	}
	cfg.Env["OUT_DIR"] = out
	if cfg.LockDir == "" {
		cfg.LockDir = t.TempDir()
	}
	a, err := execaction.New(actiontest.MustJSON(t, cfg), actions.Env{Name: "test", BaseDir: "."})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = actions.Close(a) })
	return a.(actions.Planner), out
}

func TestPlanReply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reply, exit string
		want              actions.Plan
		err               string // the error contains it; "" for none
		noPlan            bool   // the error is actions.ErrNoPlan
	}{
		{name: "changes", reply: `{"changes": true, "summary": "1 to add, 0 to change", "plan": "+ db"}`,
			want: actions.Plan{Changes: true, Summary: "1 to add, 0 to change", Text: "+ db"}},
		{name: "no changes", reply: `{"changes": false}`, want: actions.Plan{}},
		{name: "unknown fields ignored", reply: `{"changes": false, "cost": 12}`, want: actions.Plan{}},
		{name: "exit 64 is no plan", reply: `{"changes": true}`, exit: "64", err: "exit status 64", noPlan: true},
		{name: "exit 78 is terminal", exit: "78", err: "exit status 78"},
		{name: "exit 1 fails", exit: "1", err: "exit status 1"},
		{name: "empty stdout is not a plan", err: `stdout: empty`},
		{name: "a reconcile reply is not a plan", reply: `{"done": true}`, err: `without "changes"`},
		{name: "changes must be a boolean", reply: `{"changes": "yes"}`, err: "invalid plan reply"},
		{name: "not an object", reply: `no changes`, err: "not a JSON object"},
		{name: "counts and hash", reply: `{"changes": true, "summary": "1 to replace", "add": 0, "change": 0, "destroy": 0, "replace": 1, "hash": "sha256:9c1e"}`,
			want: actions.Plan{Changes: true, Summary: "1 to replace", Counted: true, Replace: 1, Hash: "sha256:9c1e"}},
		{name: "one count is counted", reply: `{"changes": true, "destroy": 2}`, want: actions.Plan{Changes: true, Counted: true, Destroy: 2}},
		{name: "a negative count", reply: `{"changes": true, "destroy": -1}`, err: `stdout: plan reply: "destroy": want a non-negative integer`},
		{name: "a count as a string", reply: `{"changes": true, "add": "1"}`, err: `stdout: plan reply: "add": want a non-negative integer, got a string`},
		{name: "counts of no changes", reply: `{"changes": false, "add": 1}`, err: `stdout: plan reply: "changes" is false but the counts are not all 0`},
		{name: "a hash not a string", reply: `{"changes": true, "hash": 7}`, err: `stdout: plan reply: "hash": want a string`},
		{name: "a hash with spaces", reply: `{"changes": true, "hash": "a b"}`, err: `stdout: plan reply: "hash": want printable ASCII characters without spaces`},
		{name: "two documents", reply: `{"changes": true} {"changes": false}`, err: "more than one JSON document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, out := buildPlanner(t, planConfig{Plan: true, config: config{
				Command: []string{"./testdata/record.sh"},
				Env:     map[string]string{"REPLY_JSON": tc.reply, "EXIT": tc.exit},
			}})
			req := request()
			req.Checkpoint = func(context.Context, json.RawMessage) error {
				t.Error("Plan saved a checkpoint")
				return nil
			}
			got, err := p.Plan(t.Context(), req)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Plan: %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Plan = %#v; want %#v", got, tc.want)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Plan err = %v; want one containing %q", err, tc.err)
			}
			if errors.Is(err, actions.ErrNoPlan) != tc.noPlan {
				t.Fatalf("errors.Is(%v, ErrNoPlan) = %v; want %v", err, !tc.noPlan, tc.noPlan)
			}
			env, rerr := os.ReadFile(filepath.Join(out, "env.txt"))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !strings.Contains(string(env), "TRUEUP_OPERATION=plan\n") {
				t.Errorf("the command's environment lacks TRUEUP_OPERATION=plan")
			}
			var stdin struct{ Operation string }
			b, _ := os.ReadFile(filepath.Join(out, "stdin.json"))
			if err := json.Unmarshal(b, &stdin); err != nil || stdin.Operation != "plan" {
				t.Errorf("stdin operation = %q (%v); want plan", stdin.Operation, err)
			}
		})
	}
}

func TestPlanExit78IsTerminal(t *testing.T) {
	t.Parallel()
	p, _ := buildPlanner(t, planConfig{Plan: true, config: config{
		Command: []string{"./testdata/record.sh"}, Env: map[string]string{"EXIT": "78"}}})
	_, err := p.Plan(t.Context(), request())
	if !actions.IsTerminal(err) || errors.Is(err, actions.ErrNoPlan) {
		t.Fatalf("Plan err = %v; want a terminal error that is not ErrNoPlan", err)
	}
}

// Without the opt-in, a command is never started for a plan: one written before plan
// existed may take an unknown operation for reconcile and act on it.
func TestPlanNeedsOptIn(t *testing.T) {
	t.Parallel()
	p, out := buildPlanner(t, planConfig{config: config{Command: []string{"./testdata/legacy.sh"}}})
	if _, err := p.Plan(t.Context(), request()); !errors.Is(err, actions.ErrNoPlan) {
		t.Fatalf("Plan without plan: true: err = %v; want ErrNoPlan", err)
	}
	if _, err := os.Stat(filepath.Join(out, "applied")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command ran for a plan without the opt-in (stat applied: %v)", err)
	}
}

// A command wrongly declared plan: true that answers like a reconcile gives an error, never
// a plan of "no changes".
func TestPlanLegacyCommandDeclared(t *testing.T) {
	t.Parallel()
	p, _ := buildPlanner(t, planConfig{Plan: true, config: config{Command: []string{"./testdata/legacy.sh"}}})
	got, err := p.Plan(t.Context(), request())
	if err == nil || errors.Is(err, actions.ErrNoPlan) || !strings.Contains(err.Error(), `without "changes"`) {
		t.Fatalf("Plan = %#v, %v; want an error naming the missing changes field", got, err)
	}
}

// A real planning command: plan before and after a reconcile, with the spec changed, and the
// plan itself writes nothing.
func TestPlanScript(t *testing.T) {
	t.Parallel()
	p, out := buildPlanner(t, planConfig{Plan: true, config: config{Command: []string{"./testdata/planner.sh"},
		Env: map[string]string{"API_TOKEN": "tok-123456789"}}})
	a := p.(actions.Action)
	req := request()
	req.State = json.RawMessage(`{"job":42}`)

	check := func(spec string, want actions.Plan) {
		t.Helper()
		req.Resource.Spec = json.RawMessage(spec)
		got, err := p.Plan(t.Context(), req)
		if err != nil {
			t.Fatalf("Plan(%s): %v", spec, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Plan(%s) = %#v; want %#v", spec, got, want)
		}
	}
	check(`{"size":"small"}`, actions.Plan{Changes: true, Summary: "1 to add, 0 to change", Text: "+ database (size small)",
		Counted: true, Add: 1, Hash: "create-g3"})
	if _, err := os.Stat(filepath.Join(out, "db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a plan wrote the database (stat: %v)", err)
	}
	if _, err := a.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	check(`{"size":"small"}`, actions.Plan{Summary: "no changes", Counted: true, Hash: "none-g3"})
	check(`{"size":"large"}`, actions.Plan{Changes: true, Summary: "0 to add, 1 to change", Text: "~ database size small -> large",
		Counted: true, Change: 1, Hash: "resize-g3"})
	if _, err := os.Stat(filepath.Join(out, "kept-plan")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a plan without keepPlan kept it (stat: %v)", err)
	}

	// The call's secrets are redacted from the plan text; the hash holds none of them.
	req.Secrets = []string{"large"}
	got, err := p.Plan(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.Text, "large") || !strings.Contains(got.Text, "***") || got.Hash != "resize-g3" {
		t.Fatalf("plan text %q, hash %q; want the call's secret redacted and the hash resize-g3", got.Text, got.Hash)
	}

	req.Secrets = nil
	req.Resource.Spec = json.RawMessage(`{"size":"never"}`)
	_, err = p.Plan(t.Context(), req)
	if !errors.Is(err, actions.ErrNoPlan) || !strings.Contains(err.Error(), "this backend cannot plan") {
		t.Fatalf("Plan for a spec the command cannot plan: err = %v; want ErrNoPlan with the stderr tail", err)
	}
}

// A plan whose hash holds a secret of the call or of the instance is refused, naming the
// field and not the value: the hash is published as it is.
func TestPlanHashHoldingASecret(t *testing.T) {
	t.Parallel()
	const instanceSecret, callSecret = "tok-123456789", "call/pw-98765"
	for _, tc := range []struct{ name, hash string }{
		{"the instance's", "sha256:" + instanceSecret},
		{"the call's", "plan-" + callSecret + "-1"},
		{"the call's URL-escaped", "plan-" + url.QueryEscape(callSecret)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, _ := buildPlanner(t, planConfig{Plan: true, config: config{
				Command: []string{"./testdata/record.sh"},
				Env: map[string]string{"API_TOKEN": instanceSecret,
					"REPLY_JSON": `{"changes": true, "summary": "1 to add", "add": 1, "hash": "` + tc.hash + `"}`},
			}})
			req := request()
			req.Secrets = []string{callSecret}
			got, err := p.Plan(t.Context(), req)
			const want = `stdout: plan reply: "hash" holds a secret of the call`
			if err == nil || err.Error() != want {
				t.Fatalf("Plan = %#v, %v; want the error %q", got, err, want)
			}
		})
	}
}

// The gate of a policy: a plan asked with keepPlan reaches the command, which keeps it; the
// reconcile carrying its hash as approvedPlan applies it, and one carrying another hash fails.
func TestPlanKeptAndApproved(t *testing.T) {
	t.Parallel()
	p, out := buildPlanner(t, planConfig{Plan: true, config: config{Command: []string{"./testdata/planner.sh"}}})
	a := p.(actions.Action)
	req := request()
	// Fields of the same names inside with: are not the request's.
	req.Resource.Spec = json.RawMessage(`{"size":"small"}`)
	req.With = json.RawMessage(`{"keepPlan":true,"approvedPlan":"create-g3"}`)
	if _, err := p.Plan(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "kept-plan")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a plan without keepPlan kept it (stat: %v)", err)
	}
	req.With = nil
	req.KeepPlan = true
	plan, err := p.Plan(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := (actions.Plan{Changes: true, Summary: "1 to add, 0 to change", Text: "+ database (size small)",
		Counted: true, Add: 1, Hash: "create-g3"}); plan != want {
		t.Fatalf("Plan = %#v; want %#v", plan, want)
	}
	if b, err := os.ReadFile(filepath.Join(out, "kept-plan")); err != nil || string(b) != "create-g3" {
		t.Fatalf("kept plan = %q, %v; want create-g3", b, err)
	}

	req.KeepPlan = false
	req.ApprovedPlan = "create-g2"
	_, err = a.Reconcile(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "no kept plan of hash create-g2") {
		t.Fatalf("Reconcile of another plan: err = %v; want the command's refusal", err)
	}
	req.ApprovedPlan = actions.PlanHash(plan)
	if _, err := a.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("Reconcile of the approved plan: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "db")); err != nil || string(b) != "small" {
		t.Fatalf("database = %q, %v; want the approved plan applied", b, err)
	}
}

// A reconcile never waits for, nor fails because of, a preview's plan: through the gate (the
// host's, or the instance's own), the plan in progress is stopped (its command killed) and
// says why, whatever case the pull request spells the kind in.
func TestReconcilePreemptsPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, planKind string
		host           bool
	}{
		{"host's gate", "Database", true},
		{"instance's gate", "Database", false},
		{"kind in lower case", "database", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, out := buildPlanner(t, planConfig{Plan: true, config: config{Command: []string{"./testdata/planner.sh"}}})
			a := p.(actions.Action)
			var host *actions.PlanGate
			if tc.host {
				host = &actions.PlanGate{}
			}
			gate := actions.GateFor(host, p)
			req := request()
			if _, err := a.Reconcile(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			planErr := make(chan error, 1)
			go func() {
				preq := request()
				preq.Resource.Kind = tc.planKind
				preq.Resource.Spec = json.RawMessage(`{"size":"slow"}`)
				_, err := gate.Plan(t.Context(), p, preq)
				planErr <- err
			}()
			waitPlanStarted(t, filepath.Join(out, "plan-started"), planErr)
			req.Resource.Spec = json.RawMessage(`{"size":"large"}`)
			done, err := gate.Want(t.Context(), req.Resource)
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Reconcile(t.Context(), req)
			done()
			if err != nil {
				t.Fatalf("a reconcile during a plan: %v", err)
			}
			if res.Outputs["size"] != "large" {
				t.Fatalf("reconcile outputs %v", res.Outputs)
			}
			if err := <-planErr; err == nil || !strings.Contains(err.Error(), "the resource is being reconciled: no plan now") {
				t.Fatalf("the preempted plan's error = %v", err)
			}
		})
	}
}

// waitPlanStarted waits for the plan's command to write started, failing at once with the
// plan's error when the plan returns first.
func waitPlanStarted(t *testing.T, started string, planErr chan error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			return
		}
		select {
		case err := <-planErr:
			t.Fatalf("the plan returned before its command started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written within 20s", started)
		}
	}
}

// A preview's plan carries no UID (the pull request's resource may not exist yet) while the
// reconciles of the resource do: both take the same lock all the same, so that a plan and a
// reconcile of one resource never run at once (issue 19, 4). A plan asked for while the
// reconcile runs is refused (at once by the gate, within lockGrace by the flock); a reconcile
// asked for while the plan runs stops it within
// one process (the host's gate), and waits for it across two instances on one lock folder
// (two controllers on one host, each with its gate: the flock). The commands record the order
// they ran in.
func TestPlanWithoutUIDSharesTheReconcileLock(t *testing.T) {
	t.Parallel()
	previewReq := func(size string) actions.Request {
		req := request()
		req.Resource.UID, req.Resource.Generation, req.State = "", 0, nil
		req.Resource.Spec = json.RawMessage(`{"size":"` + size + `"}`)
		return req
	}
	reconcileReq := func(size string) actions.Request {
		req := request()
		req.Resource.Spec = json.RawMessage(`{"size":"` + size + `"}`)
		return req
	}
	// instances are one instance twice with one gate, or two on one lock folder with a gate
	// each; OUT_DIR is shared.
	instances := func(t *testing.T, two bool) (a, b actions.Planner, ga, gb *actions.PlanGate, out string) {
		cfg := planConfig{Plan: true, config: config{Command: []string{"./testdata/planner.sh"}, LockDir: t.TempDir(),
			Env: map[string]string{"OUT_DIR": t.TempDir()}}}
		a, out = buildPlanner(t, cfg)
		ga = &actions.PlanGate{}
		if !two {
			return a, a, ga, ga, out
		}
		b, _ = buildPlanner(t, cfg)
		return a, b, ga, &actions.PlanGate{}, out
	}
	reconcile := func(t *testing.T, g *actions.PlanGate, a actions.Planner, req actions.Request) error {
		done, err := g.Want(t.Context(), req.Resource)
		if err != nil {
			return err
		}
		defer done()
		_, err = a.(actions.Action).Reconcile(t.Context(), req)
		return err
	}
	const busy = "the resource is being reconciled: no plan now"
	ranAlone := []string{"reconcile start", "reconcile end"}
	planThenReconcile := []string{"plan start", "plan end", "reconcile start", "reconcile end"}
	for _, two := range []bool{false, true} {
		name := map[bool]string{false: "one instance", true: "two instances"}[two]
		t.Run(name+": plan during a reconcile", func(t *testing.T) {
			t.Parallel()
			a, b, ga, gb, out := instances(t, two)
			done := make(chan error, 1)
			go func() { done <- reconcile(t, ga, a, reconcileReq("held")) }()
			actiontest.WaitFile(t, filepath.Join(out, "reconcile-started"), 20*time.Second)
			if _, err := gb.Plan(t.Context(), b, previewReq("large")); err == nil || !strings.Contains(err.Error(), busy) {
				t.Errorf("a plan while the reconcile runs: err = %v; want it refused", err)
			}
			if err := os.WriteFile(filepath.Join(out, "release"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if got := sequence(t, out); !slices.Equal(got, ranAlone) {
				t.Errorf("the commands ran as %q, want %q", got, ranAlone)
			}
		})
		t.Run(name+": reconcile during a plan", func(t *testing.T) {
			t.Parallel()
			a, b, ga, gb, out := instances(t, two)
			// Within an instance the reconcile stops the plan (slow: it would run a minute);
			// across instances it waits for the plan's flock (brief: the plan ends by itself,
			// at once if the reconcile starts beside it).
			size := map[bool]string{false: "slow", true: "brief"}[two]
			planErr := make(chan error, 1)
			go func() {
				_, err := ga.Plan(t.Context(), a, previewReq(size))
				planErr <- err
			}()
			actiontest.WaitFile(t, filepath.Join(out, "plan-started"), 20*time.Second)
			if err := reconcile(t, gb, b, reconcileReq("large")); err != nil {
				t.Fatalf("a reconcile during a plan: %v", err)
			}
			err := <-planErr
			switch {
			case !two && (err == nil || !strings.Contains(err.Error(), busy)):
				t.Errorf("the plan's error = %v; want it stopped by the reconcile", err)
			case two && err != nil:
				t.Errorf("the plan of the other instance: %v", err)
			}
			if got := sequence(t, out); !slices.Equal(got, planThenReconcile) {
				t.Errorf("the commands ran as %q, want %q", got, planThenReconcile)
			}
		})
	}
}

// sequence is what the planner.sh commands recorded in out/seq, in order.
func sequence(t *testing.T, out string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "seq"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// An exec instance asks the host for arbitration, and has a gate of its own when the host
// shares none.
func TestExecPlansAreArbitrated(t *testing.T) {
	t.Parallel()
	p, _ := buildPlanner(t, planConfig{Plan: true, config: config{Command: []string{"./testdata/planner.sh"}}})
	if g := actions.GateFor(nil, p); g == nil {
		t.Fatal("exec plans are not arbitrated")
	}
}
