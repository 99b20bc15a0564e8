package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
)

// gateScript is an exec action for the approval tests: it logs each call (operation and
// request) to the file $1 and answers a plan with counts: a queue's plan destroys
// spec.drop partitions, and its hash names them.
const gateScript = `#!/bin/sh
req=$(cat)
printf '%s %s\n' "$TRUEUP_OPERATION" "$req" >> "$1"
drop=$(printf '%s' "$req" | sed -n 's/.*"drop": *\([0-9][0-9]*\).*/\1/p')
[ -n "$drop" ] || drop=0
if [ "$TRUEUP_OPERATION" = plan ]; then
  printf '{"changes": true, "summary": "%s to destroy", "plan": "drop %s partitions of %s", "add": 0, "change": 1, "destroy": %s, "replace": 0, "hash": "queue-drop-%s"}\n' \
    "$drop" "$drop" "$TRUEUP_NAME" "$drop" "$drop"
fi
exit 0
`

// calls are the lines of the gate script's log for the resource name whose operation is op
// (every operation for "").
func calls(t *testing.T, log, op, name string) []string {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if (op == "" || strings.HasPrefix(l, op+" ")) && strings.Contains(l, `"name":"`+name+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// TestApprovalExecEndToEnd: the gate with plugins other than terraform, with the real binary:
//   - an exec action whose plan reports counts: a queue's change that destroys nothing is
//     applied at once; one that destroys partitions waits with the plan's counts and the
//     plugin's hash (the plan asked with keepPlan), and once dba approves, the reconcile is
//     called with that hash as approvedPlan; a later one that dba rejects (the CLI) Stalls
//     with the rejection and is never applied;
//   - an exec action that cannot plan (no plan: true): a policy on !plan.available holds the
//     cache's creation (plan.available false, hash "unplanned"; the command never started),
//     until dba approves.
func TestApprovalExecEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, log := filepath.Join(dir, "gate.sh"), filepath.Join(dir, "calls.log")
	writeTestFile(t, script, gateScript)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	queue := func(drop int) string {
		return fmt.Sprintf("apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: jobs, namespace: production}\nspec: {drop: %d}\n", drop)
	}
	g := startGate(t, map[string]string{
		"queue-type.yaml": manifesttest.TypeDoc("Queue", "mq.example.com", "{type: object, properties: {drop: {type: integer}}}", "planned"),
		"cache-type.yaml": manifesttest.TypeDoc("Cache", "mq.example.com", "{type: object}", "unplanned"),
		"jobs.yaml":       queue(0),
		"sessions.yaml":   "apiVersion: mq.example.com/v1\nkind: Cache\nmetadata: {name: sessions, namespace: production}\nspec: {}\n",
	}, fmt.Sprintf(`actions:
  - {name: planned, type: exec, config: {command: [%q, %q], plan: true}}
  - {name: unplanned, type: exec, config: {command: [%q, %q]}}`, script, log, script, log), `policies:
  - name: queue-drops-need-dba
    match: {kinds: [Queue]}
    when: "plan.destroy > 0"
    action: requireApproval
    approvals: {from: [{token: dba}]}
  - name: unplanned-needs-dba
    match: {kinds: [Cache]}
    when: "!plan.available"
    action: requireApproval
    approvals: {from: [{token: dba}]}
    message: "a change trueup cannot plan needs a DBA"
`)
	const jobs, sessions = "production/Queue/jobs", "production/Cache/sessions"

	// The queue: planned with counts, nothing destroyed, applied at once.
	g.eventually("jobs Ready", func() (bool, string) { return g.resource(jobs).ready() })
	if plans := calls(t, log, "plan", "jobs"); len(plans) == 0 || !strings.Contains(plans[0], `"keepPlan":true`) {
		t.Errorf("the gate's plan of jobs: %q, want one asked with keepPlan", plans)
	}

	// The cache: no plan, held by the policy on !plan.available.
	g.eventually("sessions waiting for approval", func() (bool, string) { return g.resource(sessions).waiting() })
	a := g.resource(sessions).Approval
	if a.Policy != "unplanned-needs-dba" || a.Plan.Available || a.PlanHash != "unplanned" || a.ChangeType != "create" ||
		!strings.Contains(a.Message, "a change trueup cannot plan needs a DBA") {
		t.Errorf("the cache's approval request: %+v", a)
	}
	if got := calls(t, log, "", "sessions"); len(got) != 0 {
		t.Errorf("the action of a waiting cache was called: %q", got)
	}
	if code, body := g.vote("approve", sessions, g.ci, "", ""); code != 403 {
		t.Errorf("approval of the cache by ci: %d %s, want 403", code, body)
	}
	if out, err := g.cli(g.dba, "approve", sessions, "--reason", "a cache holds nothing to lose"); err != nil {
		t.Fatalf("trueup approve of the cache: %v\n%s", err, out)
	}
	g.eventually("sessions Ready once approved", func() (bool, string) { return g.resource(sessions).ready() })
	if st, reason, msg := g.resource(sessions).condition("Approved"); st != "True" || reason != "Approved" || !strings.Contains(msg, "dba") {
		t.Errorf("the cache's Approved=%s %s %q, want True Approved by dba", st, reason, msg)
	}

	// The queue loses partitions: its plan's counts make it wait.
	g.commit("drop two partitions", map[string]string{"jobs.yaml": queue(2)})
	g.eventually("jobs waiting for approval", func() (bool, string) { return g.resource(jobs).waiting() })
	a = g.resource(jobs).Approval
	if a.Policy != "queue-drops-need-dba" || !a.Plan.Available || a.Plan.Destroy != 2 || a.Plan.Change != 1 || a.PlanHash != "queue-drop-2" ||
		a.Plan.Summary != "2 to destroy" || !strings.Contains(a.Plan.Text, "drop 2 partitions of jobs") {
		t.Errorf("the queue's approval request: %+v", a)
	}
	for _, c := range calls(t, log, "reconcile", "jobs") {
		if strings.Contains(c, `"drop":2`) {
			t.Errorf("the waiting change reached the action: %s", c)
		}
	}
	g.eventually("the ApprovalRequired notification", func() (bool, string) {
		return g.hook.received("jobs", "ApprovalRequired", "queue-drops-need-dba")
	})
	if code, body := g.vote("approve", jobs, g.dba, "partitions are empty", "queue-drop-2"); code != 200 {
		t.Fatalf("approval by dba: %d %s", code, body)
	}
	g.eventually("jobs Ready at generation 2", func() (bool, string) {
		r := g.resource(jobs)
		ok, s := r.ready()
		return ok && r.Metadata.Generation == 2, s
	})
	var applied []string
	for _, c := range calls(t, log, "reconcile", "jobs") {
		if strings.Contains(c, `"drop":2`) {
			applied = append(applied, c)
		}
	}
	if len(applied) != 1 || !strings.Contains(applied[0], `"approvedPlan":"queue-drop-2"`) {
		t.Errorf("the approved reconcile: %q, want one call with approvedPlan queue-drop-2", applied)
	}

	// Rejected: Stalled with the approver and the reason, never applied.
	g.commit("drop five partitions", map[string]string{"jobs.yaml": queue(5)})
	g.eventually("jobs waiting for the second approval", func() (bool, string) {
		r := g.resource(jobs)
		ok, s := r.waiting()
		return ok && r.Approval.PlanHash == "queue-drop-5", s
	})
	if out, err := g.cli(g.dba, "reject", jobs, "--reason", "partition 4 still has messages"); err != nil {
		t.Fatalf("trueup reject: %v\n%s", err, out)
	}
	g.eventually("jobs Stalled by the rejection", func() (bool, string) {
		r := g.resource(jobs)
		st, reason, msg := r.condition("Approved")
		stalled, _, _ := r.condition("Stalled")
		return st == "False" && reason == "Rejected" && stalled == "True" && strings.Contains(msg, "rejected by token:dba: partition 4 still has messages"),
			fmt.Sprintf("phase %s, Approved=%s %s %q, Stalled=%s", r.Status.Phase, st, reason, msg, stalled)
	})
	g.eventually("the Rejected notification", func() (bool, string) { return g.hook.received("jobs", "Rejected") })
	for _, c := range calls(t, log, "reconcile", "jobs") {
		if strings.Contains(c, `"drop":5`) {
			t.Errorf("the rejected change reached the action: %s", c)
		}
	}
}
