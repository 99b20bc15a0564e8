//go:build unix

package terraform_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// gateRequest is a request of the gate module's resource: the gate asks for its plan with
// KeepPlan.
func gateRequest(spec string) actions.Request {
	req := request("db", spec)
	req.KeepPlan = true
	return req
}

func keptPlan(t *testing.T, f fixture, spec string) actions.Plan {
	t.Helper()
	p, err := f.action.(actions.Planner).Plan(t.Context(), gateRequest(spec))
	if err != nil {
		t.Fatalf("Plan(KeepPlan) of %s: %v", spec, err)
	}
	return p
}

func counts(p actions.Plan) [4]int { return [4]int{p.Add, p.Change, p.Destroy, p.Replace} }

// The gate's plans count what they would do (add, update in place, replace, destroy), and
// the same change against the same state has the same hash, planned by the gate or a preview.
func TestGatePlanCounts(t *testing.T) {
	t.Parallel()
	f := setup(t, "gatecounts", config{Module: "testdata/modules/gate"})
	ctx := t.Context()

	// A resource never applied: the gate plans it all the same (the workspace is created).
	p := keptPlan(t, f, `{"size": 1, "replicas": 1}`)
	if !p.Counted || !p.Changes || counts(p) != [4]int{2, 0, 0, 0} || p.Summary != "2 to add, 0 to change, 0 to destroy" {
		t.Fatalf("plan of a new resource = %+v; want 2 to add, counted", p)
	}
	req := request("db", `{"size": 1, "replicas": 1}`)
	req.ApprovedPlan = p.Hash
	if _, err := f.action.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}

	seen := map[string]string{p.Hash: `{"size": 1, "replicas": 1}` + " (new)"}
	for _, tc := range []struct {
		spec string
		want [4]int // add, change, destroy, replace
	}{
		{`{"size": 2, "replicas": 1}`, [4]int{0, 2, 0, 0}},             // input changes: updated in place
		{`{"size": 1, "major": 2, "replicas": 1}`, [4]int{0, 0, 0, 1}}, // triggers_replace changes
		{`{"size": 1, "replicas": 0}`, [4]int{0, 0, 1, 0}},
		{`{"size": 1, "replicas": 3}`, [4]int{2, 0, 0, 0}},
		{`{"size": 1, "replicas": 1}`, [4]int{0, 0, 0, 0}},
	} {
		p := keptPlan(t, f, tc.spec)
		if !p.Counted || counts(p) != tc.want || p.Changes != (tc.want != [4]int{}) {
			t.Errorf("plan of %s = %+v; want counts %v", tc.spec, p, tc.want)
		}
		if other, ok := seen[p.Hash]; ok {
			t.Errorf("the plans of %s and %s share hash %s", tc.spec, other, p.Hash)
		}
		seen[p.Hash] = tc.spec
		if again := keptPlan(t, f, tc.spec); again.Hash != p.Hash {
			t.Errorf("%s planned twice: hashes %s and %s", tc.spec, p.Hash, again.Hash)
		}
		preview, err := f.action.(actions.Planner).Plan(ctx, request("db", tc.spec))
		if err != nil || preview.Hash != p.Hash || counts(preview) != tc.want {
			t.Errorf("a preview's plan of %s = %+v, %v; want the gate's counts and hash %s", tc.spec, preview, err, p.Hash)
		}
	}
}

