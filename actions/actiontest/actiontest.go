// Package actiontest owns the conformance suite every action kind runs from its own tests
// (STYLE rule 13): idempotence, delete after reconcile, cancellation honoured, strict config,
// Close twice, Observe and `with:` validation when implemented.
package actiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// Suite describes the plugin kind under test.
type Suite struct {
	// Factory builds instances of the kind.
	Factory actions.Factory
	// Config is a valid config whose Reconcile and Delete succeed with Done.
	Config json.RawMessage
	// SlowConfig is a valid config whose Reconcile blocks until ctx is cancelled (a noop
	// delay of 1h, an exec command running sleep, a test server that never answers).
	SlowConfig json.RawMessage
	// With holds valid `with:` parameters for the requests (may be nil).
	With json.RawMessage
	// Env is handed to the factory (BaseDir etc.).
	Env actions.Env
}

// unknownField is added to Config to check strict decoding.
const unknownField = "definitelyUnknownField"

// Bounds of the cancellation check.
const (
	cancelAfter = 100 * time.Millisecond
	cancelLimit = 5 * time.Second
)

// callTimeout bounds every other call so a hung plugin fails the test instead of the run.
const callTimeout = time.Minute

// Run runs the conformance suite as parallel subtests of t.
func Run(t *testing.T, s Suite) {
	t.Helper()
	if s.Factory == nil {
		t.Fatal("actiontest: Suite.Factory is required")
	}
	if s.SlowConfig == nil {
		t.Fatal("actiontest: Suite.SlowConfig is required (a config whose Reconcile blocks until ctx is cancelled)")
	}

	t.Run("idempotent", func(t *testing.T) {
		t.Parallel()
		a := s.build(t, s.Config)
		ctx := callContext(t)
		req := s.request("idempotent")
		first, err := a.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("first Reconcile: %v", err)
		}
		if !first.Done {
			t.Fatalf("first Reconcile: Done = false (message %q); Suite.Config must reconcile to Done", first.Message)
		}
		req.State = first.State
		second, err := a.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("second Reconcile (state fed back): %v", err)
		}
		if second.Done != first.Done {
			t.Errorf("second Reconcile: Done = %v, first was %v", second.Done, first.Done)
		}
		if !reflect.DeepEqual(second.Outputs, first.Outputs) {
			t.Errorf("second Reconcile: Outputs = %v, first was %v", second.Outputs, first.Outputs)
		}
	})

	t.Run("delete after reconcile", func(t *testing.T) {
		t.Parallel()
		a := s.build(t, s.Config)
		ctx := callContext(t)
		req := s.request("delete")
		res, err := a.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		req.State = res.State
		del, err := a.Delete(ctx, req)
		if err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if !del.Done {
			t.Fatalf("Delete: Done = false (message %q)", del.Message)
		}
	})

	t.Run("cancellation honoured", func(t *testing.T) {
		t.Parallel()
		a := s.build(t, s.SlowConfig)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		timer := time.AfterFunc(cancelAfter, cancel)
		defer timer.Stop()

		type outcome struct {
			res actions.Result
			err error
		}
		done := make(chan outcome, 1)
		start := time.Now()
		go func() {
			res, err := a.Reconcile(ctx, s.request("cancel"))
			done <- outcome{res, err}
		}()
		select {
		case o := <-done:
			if ctx.Err() == nil {
				t.Fatalf("Reconcile returned before ctx was cancelled (after %s, err %v); Suite.SlowConfig must block until cancellation", time.Since(start), o.err)
			}
			if o.err == nil {
				t.Fatalf("Reconcile with a cancelled ctx: err = nil, Done = %v; want an error", o.res.Done)
			}
		case <-time.After(cancelLimit):
			t.Fatalf("Reconcile still running %s after ctx was cancelled", cancelLimit-cancelAfter)
		}
	})

	t.Run("unknown config field rejected", func(t *testing.T) {
		t.Parallel()
		cfg, err := withUnknownField(s.Config)
		if err != nil {
			t.Fatalf("Suite.Config: %v", err)
		}
		a, err := s.Factory(cfg, s.Env)
		if err == nil {
			_ = actions.Close(a)
			t.Fatalf("factory accepted config %s", cfg)
		}
		if !strings.Contains(err.Error(), unknownField) {
			t.Fatalf("factory error %q does not name the field %q", err, unknownField)
		}
	})

	t.Run("close twice", func(t *testing.T) {
		t.Parallel()
		for _, used := range []bool{false, true} {
			a, err := s.Factory(s.Config, s.Env)
			if err != nil {
				t.Fatalf("factory: %v", err)
			}
			if used {
				if _, err := a.Reconcile(callContext(t), s.request("close")); err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
			}
			if err := actions.Close(a); err != nil {
				t.Errorf("first Close (used %v): %v", used, err)
			}
			if err := actions.Close(a); err != nil {
				t.Errorf("second Close (used %v): %v", used, err)
			}
		}
	})

	t.Run("concurrent reconciles", func(t *testing.T) {
		t.Parallel()
		a := s.build(t, s.Config)
		ctx := callContext(t)
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := a.Reconcile(ctx, s.request(fmt.Sprintf("concurrent-%d", i)))
				if err == nil && !res.Done {
					err = errors.New("result not done")
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent Reconcile: %v", err)
		}
	})

	t.Run("observe reconciled resource", func(t *testing.T) {
		t.Parallel()
		a := s.build(t, s.Config)
		obs, ok := a.(actions.Observer)
		if !ok {
			t.Skip("kind does not implement actions.Observer")
		}
		ctx := callContext(t)
		req := s.request("observe")
		res, err := a.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		req.State = res.State
		o, err := obs.Observe(ctx, req)
		if err != nil {
			t.Fatalf("Observe: %v", err)
		}
		if !o.InSync {
			t.Fatalf("Observe right after a Done Reconcile: InSync = false (message %q)", o.Message)
		}
	})

	t.Run("with validated", func(t *testing.T) {
		t.Parallel()
		a := s.build(t, s.Config)
		v, ok := a.(actions.WithValidator)
		if !ok {
			t.Skip("kind does not implement actions.WithValidator")
		}
		if err := v.ValidateWith(s.With); err != nil {
			t.Errorf("ValidateWith(Suite.With): %v", err)
		}
		if err := v.ValidateWith(nil); err != nil {
			t.Errorf("ValidateWith(nil): %v", err)
		}
	})
}

