package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/redact"
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
	scrubAttempt(&a, scrub, scrub, actions.NewNumbers(scrub, nil))
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

// TestScrubAttemptNumbers: a number whose text shows a revealed secret is stored as "***"
// in outputs and state (and the JSON stays valid); other numbers keep their value and type.
func TestScrubAttemptNumbers(t *testing.T) {
	secrets := []string{"5432", "1e3", "hunter22"}
	scrub := actions.Scrubber(secrets)
	a := attempt{res: actions.Result{
		State: json.RawMessage(`{"port":5432,"limit":1000,"big":1e3,"n":7,"nested":[{"p":5432.0}],"ok":true}`),
		Outputs: map[string]any{"port": 5432, "portF": float64(5432), "limit": json.Number("1000"), "three": json.Number("1e3"),
			"other": 8080, "ints": []int{5432, 1}, "ratio": 0.5, "name": "db"},
	}}
	scrubAttempt(&a, scrub, scrub, actions.NewNumbers(scrub, secrets))
	var state map[string]any
	if err := json.Unmarshal(a.res.State, &state); err != nil {
		t.Fatalf("state no longer JSON: %s", a.res.State)
	}
	want := `{"big":"***","limit":"***","n":7,"nested":[{"p":"***"}],"ok":true,"port":"***"}`
	if b, _ := json.Marshal(state); string(b) != want {
		t.Errorf("state = %s, want %s", b, want)
	}
	b, err := json.Marshal(a.res.Outputs)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"ints":["***",1],"limit":"***","name":"db","other":8080,"port":"***","portF":"***","ratio":0.5,"three":"***"}`
	if string(b) != want {
		t.Errorf("outputs = %s, want %s", b, want)
	}

	// Nothing to scrub: state is kept byte for byte, outputs as the plugin built them.
	a = attempt{res: actions.Result{State: json.RawMessage(`{"b": 1, "a": 2.50}`), Outputs: map[string]any{"port": 8080}}}
	scrubAttempt(&a, scrub, scrub, actions.NewNumbers(scrub, secrets))
	if string(a.res.State) != `{"b": 1, "a": 2.50}` || a.res.Outputs["port"] != 8080 {
		t.Errorf("unchanged attempt rewritten: %s %v", a.res.State, a.res.Outputs)
	}
}

// TestBoundOutputsNumbers: a number equal to one of the config's secrets is "***", the other
// outputs stay (the text scrub used to make the JSON invalid and drop every output).
func TestBoundOutputsNumbers(t *testing.T) {
	r := &Reconciler{opts: Options{Redact: redact.New("987654")}}
	out := r.boundOutputs(map[string]any{"pin": 987654, "port": 5432, "note": "pin 987654"})
	b, _ := json.Marshal(out)
	if want := `{"note":"pin ***","pin":"***","port":5432}`; string(b) != want {
		t.Errorf("outputs = %s, want %s", b, want)
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
		r.call(context.Background(), panicking{}, "panicking", actions.Request{}, deleting, nil, &a)
		if a.err == nil || strings.Contains(a.err.Error(), "s3cr3t") || !strings.Contains(a.err.Error(), "panicked") {
			t.Fatalf("deleting=%v: err = %v", deleting, a.err)
		}
	}
}