// Reconcile with ApprovedPlan applies the kept plan and nothing else, once; a plan that is
// gone, of another hash, or stale (the state changed out of band) fails the call, and the
// next plan has another hash.
func TestApprovedPlan(t *testing.T) {
	t.Parallel()
	f := setup(t, "gateapply", config{Module: "testdata/modules/gate"})
	ctx := t.Context()
	const ws = "team-a.Database.db"
	if _, err := f.action.Reconcile(ctx, request("db", `{"size": 1}`)); err != nil {
		t.Fatal(err)
	}

	// The approved plan sets size 2; the spec of the call says 3: the plan is refused, and
	// nothing is applied.
	p := keptPlan(t, f, `{"size": 2}`)
	req := request("db", `{"size": 3}`)
	req.ApprovedPlan = p.Hash
	_, err := f.action.Reconcile(ctx, req)
	if want := "the approved plan " + p.Hash[:12] + " was planned for another spec or module than this call's: it is planned again"; err == nil || err.Error() != want {
		t.Fatalf("Reconcile(ApprovedPlan of size 2) with size 3: err = %v; want %q", err, want)
	}
	if st := f.states(t)[ws]; !strings.Contains(st, `"size": 1`) {
		t.Fatalf("state after the refused plan:\n%s", st)
	}
	plansLeft(t, f, "a refused plan")

	// Planned for the call's spec: applied.
	p = keptPlan(t, f, `{"size": 3}`)
	req.ApprovedPlan = p.Hash
	res, err := f.action.Reconcile(ctx, req)
	if err != nil {
		t.Fatalf("Reconcile(ApprovedPlan): %v", err)
	}
	if res.Outputs["size"] != json.Number("3") || !strings.Contains(res.Message, "0 added, 1 changed, 0 destroyed") {
		t.Fatalf("Reconcile(ApprovedPlan) = %+v; want the approved plan (size 3) applied", res)
	}
	if st := f.states(t)[ws]; !strings.Contains(st, `"size": 3`) {
		t.Fatalf("state after the approved plan:\n%s", st)
	}

	// Applied once: the plan is gone, and so is one never kept.
	for _, hash := range []string{p.Hash, strings.Repeat("ab", 32)} {
		req.ApprovedPlan = hash
		_, err = f.action.Reconcile(ctx, req)
		if want := "the approved plan " + hash[:12] + " is no longer here: it is planned again"; err == nil || err.Error() != want {
			t.Fatalf("Reconcile(ApprovedPlan %s) err = %v; want %q", hash[:12], err, want)
		}
	}

	// A plan without changes applies nothing.
	p = keptPlan(t, f, `{"size": 3}`)
	req.ApprovedPlan = p.Hash
	if res, err := f.action.Reconcile(ctx, req); err != nil || res.Message != "No changes." || res.Outputs["size"] != json.Number("3") {
		t.Fatalf("Reconcile(ApprovedPlan without changes) = %+v, %v", res, err)
	}

	// Stale: someone applies between the plan and its approval.
	stale := keptPlan(t, f, `{"size": 4}`)
	f.terraformCLI(t, ws, "apply", "-input=false", "-no-color", "-auto-approve", "-var=size=9")
	req = request("db", `{"size": 4}`)
	req.ApprovedPlan = stale.Hash
	_, err = f.action.Reconcile(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "the approved plan "+stale.Hash[:12]+" is stale (terraform: Saved plan is stale") {
		t.Fatalf("Reconcile(stale ApprovedPlan) err = %v; want it reported stale", err)
	}
	if st := f.states(t)[ws]; !strings.Contains(st, `"size": 9`) {
		t.Fatalf("the stale plan changed the state:\n%s", st)
	}
	plansLeft(t, f, "a stale plan")
	again := keptPlan(t, f, `{"size": 4}`)
	if again.Hash == stale.Hash || counts(again) != [4]int{0, 1, 0, 0} {
		t.Fatalf("plan after the out-of-band apply = %+v; want 1 to change with another hash than %s", again, stale.Hash)
	}
	req.ApprovedPlan = again.Hash
	if res, err := f.action.Reconcile(ctx, req); err != nil || res.Outputs["size"] != json.Number("4") {
		t.Fatalf("Reconcile(new ApprovedPlan) = %+v, %v", res, err)
	}
}

