package status

import (
	"testing"
	"time"
)

// TestSourceApplied names every transition of a source's Ready, PruneSkipped and Pruned
// conditions when a revision is applied.
func TestSourceApplied(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	skipped := Condition{Type: PruneSkipped, Status: True, Reason: "EmptyRender", Message: "old"}
	pruned := Condition{Type: Pruned, Status: True, Reason: "Pruned", Message: "revision r0 deleted 2 resources"}
	legacy := Condition{Type: Pruned, Status: False, Reason: "EmptyRender"}
	failed := Condition{Type: Ready, Status: False, Reason: "ValidationFailed", Message: "bad"}
	rev := "0123456789abcdef0123456789abcdef01234567"
	refused := SourceApply{Revision: rev, Types: 2, Resources: 3, PruneSkipped: "TooManyDeletions", PruneMessage: "revision r1 would delete 3 of 4 resources"}
	clean := SourceApply{Revision: rev, Types: 2, Resources: 3}
	deleted := clean
	deleted.Deleted = 4
	for _, tc := range []struct {
		name string
		in   []Condition
		a    SourceApply
		want map[string]string // type → status/reason; absent types must be gone
	}{
		{"first apply", nil, clean, map[string]string{Ready: "True/Succeeded"}},
		{"a failure is over", []Condition{failed}, clean, map[string]string{Ready: "True/Succeeded"}},
		{"refusal sets PruneSkipped", nil, refused, map[string]string{Ready: "True/Succeeded", PruneSkipped: "True/TooManyDeletions"}},
		{"refusal keeps the last prune", []Condition{pruned}, refused, map[string]string{Ready: "True/Succeeded", PruneSkipped: "True/TooManyDeletions", Pruned: "True/Pruned"}},
		{"refusal replaces an older refusal", []Condition{skipped}, refused, map[string]string{Ready: "True/Succeeded", PruneSkipped: "True/TooManyDeletions"}},
		{"a normal prune clears it", []Condition{skipped}, deleted, map[string]string{Ready: "True/Succeeded", Pruned: "True/Pruned"}},
		{"nothing to delete clears it", []Condition{skipped, pruned}, clean, map[string]string{Ready: "True/Succeeded", Pruned: "True/Pruned"}},
		{"Pruned=False of older versions goes", []Condition{legacy}, clean, map[string]string{Ready: "True/Succeeded"}},
		{"Pruned=False of older versions becomes PruneSkipped", []Condition{legacy}, refused, map[string]string{Ready: "True/Succeeded", PruneSkipped: "True/TooManyDeletions"}},
	} {
		got := SourceApplied(tc.in, tc.a, now)
		have := map[string]string{}
		for _, c := range got {
			have[c.Type] = c.Status + "/" + c.Reason
		}
		if len(have) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, have, tc.want)
			continue
		}
		for k, v := range tc.want {
			if have[k] != v {
				t.Errorf("%s: %v, want %v", tc.name, have, tc.want)
			}
		}
		if c, _ := Get(got, Ready); c.Message != "applied revision 0123456789ab: 2 types, 3 resources" {
			t.Errorf("%s: Ready message %q", tc.name, c.Message)
		}
		if c, ok := Get(got, PruneSkipped); ok && c.Message != tc.a.PruneMessage {
			t.Errorf("%s: PruneSkipped message %q", tc.name, c.Message)
		}
		if c, ok := Get(got, Pruned); ok && tc.a.Deleted > 0 && c.Message != "revision 0123456789ab deleted 4 resources" {
			t.Errorf("%s: Pruned message %q", tc.name, c.Message)
		}
	}
}

func TestSourceFailed(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	skipped := Condition{Type: PruneSkipped, Status: True, Reason: "EmptyRender"}
	got := SourceFailed([]Condition{{Type: Ready, Status: True, Reason: "Succeeded"}, skipped}, "FetchFailed", "no route", now)
	if c, _ := Get(got, Ready); c.Status != False || c.Reason != "FetchFailed" || c.Message != "no route" || !c.LastTransitionTime.Equal(now) {
		t.Errorf("Ready %+v", c)
	}
	if _, ok := Get(got, PruneSkipped); !ok {
		t.Error("a failure removed PruneSkipped")
	}
}

// TestNewSourceFailure: a failure is told once, not once per poll.
func TestNewSourceFailure(t *testing.T) {
	t.Parallel()
	shown := []Condition{{Type: Ready, Status: False, Reason: "FetchFailed", Message: "m"}}
	for _, tc := range []struct {
		name                     string
		before                   []Condition
		last, message, attempted string
		want                     bool
	}{
		{"the same failure of the same revision", shown, "r1", "m", "r1", false},
		{"another message", shown, "r1", "m2", "r1", true},
		{"another revision", shown, "r1", "m", "r2", true},
		{"the source was ready", []Condition{{Type: Ready, Status: True, Message: "m"}}, "r1", "m", "r1", true},
		{"no Ready yet", nil, "", "m", "", true},
	} {
		if got := NewSourceFailure(tc.before, tc.last, tc.message, tc.attempted); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSourceRecovered(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rev := "0123456789abcdef0123456789abcdef01234567"
	ready := []Condition{{Type: Ready, Status: True, Reason: "Succeeded", Message: "applied"}}
	if got, changed := SourceRecovered(ready, rev, now); changed || got[0].Message != "applied" {
		t.Errorf("a ready source recovered: %v %v", got, changed)
	}
	failed := []Condition{{Type: Ready, Status: False, Reason: "FetchFailed"}}
	got, changed := SourceRecovered(failed, rev, now)
	if c, _ := Get(got, Ready); !changed || c.Status != True || c.Reason != "Succeeded" || c.Message != "revision 0123456789ab is applied and is the source's head again" {
		t.Errorf("a failed source: %+v %v", c, changed)
	}
}
