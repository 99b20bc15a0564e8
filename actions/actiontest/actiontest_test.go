package actiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// recorder is a test that records its failures instead of failing the test it wraps; a
// fatal failure ends the goroutine that runs it, as testing.T's does.
type recorder struct {
	testing.TB // the test it wraps, for what the recorder does not record (Context)
	failures   []string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Error(args ...any)                 { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.Error(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }

// failures runs body on a recorder wrapping t and returns what it failed with.
func failures(t *testing.T, body func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(r)
	}()
	<-done
	return r.failures
}

// answer is an action whose every call returns res and err.
type answer struct {
	res actions.Result
	err error
}

func (a answer) Reconcile(context.Context, actions.Request) (actions.Result, error) {
	return a.res, a.err
}
func (a answer) Delete(context.Context, actions.Request) (actions.Result, error) { return a.res, a.err }

// TestDriverFailsOnSecrets: a Driver fails its test when a secret is in the state an action
// returns or in its error, and not when neither quotes one.
func TestDriverFailsOnSecrets(t *testing.T) {
	const secret = "s3cr3t-tok"
	for _, c := range []struct {
		name string
		act  answer
		want string // in the failure; "" for none
	}{
		{"clean", answer{res: actions.Result{Done: true, State: json.RawMessage(`{"id":1}`)}}, ""},
		{"state", answer{res: actions.Result{Done: true, State: json.RawMessage(`{"token":"` + secret + `"}`)}}, `secret "` + secret + `" appears in`},
		{"error", answer{err: errors.New("401 for token " + secret)}, `secret "` + secret + `" appears in`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := failures(t, func(tb testing.TB) {
				d := &Driver{T: tb, Action: c.act, Secrets: []string{secret}}
				_, _ = d.Call("reconcile")
			})
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("failed: %q", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("failures %q, want one with %q", got, c.want)
			}
		})
	}
}

// TestPlaintextFails: Plaintext's check fails a refusal that quotes a secret and one that
// does not name `insecure: true`, and passes one that names it and quotes nothing.
func TestPlaintextFails(t *testing.T) {
	const secret = "pw-91"
	const want = "url: http:// would send the token unencrypted"
	for _, c := range []struct{ name, err, fail string }{
		{"good", want + " to x.example.com (set insecure: true to allow it)", ""},
		{"quotes the secret", want + " to x.example.com with " + secret + " (set insecure: true to allow it)", "quotes a secret"},
		{"no fix", want + " to x.example.com", "does not say how to allow it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			parse := func(json.RawMessage) error { return errors.New(c.err) }
			got := failures(t, func(tb testing.TB) { plaintextCase(tb, parse, []string{secret}, `{}`, want) })
			switch {
			case c.fail == "" && len(got) > 0:
				t.Errorf("failed: %q", got)
			case c.fail != "" && (len(got) != 1 || !strings.Contains(got[0], c.fail)):
				t.Errorf("failures %q, want one with %q", got, c.fail)
			}
		})
	}
}