// PlanDelete is plan -destroy, counted; Delete with ApprovedPlan applies the kept one. A
// destroy plan is never applied by a Reconcile.
func TestApprovedDelete(t *testing.T) {
	t.Parallel()
	f := setup(t, "gatedelete", config{Module: "testdata/modules/gate"})
	ctx := t.Context()
	const ws = "team-a.Database.db"
	req := request("db", `{"size": 1, "replicas": 2}`)
	if _, err := f.action.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	dp := f.action.(actions.DeletePlanner)
	preview, err := dp.PlanDelete(ctx, req)
	if err != nil || !preview.Counted || counts(preview) != [4]int{0, 0, 3, 0} || preview.Summary != "0 to add, 0 to change, 3 to destroy" {
		t.Fatalf("PlanDelete = %+v, %v; want 3 to destroy", preview, err)
	}
	p, err := dp.PlanDelete(ctx, gateRequest(`{"size": 1, "replicas": 2}`))
	if err != nil || counts(p) != [4]int{0, 0, 3, 0} || p.Hash != preview.Hash {
		t.Fatalf("PlanDelete(KeepPlan) = %+v, %v; want the preview's counts and hash", p, err)
	}
	req.ApprovedPlan = p.Hash
	if _, err := f.action.Reconcile(ctx, req); err == nil || !strings.Contains(err.Error(), "is no longer here") {
		t.Fatalf("Reconcile with a destroy plan's hash: %v; want it refused", err)
	}
	if _, ok := f.states(t)[ws]; !ok {
		t.Fatal("a Reconcile applied the destroy plan")
	}

	p, err = dp.PlanDelete(ctx, gateRequest(`{"size": 1, "replicas": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	req.ApprovedPlan = p.Hash
	res, err := f.action.Delete(ctx, req)
	if err != nil || !res.Done || !strings.Contains(res.Message, "0 added, 0 changed, 3 destroyed") {
		t.Fatalf("Delete(ApprovedPlan) = %+v, %v", res, err)
	}
	if _, ok := f.states(t)[ws]; ok {
		t.Fatal("the workspace is left after Delete(ApprovedPlan)")
	}
	plansLeft(t, f, "Delete(ApprovedPlan)")
}

// A variable that no change shows (a provisioner's command) is part of the plan's hash: an
// approval of "echo harmless" never applies "touch PWNED".
func TestPlanHashCoversWhatRuns(t *testing.T) {
	t.Parallel()
	f := setup(t, "gatecmd", config{Module: "testdata/modules/provisioner"})
	pwned := filepath.Join(t.TempDir(), "PWNED")
	harmless := keptPlan(t, f, `{"cmd": "echo harmless"}`)
	spec := fmt.Sprintf(`{"cmd": "touch %s"}`, pwned)
	evil := keptPlan(t, f, spec)
	if harmless.Hash == evil.Hash {
		t.Fatalf("plans running other commands share hash %s", harmless.Hash)
	}
	req := request("db", spec)
	req.ApprovedPlan = harmless.Hash
	if _, err := f.action.Reconcile(t.Context(), req); err == nil || !strings.Contains(err.Error(), "is no longer here") {
		t.Fatalf("Reconcile(ApprovedPlan of echo harmless) with touch: %v; want it refused", err)
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command of another plan ran: %v", err)
	}
}

// The plan's hash does not change with the call's secrets (and so cannot check a guess of
// one): two plans differing only in a revealed value have one hash, planned by the gate or a
// preview.
func TestPlanHashWithoutSecretsReal(t *testing.T) {
	t.Parallel()
	f := setup(t, "gatesecret", config{Module: "testdata/modules/provisioner"})
	plan := func(pw string) actions.Plan {
		t.Helper()
		req := gateRequest(`{"cmd": "true", "pw": "` + pw + `"}`)
		req.Secrets = []string{pw}
		p, err := f.action.(actions.Planner).Plan(t.Context(), req)
		if err != nil {
			t.Fatalf("Plan(KeepPlan) with secret %s: %v", pw, err)
		}
		return p
	}
	a, b := plan("hunter2"), plan("correct horse battery staple")
	if a.Hash != b.Hash {
		t.Fatalf("plans that differ only in a secret: hashes %s and %s", a.Hash, b.Hash)
	}
	if c := keptPlan(t, f, `{"cmd": "true", "pw": "public"}`); c.Hash == a.Hash {
		t.Fatal("a value that is no secret is left out of the hash")
	}
}

// plansLeft fails the test when the gate module's resource has a plans/ folder: a kept plan
// holds the spec's revealed values.
func plansLeft(t *testing.T, f fixture, after string) {
	t.Helper()
	dir := filepath.Join(f.cfg.WorkDir, "team-a.Database.db", "plans")
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("after %s: plans/ is left (%v, %d files)", after, err, len(entries))
	}
}

// A kept plan that no call applies is removed by the resource's next Reconcile, Observe or
// Delete without ApprovedPlan (a deny, a rejection, a removed policy: the plan holds the
// spec's revealed values).
func TestKeptPlanRemoved(t *testing.T) {
	t.Parallel()
	f := setup(t, "gatedrop", config{Module: "testdata/modules/gate"})
	ctx := t.Context()
	spec := `{"size": 1}`
	if _, err := f.action.Reconcile(ctx, request("db", spec)); err != nil {
		t.Fatal(err)
	}

	keptPlan(t, f, `{"size": 2}`)
	if _, err := f.action.Reconcile(ctx, request("db", spec)); err != nil {
		t.Fatal(err)
	}
	plansLeft(t, f, "a plain Reconcile")

	keptPlan(t, f, `{"size": 2}`)
	if _, err := f.action.(actions.Observer).Observe(ctx, request("db", spec)); err != nil {
		t.Fatal(err)
	}
	plansLeft(t, f, "an Observe")

	if _, err := f.action.(actions.DeletePlanner).PlanDelete(ctx, gateRequest(spec)); err != nil {
		t.Fatal(err)
	}
	// A Delete that stops before it destroys (its lease lost) removes it too.
	lost := request("db", spec)
	lost.Checkpoint = func(context.Context, json.RawMessage) error { return errors.New("lease lost") }
	if _, err := f.action.Delete(ctx, lost); err == nil || err.Error() != "lease lost" {
		t.Fatalf("Delete with its lease lost: %v", err)
	}
	plansLeft(t, f, "a plain Delete that lost its lease")
	if _, ok := f.states(t)["team-a.Database.db"]; !ok {
		t.Fatal("the Delete that lost its lease destroyed the workspace")
	}
	if _, err := f.action.Delete(ctx, request("db", spec)); err != nil {
		t.Fatal(err)
	}
	plansLeft(t, f, "a plain Delete")
}

// A kept plan is applied only by a call of the module it was planned with.
func TestApprovedPlanOtherModule(t *testing.T) {
	t.Parallel()
	mod := moduleCopy(t, "testdata/modules/gate")
	f := setup(t, "gatemodule", config{Module: mod})
	p := keptPlan(t, f, `{"size": 1}`)
	if err := os.WriteFile(filepath.Join(mod, "extra.tf"), []byte("output \"extra\" {\n  value = 1\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	req := request("db", `{"size": 1}`)
	req.ApprovedPlan = p.Hash
	if _, err := f.action.Reconcile(t.Context(), req); err == nil || !strings.Contains(err.Error(), "was planned for another spec or module than this call's") {
		t.Fatalf("Reconcile(ApprovedPlan) after a module change: %v; want it refused", err)
	}
	if _, ok := f.states(t)["team-a.Database.db"]; !ok {
		t.Fatal("no workspace: the gate's plan creates it")
	}
	if st := f.states(t)["team-a.Database.db"]; strings.Contains(st, "terraform_data") {
		t.Fatalf("the refused plan was applied:\n%s", st)
	}
	plansLeft(t, f, "a plan refused for another module")
}

// Only the last kept plan can be applied: plan A, plan B, then ApprovedPlan A is refused, and
// neither is left.
func TestApprovedPlanReplaced(t *testing.T) {
	t.Parallel()
	f := setup(t, "gatereplaced", config{Module: "testdata/modules/gate"})
	ctx := t.Context()
	if _, err := f.action.Reconcile(ctx, request("db", `{"size": 1}`)); err != nil {
		t.Fatal(err)
	}
	a := keptPlan(t, f, `{"size": 2}`)
	b := keptPlan(t, f, `{"size": 3}`)
	if a.Hash == b.Hash {
		t.Fatalf("plans of size 2 and 3 share hash %s", a.Hash)
	}
	req := request("db", `{"size": 2}`)
	req.ApprovedPlan = a.Hash
	if _, err := f.action.Reconcile(ctx, req); err == nil || !strings.Contains(err.Error(), "the approved plan "+a.Hash[:12]+" is no longer here") {
		t.Fatalf("Reconcile(ApprovedPlan A) after plan B: %v; want it refused", err)
	}
	if st := f.states(t)["team-a.Database.db"]; !strings.Contains(st, `"size": 1`) {
		t.Fatalf("state after the refused plan:\n%s", st)
	}
	plansLeft(t, f, "a refused ApprovedPlan")
}

// An approved plan whose apply fails is not kept: the next gate plans again.
func TestApprovedPlanFailedApply(t *testing.T) {
	t.Parallel()
	f := setup(t, "gatefail", config{Module: "testdata/modules/provisioner"})
	p := keptPlan(t, f, `{"cmd": "false"}`)
	req := request("db", `{"cmd": "false"}`)
	req.ApprovedPlan = p.Hash
	if _, err := f.action.Reconcile(t.Context(), req); err == nil || !strings.Contains(err.Error(), "terraform apply: exit status 1") {
		t.Fatalf("Reconcile(ApprovedPlan) of a failing provisioner: %v; want the apply to fail", err)
	}
	plansLeft(t, f, "a failed apply")
}
