package preview

import (
	"context"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// replacer plans a replacement of queue a and an update of the others.
type replacer struct{ planner }

func (r *replacer) Plan(_ context.Context, req actions.Request) (actions.Plan, error) {
	if req.Resource.Name == "a" {
		return actions.Plan{Changes: true, Counted: true, Replace: 1, Summary: "1 to replace"}, nil
	}
	return actions.Plan{Changes: true, Counted: true, Change: 1, Summary: "1 to change"}, nil
}

// TestPreviewGates: each change is decided with the live policies as after merge, on the
// preview's plan (plan.replace), the change's type (a delete) and the head commit's author;
// the comment says which policy would hold it and how. Without policies the result and the
// comment carry no gate.
func TestPreviewGates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	files := func(docs map[string]string) []sources.File {
		var out []sources.File
		for name, data := range docs {
			out = append(out, sources.File{Path: name, Data: []byte(data)})
		}
		return out
	}
	set, err := manifest.NewLoader().Load(files(map[string]string{"types.yaml": typeDoc, "a.yaml": queueDoc("a", 1), "b.yaml": queueDoc("b", 1)}), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	policies, err := policy.Compile([]policy.Policy{
		{Name: "replace-needs-dba", Match: policy.Match{Kinds: []string{"queue"}}, When: "plan.replace > 0 && change.paths == ['spec.size']",
			Action: policy.RequireApproval, Approvals: &policy.Approvals{Count: 1, From: []policy.Principal{{Group: "dba"}}}},
		{Name: "no-deletes", When: "change.type == 'delete'", Action: policy.Deny, Message: "queues are not deleted"},
		{Name: "ada-reviewed", When: "change.type == 'create' && change.author.email == 'ada@example.com'",
			Action: policy.RequireApproval, Approvals: &policy.Approvals{Count: 1, From: []policy.Principal{{Token: "release-bot"}}}},
		{Name: "unselected", Match: policy.Match{Namespaces: []string{"production"}}, Action: policy.Deny},
	})
	if err != nil {
		t.Fatal(err)
	}
	head := &sources.Snapshot{Revision: "pr", Author: sources.Author{Name: "Ada", Email: "ada@example.com"},
		Files: files(map[string]string{"types.yaml": typeDoc, "a.yaml": queueDoc("a", 2), "c.yaml": queueDoc("c", 1)})}
	check := func(live func() *policy.Set, author sources.Author) (Result, map[string]*Gate) {
		t.Helper()
		c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true, MaxPruneFraction: 1,
			Actions: map[string]actions.Action{"planner": &replacer{}}, Policies: live}
		snap := *head
		snap.Author = author
		return checkGates(t, c, &snap, Origin{})
	}

	res, gates := check(func() *policy.Set { return policies }, head.Author)
	if len(gates) != 3 {
		t.Fatalf("changes %+v", res.Changes)
	}
	if g := gates["change a"]; g == nil || g.Decision != "requireApproval" || g.Policy != "replace-needs-dba" ||
		g.Text() != "needs 1 approval from group dba (policy replace-needs-dba)" {
		t.Errorf("gate of a, replaced: %+v", g)
	}
	if g := gates["delete b"]; g == nil || g.Text() != "denied by policy no-deletes: queues are not deleted" {
		t.Errorf("gate of b, deleted: %+v", g)
	}
	if g := gates["add c"]; g == nil || g.Text() != "needs 1 approval from token release-bot (policy ada-reviewed)" {
		t.Errorf("gate of c, Ada's: %+v", g)
	}
	body := RenderComment(Comment{Source: "infra", HeadSHA: strings.Repeat("a", 40), Result: res})
	for _, want := range []string{"1 to replace; ⏸ needs 1 approval from group dba (policy replace-needs-dba) |",
		"⛔ After merge: denied by policy no-deletes: queues are not deleted",
		"Policies: after merge, of the changes below, 2 would wait for approval and 1 would be denied."} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks %q:\n%s", want, body)
		}
	}

	if _, gates := check(func() *policy.Set { return policies }, sources.Author{Name: "Grace"}); gates["add c"] != nil {
		t.Errorf("another author's create is gated: %+v", gates["add c"])
	}
	for name, live := range map[string]func() *policy.Set{"no func": nil, "no policies": func() *policy.Set { return nil }} {
		res, gates := check(live, head.Author)
		for op, g := range gates {
			if g != nil {
				t.Errorf("%s: %s gated: %+v", name, op, g)
			}
		}
		if body := RenderComment(Comment{Source: "infra", HeadSHA: strings.Repeat("a", 40), Result: res}); strings.Contains(body, "Policies:") || strings.Contains(body, "After merge") {
			t.Errorf("%s: the comment speaks of policies:\n%s", name, body)
		}
	}
}

