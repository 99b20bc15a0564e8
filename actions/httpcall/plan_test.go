package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

func TestPlanOptIn(t *testing.T) {
	t.Parallel()
	fx := setup(t, nil)
	fx.f.sync = true
	if _, err := fx.driver(t, "orders").Plan(5 * time.Second); !errors.Is(err, actions.ErrNoPlan) {
		t.Fatalf("Plan without plan: true: err = %v, want ErrNoPlan", err)
	}
	if n := len(fx.f.recorded()); n != 0 {
		t.Fatalf("%d requests sent by an instance that does not plan", n)
	}
}

func TestPlanSync(t *testing.T) {
	t.Parallel()
	fx := setup(t, map[string]any{"plan": true})
	fx.f.sync = true
	d := fx.driver(t, "orders")
	d.With = json.RawMessage(`{"body": {"plan": "gold"}}`)
	p, err := d.Plan(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := (actions.Plan{Changes: true, Summary: "1 to add, 0 to change, 0 to destroy", Text: "+ team-a/Database/orders (storage_gb=500)",
		Counted: true, Add: 1, Hash: "create-500"}); p != want {
		t.Fatalf("plan = %+v, want %+v", p, want)
	}
	r := fx.f.last()
	if r.Method != http.MethodPost || r.Header.Get("X-Trueup-Operation") != "plan" ||
		!strings.HasPrefix(r.Header.Get("Idempotency-Key"), "uid-orders-plan-") ||
		!bytes.Contains(r.Body, []byte(`"operation":"plan"`)) || !bytes.Contains(r.Body, []byte(`"with":{"plan":"gold"}`)) {
		t.Fatalf("plan request %s, headers %v, body %s", r.Method, r.Header, r.Body)
	}
	key := r.Header.Get("Idempotency-Key")
	if fx.f.resources["team-a/Database/orders"] {
		t.Fatal("the plan created the resource")
	}
	// The same spec plans under the same key; another spec under another.
	if _, err := d.Plan(5 * time.Second); err != nil || fx.f.last().Header.Get("Idempotency-Key") != key {
		t.Fatalf("second plan: err %v, key %q, want %q", err, fx.f.last().Header.Get("Idempotency-Key"), key)
	}
	d.Resource.Spec = json.RawMessage(`{"engine": "postgres", "storage_gb": 600}`)
	if _, err := d.Plan(5 * time.Second); err != nil || fx.f.last().Header.Get("Idempotency-Key") == key {
		t.Fatalf("plan of another spec: err %v, same key %q", err, key)
	}

	// An existing resource: no changes.
	d.Must(opReconcile)
	if p, err := d.Plan(5 * time.Second); err != nil || p != (actions.Plan{Summary: "no changes", Counted: true}) {
		t.Fatalf("plan of an applied resource: %+v, %v", p, err)
	}
}

func TestPlanFollowsAcceptedJob(t *testing.T) {
	t.Parallel()
	fx := setup(t, map[string]any{"plan": true})
	d := fx.driver(t, "orders")
	p, err := d.Plan(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Changes || !strings.Contains(p.Text, "orders") || !p.Counted || p.Add != 1 || p.Hash != "create-500" {
		t.Fatalf("plan = %+v", p)
	}
	var gets int
	for _, r := range fx.f.recorded() {
		if r.Method == http.MethodGet && r.Path == "/api/jobs/1" {
			gets++
		}
	}
	// Running twice (waiting Retry-After or pollInterval each time), then done.
	if gets != 3 || len(fx.slept()) != 3 {
		t.Fatalf("%d status reads, %d waits; want 3 and 3", gets, len(fx.slept()))
	}
	if d.State != nil {
		t.Fatalf("plan left state %s", d.State)
	}
}

func TestPlanAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer scripted
		noPlan bool
		want   string // in the error; "" for success
	}{
		{name: "404", answer: scripted{status: 404, body: `{"error": "no route"}`}, noPlan: true},
		{name: "405", answer: scripted{status: 405}, noPlan: true},
		{name: "501", answer: scripted{status: 501, body: `plan is not implemented`}, noPlan: true},
		{name: "400", answer: scripted{status: 400, body: `{"error": "bad spec"}`}, want: "bad spec"},
		{name: "failed", answer: scripted{status: 200, body: `{"status": "failed", "message": "provider down"}`}, want: "provider down"},
		{name: "no changes field", answer: scripted{status: 200, body: `{"outputs": {"a": 1}}`}, want: `no boolean "changes"`},
		{name: "changes not a boolean", answer: scripted{status: 200, body: `{"changes": "yes"}`}, want: "answer to plan"},
		{name: "not JSON", answer: scripted{status: 200, header: map[string]string{"Content-Type": "text/plain"}, body: `ok`}, want: "not a JSON object"},
		{name: "negative count", answer: scripted{status: 200, body: `{"changes": true, "destroy": -2}`},
			want: `answer to plan: "destroy": want a non-negative integer up to 2147483647, got a negative number`},
		{name: "count a string", answer: scripted{status: 200, body: `{"changes": true, "add": "one"}`},
			want: `answer to plan: "add": want a non-negative integer, got a string`},
		{name: "counts without changes", answer: scripted{status: 200, body: `{"changes": false, "replace": 1}`},
			want: `answer to plan: "changes" is false but the counts are not all 0`},
		{name: "hash not a string", answer: scripted{status: 200, body: `{"changes": true, "hash": ["a"]}`},
			want: `answer to plan: "hash": want a string, got an array`},
		{name: "unknown status", answer: scripted{status: 200, body: `{"status": "weird", "changes": true}`}, want: "unknown status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := setup(t, map[string]any{"plan": true})
			fx.f.push(tc.answer)
			_, err := fx.driver(t, "orders").Plan(5 * time.Second)
			switch {
			case tc.noPlan:
				if !errors.Is(err, actions.ErrNoPlan) {
					t.Fatalf("err = %v, want ErrNoPlan", err)
				}
			case err == nil || errors.Is(err, actions.ErrNoPlan) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestPlanScrubsSecrets(t *testing.T) {
	t.Parallel()
	fx := setup(t, map[string]any{"plan": true})
	fx.f.push(scripted{status: 200, body: `{"changes": true, "summary": "token ` + fx.f.token + `", "plan": "password=hunter2-long"}`})
	d := fx.driver(t, "orders")
	req := actions.Request{Resource: d.Resource, Secrets: []string{"hunter2-long"}}
	p, err := fx.a.Plan(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p.Summary != "token ***" || p.Text != "password=***" {
		t.Fatalf("plan = %+v", p)
	}
}

// A hash is published as it is: one holding the instance's credential or the call's secret
// is refused, the error naming the field and not the value.
func TestPlanRefusesHashHoldingASecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		instance bool // the hash holds the instance's token, else the call's secret
	}{{"the instance's", true}, {"the call's", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := setup(t, map[string]any{"plan": true})
			hash := "h-hunter2-long"
			if tc.instance {
				hash = "h-" + fx.f.token
			}
			fx.f.push(scripted{status: 200, body: `{"changes": true, "add": 1, "hash": "` + hash + `"}`})
			d := fx.driver(t, "orders")
			p, err := fx.a.Plan(t.Context(), actions.Request{Resource: d.Resource, Secrets: []string{"hunter2-long"}})
			const want = `answer to plan: "hash" holds a secret of the call`
			if err == nil || err.Error() != want {
				t.Fatalf("Plan = %+v, %v; want the error %q", p, err, want)
			}
		})
	}
}

func TestPlanHonoursDeadline(t *testing.T) {
	t.Parallel()
	fx := setup(t, map[string]any{"plan": true, "pollInterval": "20ms"})
	fx.a.sleep = actions.Sleep // real waits: the job never ends
	for range 1000 {
		fx.f.push(scripted{status: 200, body: `{"status": "running"}`})
	}
	start := time.Now()
	_, err := fx.driver(t, "orders").Plan(300 * time.Millisecond)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("Plan returned after %s", el)
	}
}
