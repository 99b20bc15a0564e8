package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

func TestScrubAttemptKeepsJSONValid(t *testing.T) {
	scrub := actions.Scrubber([]string{"s3cr3t-pw", `quo"te-secret`})
	a := attempt{
		err:   actions.Terminal(errors.New("login with s3cr3t-pw refused")),
		drift: "password s3cr3t-pw differs",
		res: actions.Result{
			Message:    "connected with s3cr3t-pw",
			State:      json.RawMessage(`{"jobID":"j-54321","done":true,"port":5432,"dsn":"pg://u:s3cr3t-pw@h","s3cr3t-pw":1,"q":"quo\"te-secret"}`),
			Outputs:    map[string]any{"ready": true, "url": "https://u:s3cr3t-pw@db", "list": []any{"s3cr3t-pw", 1.5}},
			Conditions: []actions.Condition{{Type: "Custom", Status: "True", Reason: "R", Message: "pw s3cr3t-pw"}},
		},
	}
	scrubAttempt(&a, scrub)
	var state map[string]any
	if err := json.Unmarshal(a.res.State, &state); err != nil {
		t.Fatalf("state no longer JSON: %s", a.res.State)
	}
	if state["jobID"] != "j-54321" || state["done"] != true || state["dsn"] != "pg://u:***@h" || state["***"] == nil || state["q"] != "***" {
		t.Fatalf("state = %s", a.res.State)
	}
	if a.res.Outputs["ready"] != true || a.res.Outputs["url"] != "https://u:***@db" || a.res.Outputs["list"].([]any)[0] != "***" {
		t.Fatalf("outputs = %v", a.res.Outputs)
	}
	for _, s := range []string{a.err.Error(), a.drift, a.res.Message, a.res.Conditions[0].Message} {
		if s == "" || strings.Contains(s, "s3cr3t") {
			t.Fatalf("not scrubbed: %q", s)
		}
	}
	if !actions.IsTerminal(a.err) {
		t.Fatal("scrubbing lost the error's terminal mark")
	}
}

type panicking struct{}

func (panicking) Reconcile(context.Context, actions.Request) (actions.Result, error) {
	panic("boom with the spec: s3cr3t-pw")
}
func (panicking) Delete(context.Context, actions.Request) (actions.Result, error) { panic("boom") }

func TestPanickingActionFailsTheAttempt(t *testing.T) {
	r := &Reconciler{log: slog.New(slog.DiscardHandler)}
	for _, deleting := range []bool{false, true} {
		a := attempt{op: "reconcile"}
		r.call(context.Background(), panicking{}, "panicking", actions.Request{}, deleting, &a)
		if a.err == nil || strings.Contains(a.err.Error(), "s3cr3t") || !strings.Contains(a.err.Error(), "panicked") {
			t.Fatalf("deleting=%v: err = %v", deleting, a.err)
		}
	}
}
