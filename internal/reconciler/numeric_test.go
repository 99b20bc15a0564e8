package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/status"
)

// stateAction returns each resource's state as written in states ({"n":N}), Done, with N as
// its output n.
type stateAction struct{ states map[string]string }

func (a *stateAction) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	state := a.states[req.Resource.Name]
	return actions.Result{Done: true, State: json.RawMessage(state), Outputs: map[string]any{"n": json.Number(state[len(`{"n":`) : len(state)-1])}}, nil
}

func (a *stateAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

// A plugin's state holding a number PostgreSQL cannot store fails its attempt, saying so,
// before the result writer: the other resource's result is written too, and no batch fails.
func TestStateWithNumberPostgresCannotStore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openGated(ctx, t)
	var logs logbuf.Buffer
	act := &stateAction{states: map[string]string{"first": `{"n":1e200000}`, "second": `{"n":12}`}}
	r := New(st, map[string]actions.Action{"act": act}, Options{Replica: "r1", Workers: 2, LeaseTTL: time.Minute},
		slog.New(slog.NewTextHandler(&logs, nil)))
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "both results written", func() (bool, string) {
		first, err1 := st.GetResource(ctx, "default", "Widget", "first")
		second, err2 := st.GetResource(ctx, "default", "Widget", "second")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		ready, _ := status.Get(first.Status.Conditions, status.Ready)
		return second.Status.Phase == status.PhaseReady && ready.Status == status.False,
			first.Status.Phase + " " + ready.Reason + ": " + first.Status.Message + "; " + second.Status.Phase
	})
	first, _ := st.GetResource(ctx, "default", "Widget", "first")
	if ready, _ := status.Get(first.Status.Conditions, status.Ready); !strings.Contains(ready.Message, "the action's state was not stored: a number beyond PostgreSQL's numeric (more than 131072 digits before the decimal point)") {
		t.Errorf("first: Ready %s/%s %q, want why the state was not stored", ready.Status, ready.Reason, ready.Message)
	}
	second, _ := st.GetResource(ctx, "default", "Widget", "second")
	if string(second.Status.Outputs) != `{"n": 12}` {
		t.Errorf("second: outputs %s", second.Status.Outputs)
	}
	if strings.Contains(logs.String(), "write results as a batch failed") {
		t.Errorf("a batch failed:\n%s", logs.String())
	}
}

// unstorableState checks the state that is written: not a failed call's (the stored state
// stays), nor a finished delete's (the row goes).
func TestUnstorableState(t *testing.T) {
	t.Parallel()
	bad, good := json.RawMessage(`{"n":1e200000}`), json.RawMessage(`{"n":1}`)
	const why = "a number beyond PostgreSQL's numeric (more than 131072 digits before the decimal point)"
	cases := []struct {
		name string
		a    attempt
		want string
	}{
		{"a reconcile's state", attempt{op: "reconcile", res: actions.Result{Done: true, State: bad}}, why},
		{"a reconcile in progress", attempt{op: "reconcile", res: actions.Result{State: bad}}, why},
		{"a state that fits", attempt{op: "reconcile", res: actions.Result{Done: true, State: good}}, ""},
		{"no state", attempt{op: "reconcile", res: actions.Result{Done: true}}, ""},
		{"a failed call", attempt{op: "reconcile", err: errors.New("boom"), res: actions.Result{State: bad}}, ""},
		{"a finished delete", attempt{op: "delete", res: actions.Result{Done: true, State: bad}}, ""},
		{"a delete in progress", attempt{op: "delete", res: actions.Result{State: bad}}, why},
	}
	for _, tc := range cases {
		if got := unstorableState(tc.a); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
