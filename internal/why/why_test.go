package why

import (
	"reflect"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/status"
)

func TestBlocking(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	cond := func(typ, st, reason, msg string) status.Condition {
		return status.Condition{Type: typ, Status: st, Reason: reason, Message: msg, LastTransitionTime: at(-5)}
	}
	freeze := changewindow.Verdict{Closed: true, Window: "freeze", Kind: changewindow.Deny, Until: at(60), AllowOperators: true}
	maint := changewindow.Verdict{Closed: true, Window: "maint", Kind: changewindow.Allow, Until: at(30)}
	never := changewindow.Verdict{Closed: true, Window: "never", Kind: changewindow.Allow, Forever: true}
	retryAt := at(2)
	cases := []struct {
		name string
		in   Input
		want []Blocker
	}{
		{"nothing holds it", Input{Conditions: []status.Condition{cond(status.Ready, status.True, status.ReasonReconciled, "")}}, nil},
		{"suspended", Input{Suspended: true, Conditions: []status.Condition{cond(status.Suspended, status.True, status.ReasonSuspended, "suspended by ann: resize")}},
			[]Blocker{{Suspended, "suspended by ann: resize", at(-5), time.Time{}}}},
		{"window holding a change", Input{Window: freeze, Conditions: []status.Condition{cond(status.Reconciling, status.True, status.ReasonWindowClosed, "held")}},
			[]Blocker{{Window, freeze.Message(), at(-5), at(60)}}},
		{"window over work in flight", Input{Window: freeze, Conditions: []status.Condition{cond(status.Reconciling, status.True, status.ReasonProgressing, "")}}, nil},
		{"window with nothing to change", Input{Window: freeze, Conditions: []status.Condition{cond(status.Reconciling, status.False, status.ReasonReconciled, "")}}, nil},
		{"window that never opens", Input{Window: never, Conditions: []status.Condition{cond(status.Reconciling, status.True, status.ReasonWindowClosed, "held")}},
			[]Blocker{{Window, never.Message(), at(-5), time.Time{}}}},
		{"dependency", Input{Conditions: []status.Condition{cond(status.Reconciling, status.True, status.ReasonWaitingForDependency, "")},
			Dependencies: []Dep{{Name: "prod/Network/vpc", Exists: true, Phase: "Pending"}, {Name: "prod/Bucket/gone"}}},
			[]Blocker{{Dependency, "waits for dependency prod/Network/vpc to be Ready (it is Pending)", at(-5), time.Time{}},
				{Dependency, "waits for dependency prod/Bucket/gone, which does not exist", at(-5), time.Time{}}}},
		{"dependency with nothing pending", Input{Conditions: []status.Condition{cond(status.Ready, status.True, status.ReasonReconciled, ""),
			cond(status.Reconciling, status.False, status.ReasonReconciled, "")},
			Dependencies: []Dep{{Name: "prod/Network/vpc", Exists: true, Phase: "Failed", Window: maint}}}, nil},
		{"dependency without a condition", Input{Dependencies: []Dep{{Name: "prod/Network/vpc", Exists: true, Phase: "Failed"}}}, nil},
		{"hidden dependency", Input{Window: maint,
			Conditions:   []status.Condition{cond(status.Reconciling, status.True, status.ReasonWaitingForDependency, "")},
			Dependencies: []Dep{{Name: "other/Network/vpc", Hidden: true}}},
			[]Blocker{{Window, maint.Message(), time.Time{}, at(30)},
				{Dependency, "waits for dependency other/Network/vpc to be Ready", at(-5), time.Time{}}}},
		// The acceptance case: the window opens after the dependency's window: window first.
		{"dependency held by a window inside a freeze", Input{Window: freeze,
			Conditions:   []status.Condition{cond(status.Reconciling, status.True, status.ReasonWaitingForDependency, "")},
			Dependencies: []Dep{{Name: "prod/Network/vpc", Exists: true, Phase: "Pending", Window: maint}}},
			[]Blocker{{Window, freeze.Message(), time.Time{}, at(60)},
				{Dependency, "waits for dependency prod/Network/vpc to be Ready (it is Pending); change window maint (allow) holds it until " + maint.Until.Format(time.RFC3339), at(-5), at(30)}}},
		{"dependency held longer than the resource's window", Input{Window: maint,
			Conditions:   []status.Condition{cond(status.Reconciling, status.True, status.ReasonWindowClosed, "")},
			Dependencies: []Dep{{Name: "prod/Network/vpc", Exists: true, Phase: "Ready", Window: freeze}}},
			[]Blocker{{Dependency, "waits for dependency prod/Network/vpc to be Ready (it is Ready); change window freeze (deny) holds it until " + freeze.Until.Format(time.RFC3339), time.Time{}, at(60)},
				{Window, maint.Message(), at(-5), at(30)}}},
		{"approval", Input{Conditions: []status.Condition{cond(status.Approved, status.False, status.ReasonApprovalRequired, "policy prod-changes needs 1 approval of group:sre")}},
			[]Blocker{{Approval, "policy prod-changes needs 1 approval of group:sre", at(-5), time.Time{}}}},
		{"denied", Input{Conditions: []status.Condition{cond(status.Approved, status.False, status.ReasonPolicyDenied, "no deletes in prod"),
			cond(status.Stalled, status.True, status.ReasonPolicyDenied, "no deletes in prod")}},
			[]Blocker{{PolicyDenied, "no deletes in prod", at(-5), time.Time{}}}},
		{"rejected", Input{Conditions: []status.Condition{cond(status.Approved, status.False, status.ReasonRejected, "rejected by bob"),
			cond(status.Stalled, status.True, status.ReasonRejected, "rejected by bob")}},
			[]Blocker{{Rejected, "rejected by bob", at(-5), time.Time{}}}},
		{"backoff", Input{Now: t0, Attempt: 3, RunAt: &retryAt, Conditions: []status.Condition{cond(status.Reconciling, status.True, status.ReasonRetrying, "timeout")}},
			[]Blocker{{Backoff, "retry 3 after a failure: timeout", at(-5), at(2)}}},
		{"backoff due already", Input{Now: at(3), Attempt: 3, RunAt: &retryAt}, nil},
		// A held change keeps its attempt count and is due when the window opens: no backoff.
		{"window holding a change after failures", Input{Now: t0, Window: freeze, Attempt: 2, RunAt: &freeze.Until,
			Conditions: []status.Condition{cond(status.Reconciling, status.True, status.ReasonWindowClosed, "held")}},
			[]Blocker{{Window, freeze.Message(), at(-5), at(60)}}},
		{"attempt count without a retry", Input{Now: t0, Attempt: 2, RunAt: &retryAt,
			Conditions: []status.Condition{cond(status.Reconciling, status.False, status.ReasonRetrying, "")}}, nil},
		{"stalled", Input{Now: t0, Attempt: 9, RunAt: &retryAt, Conditions: []status.Condition{cond(status.Stalled, status.True, status.ReasonStalled, "gave up")}},
			[]Blocker{{Stalled, "gave up", at(-5), time.Time{}}}},
		{"source suspended", Input{Source: "infra", SourceSuspended: true},
			[]Blocker{{SourceSuspended, "source infra is suspended: no revision is applied", time.Time{}, time.Time{}}}},
		{"source pinned", Input{Source: "infra", Pin: &Pin{Revision: "0123456789abcdef0123", Actor: "user:ann", Reason: "INC-7", At: at(-1)}},
			[]Blocker{{SourcePinned, "source infra is pinned at 0123456789ab by user:ann: INC-7", at(-1), time.Time{}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Blocking(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Blocking =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