// previewGates applies r1 (the type, queues a and b of size 1), previews a pull request
// whose files are docs (with the type) from origin from, with policies and actions acts
// (the planner replacer when nil), and returns each change's gate by "op name".
func previewGates(t *testing.T, policies []policy.Policy, acts map[string]actions.Action, from Origin, docs map[string]string) (Result, map[string]*Gate) {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	files := func(docs map[string]string) []sources.File {
		out := []sources.File{{Path: "types.yaml", Data: []byte(typeDoc)}}
		for name, data := range docs {
			out = append(out, sources.File{Path: name, Data: []byte(data)})
		}
		return out
	}
	set, err := manifest.NewLoader().Load(files(map[string]string{"a.yaml": queueDoc("a", 1), "b.yaml": queueDoc("b", 1)}), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	compiled, err := policy.Compile(policies)
	if err != nil {
		t.Fatal(err)
	}
	if acts == nil {
		acts = map[string]actions.Action{"planner": &replacer{}}
	}
	c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true, MaxPruneFraction: 1,
		Actions: acts, Policies: func() *policy.Set { return compiled }}
	return checkGates(t, c, &sources.Snapshot{Revision: "pr", Author: sources.Author{Name: "Ada", Email: "ada@example.com"}, Files: files(docs)}, from)
}

// checkGates previews snap from origin from with c and returns each change's gate by "op
// name".
func checkGates(t *testing.T, c *Checker, snap *sources.Snapshot, from Origin) (Result, map[string]*Gate) {
	t.Helper()
	res, _, err := c.CheckFrom(context.Background(), snap, from)
	if err != nil {
		t.Fatal(err)
	}
	gates := map[string]*Gate{}
	for _, ch := range res.Changes {
		gates[ch.Op+" "+ch.Name] = ch.Gate
	}
	return res, gates
}

// change.paths of a created resource are its spec's top-level keys, as the reconciler gives
// them: a rule on them forecasts the gate of a create.
func TestPreviewGatePathsOfACreate(t *testing.T) {
	t.Parallel()
	_, gates := previewGates(t, []policy.Policy{{Name: "size-needs-dba", When: "'spec.size' in change.paths",
		Action: policy.RequireApproval, Approvals: &policy.Approvals{Count: 1, From: []policy.Principal{{Group: "dba"}}}}},
		nil, Origin{}, map[string]string{"a.yaml": queueDoc("a", 1), "b.yaml": queueDoc("b", 1), "c.yaml": queueDoc("c", 1)})
	if g := gates["add c"]; g == nil || g.Decision != "requireApproval" || g.Policy != "size-needs-dba" {
		t.Errorf("gate of c, created: %+v (gates %v)", g, gates)
	}
}

// A deny without a message says once which policy denies.
func TestPreviewGateDenyWithoutMessage(t *testing.T) {
	t.Parallel()
	res, gates := previewGates(t, []policy.Policy{{Name: "nomsg", When: "change.type == 'delete'", Action: policy.Deny}},
		nil, Origin{}, map[string]string{"a.yaml": queueDoc("a", 1)})
	g := gates["delete b"]
	if g == nil || g.Text() != "denied by policy nomsg" || g.Message != "" {
		t.Fatalf("gate of b, deleted: %+v", g)
	}
	body := RenderComment(Comment{Source: "infra", HeadSHA: strings.Repeat("a", 40), Result: res})
	if !strings.Contains(body, "⛔ After merge: denied by policy nomsg\n") {
		t.Errorf("comment:\n%s", body)
	}
}

// deletePlanner plans deletes too, as terraform does; busyPlanner's plans give way to a
// plan in progress.
type (
	deletePlanner struct{ replacer }
	busyPlanner   struct{ planner }
)

func (*deletePlanner) PlanDelete(context.Context, actions.Request) (actions.Plan, error) {
	return actions.Plan{Changes: true, Counted: true, Destroy: 1}, nil
}

func (*busyPlanner) Plan(context.Context, actions.Request) (actions.Plan, error) {
	return actions.Plan{}, actions.ErrPlanInProgress
}

