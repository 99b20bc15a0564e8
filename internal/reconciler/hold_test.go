package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// revealedValue is the secret value the test's Reveal puts back into the call of resource name.
func revealedValue(name string) string { return "revealed-pw-" + name + "-7c1f" }

// holdCheckAction logs the value revealed into its call through a logger writing to the
// registry's writer, and records what the registry's Scrub makes of it during the call.
type holdCheckAction struct {
	reg *redact.Registry
	log *slog.Logger

	mu     sync.Mutex
	during map[string]string // resource name: Scrub of its revealed value during its call
}

func (a *holdCheckAction) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	v := revealedValue(req.Resource.Name)
	a.log.Info("calling the database", "password", v)
	a.mu.Lock()
	a.during[req.Resource.Name] = a.reg.Scrub(v)
	a.mu.Unlock()
	return actions.Result{Done: true}, nil
}

func (a *holdCheckAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

// TestCallHoldsItsRevealedSecrets: while a call runs, the values revealed into its spec are
// held in the registry (a log line quoting one is scrubbed, Scrub replaces it); once the call
// returned, they are no longer held.
func TestCallHoldsItsRevealedSecrets(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openGated(ctx, t)
	reg := redact.New("kept-config-secret")
	var out logbuf.Buffer
	log := slog.New(slog.NewTextHandler(reg.Writer(&out), nil))
	act := &holdCheckAction{reg: reg, log: log, during: map[string]string{}}
	reveal := func(_ context.Context, c store.Claimed) (json.RawMessage, []string, error) {
		return c.Spec, []string{revealedValue(c.Name)}, nil
	}
	r := New(st, map[string]actions.Action{"act": act}, Options{Replica: "r1", Workers: 2, LeaseTTL: time.Minute,
		BackoffInitial: time.Second, PollInterval: 100 * time.Millisecond, Redact: reg, Reveal: reveal}, log)
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	bg.Go(func() { _ = r.Run(ctx) })
	for _, n := range []string{"first", "second"} {
		waitFor(t, n+" Ready", func() (bool, string) {
			res, err := st.GetResource(ctx, "default", "Widget", n)
			if err != nil {
				return false, err.Error()
			}
			return res.Status.Phase == status.PhaseReady, res.Status.Phase
		})
	}
	act.mu.Lock()
	defer act.mu.Unlock()
	for _, n := range []string{"first", "second"} {
		v := revealedValue(n)
		if got := act.during[n]; got != "***" {
			t.Errorf("during the call of %s, Scrub(%q) = %q; want ***", n, v, got)
		}
		if got := reg.Scrub(v); got != v {
			t.Errorf("after the call of %s, its value is still held: Scrub = %q", n, got)
		}
	}
	if s := out.String(); strings.Contains(s, "revealed-pw") || !strings.Contains(s, "password=***") {
		t.Errorf("the log quotes a revealed value or lacks the call's line:\n%s", s)
	}
}

// keptDSN is a config secret (a ${VAR}) quoting the password revealed into the call.
const keptDSN = "postgres://app:hunter22@db.internal:5432/app"

// refusedAction fails as a database client does, quoting the DSN it was given in its error
// and in a condition.
type refusedAction struct{}

func (refusedAction) Reconcile(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Conditions: []actions.Condition{{Type: "Database", Status: "False", Reason: "Refused",
		Message: "connect " + keptDSN + ": refused"}}}, errors.New("connect " + keptDSN + ": refused")
}

func (refusedAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

// TestStoredResultKeptSecretQuotingRevealedValue: a kept secret quoting one of the call's
// revealed values goes whole from what the result stores, not leaving its other parts behind.
func TestStoredResultKeptSecretQuotingRevealedValue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openGated(ctx, t)
	reg := redact.New(keptDSN)
	log := slog.New(slog.DiscardHandler)
	reveal := func(_ context.Context, c store.Claimed) (json.RawMessage, []string, error) {
		return c.Spec, []string{"hunter22"}, nil
	}
	r := New(st, map[string]actions.Action{"act": refusedAction{}}, Options{Replica: "r1", Workers: 2, LeaseTTL: time.Minute,
		BackoffInitial: time.Hour, BackoffMax: time.Hour, PollInterval: 100 * time.Millisecond, Redact: reg, Reveal: reveal}, log)
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	bg.Go(func() { _ = r.Run(ctx) })
	const want = "connect ***: refused"
	waitFor(t, "first failed", func() (bool, string) {
		res, err := st.GetResource(ctx, "default", "Widget", "first")
		if err != nil {
			return false, err.Error()
		}
		return res.Status.Phase == status.PhaseFailed, res.Status.Phase
	})
	res, err := st.GetResource(ctx, "default", "Widget", "first")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.Message != want {
		t.Errorf("stored message %q; want %q", res.Status.Message, want)
	}
	found := false
	for _, c := range res.Status.Conditions {
		if c.Type == "Database" {
			found = true
			if c.Message != want {
				t.Errorf("stored condition message %q; want %q", c.Message, want)
			}
		}
	}
	if !found {
		t.Error("the plugin's condition is not stored")
	}
	hist, err := st.ListHistory(ctx, "default", "Widget", "first", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) == 0 || !strings.HasSuffix(hist[0].Message, want) {
		t.Errorf("history %+v; want a message ending %q", hist, want)
	}
}