// build makes an instance and closes it when the test ends.
func (s Suite) build(t *testing.T, cfg json.RawMessage) actions.Action {
	t.Helper()
	a, err := s.Factory(cfg, s.Env)
	if err != nil {
		t.Fatalf("factory(%s): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := actions.Close(a); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

// request is a plausible first request for a resource named after the subtest, so that
// parallel subtests sharing external state do not collide.
func (s Suite) request(name string) actions.Request {
	return actions.Request{
		Resource: actions.Resource{
			APIVersion:  "trueup.dev/v1",
			Kind:        "Database",
			Namespace:   "conformance",
			Name:        name,
			UID:         "conformance-" + name,
			Generation:  1,
			Spec:        json.RawMessage(`{"size":"small","engine":"postgres"}`),
			Labels:      map[string]string{"team": "platform"},
			Annotations: map[string]string{"trueup.dev/test": "conformance"},
			Source:      "conformance",
			Revision:    "0123456789abcdef0123456789abcdef01234567",
		},
		With: s.With,
	}
}

func callContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// withUnknownField returns cfg (a JSON object, or empty) with unknownField added.
func withUnknownField(cfg json.RawMessage) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(cfg) > 0 && string(cfg) != "null" {
		if err := json.Unmarshal(cfg, &fields); err != nil {
			return nil, fmt.Errorf("not a JSON object: %w", err)
		}
	}
	fields[unknownField] = json.RawMessage(`1`)
	return json.Marshal(fields)
}