// A policy that reads the plan decides a change the preview has no plan for only when the
// reconciler would have none either (the action does not plan it); otherwise the gate is
// undecided (a delete by an action that plans deletes, a plan given way, a fork's plan
// skipped), not silently allowed.
func TestPreviewGateUndecidedWithoutPlan(t *testing.T) {
	t.Parallel()
	policies := []policy.Policy{{Name: "no-blind-deletes", When: "change.type == 'delete' && !plan.available", Action: policy.Deny},
		{Name: "destroy-needs-dba", When: "plan.destroy > 0 || plan.replace > 0", Action: policy.RequireApproval,
			Approvals: &policy.Approvals{Count: 1, From: []policy.Principal{{Group: "dba"}}}}}
	pr := map[string]string{"a.yaml": queueDoc("a", 2)} // a changes, b is deleted
	const undecided = "policy no-blind-deletes reads the plan, which this preview has not got: decided after merge"
	for _, tc := range []struct {
		name         string
		act          actions.Action
		from         Origin
		wantA, wantB string // Text of the gates ("" for none)
		wantLine     string
	}{
		{"the action plans neither deletes nor busy", &replacer{}, Origin{},
			"needs 1 approval from group dba (policy destroy-needs-dba)", "denied by policy no-blind-deletes", "1 would wait for approval and 1 would be denied"},
		{"the action plans deletes", &deletePlanner{}, Origin{},
			"needs 1 approval from group dba (policy destroy-needs-dba)", undecided, "1 would wait for approval and 1 would be decided on the plan made after merge"},
		{"a plan in progress", &busyPlanner{}, Origin{}, undecided, "denied by policy no-blind-deletes", "1 would be denied and 1 would be decided on the plan made after merge"},
		{"a fork's plan skipped", &ciPlanner{}, Origin{Fork: true}, undecided, "denied by policy no-blind-deletes", "1 would be denied and 1 would be decided on the plan made after merge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, gates := previewGates(t, policies, map[string]actions.Action{"planner": tc.act}, tc.from, pr)
			for op, want := range map[string]string{"change a": tc.wantA, "delete b": tc.wantB} {
				if g := gates[op]; g == nil || g.Text() != want {
					t.Errorf("gate of %s: %+v, want %q", op, g, want)
				} else if want == undecided && (g.Decision != "undecided" || g.Policy != "no-blind-deletes") {
					t.Errorf("gate of %s: %+v", op, g)
				}
			}
			body := RenderComment(Comment{Source: "infra", HeadSHA: strings.Repeat("a", 40), Result: res})
			if !strings.Contains(body, "of the changes below, "+tc.wantLine+".") {
				t.Errorf("comment:\n%s", body)
			}
		})
	}
}

// A pull request from a fork is told which policy holds a change and how, not the policy's
// message nor who may approve.
func TestPreviewGateOfAFork(t *testing.T) {
	t.Parallel()
	policies := []policy.Policy{{Name: "no-deletes", When: "change.type == 'delete'", Action: policy.Deny, Message: "ask ops@example.com"},
		{Name: "changes-need-dba", When: "change.type == 'update'", Action: policy.RequireApproval,
			Approvals: &policy.Approvals{Count: 1, From: []policy.Principal{{Group: "internal-dba-team"}}}}}
	for _, fork := range []bool{false, true} {
		res, gates := previewGates(t, policies, nil, Origin{Fork: fork}, map[string]string{"a.yaml": queueDoc("a", 2)})
		a, b := gates["change a"], gates["delete b"]
		if a == nil || a.Decision != "requireApproval" || a.Policy != "changes-need-dba" || b == nil || b.Decision != "deny" || b.Policy != "no-deletes" {
			t.Fatalf("fork %v: gates %+v, %+v", fork, a, b)
		}
		body := RenderComment(Comment{Source: "infra", HeadSHA: strings.Repeat("a", 40), Result: res})
		told := strings.Contains(body, "internal-dba-team") || strings.Contains(body, "ops@example.com")
		if told != !fork {
			t.Errorf("fork %v: comment tells who approves or the message: %v\n%s", fork, told, body)
		}
		if fork && (a.Text() != "needs approval (policy changes-need-dba)" || b.Text() != "denied by policy no-deletes" ||
			a.Message != "" || a.Requires != nil || b.Message != "") {
			t.Errorf("fork: gates %+v, %+v", a, b)
		}
	}
}
