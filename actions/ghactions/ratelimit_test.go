package ghactions

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

func TestRateLimits(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"primary", "429", "secondary"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := newFakeGitHub(t)
			f.shapeRun = func(r *fakeRun) { r.CompleteAfter = -1 }
			a, _ := newAction(t, f, f.config(nil), t.TempDir())
			if got := a.RateLimitRemaining(); got != -1 {
				t.Errorf("RateLimitRemaining before any call = %d, want -1", got)
			}

			// A resource whose run is in flight when the limit hits.
			busy := newResource("busy", `{}`)
			res, err := a.Reconcile(t.Context(), busy.request())
			if err != nil {
				t.Fatal(err)
			}
			busy.record(res)
			before := busy.state

			f.setLimit(kind, time.Minute)
			res, err = a.Reconcile(t.Context(), busy.request())
			if err != nil {
				t.Fatalf("rate limited Reconcile: err = %v; want a waiting result", err)
			}
			checkLimited(t, res)
			if res.RequeueAfter < 55*time.Second || res.RequeueAfter > time.Minute+maxLimitJitter+time.Second {
				t.Errorf("RequeueAfter = %s; want about the minute until the reset", res.RequeueAfter)
			}
			if !bytes.Equal(res.State, before) {
				t.Errorf("State changed under a rate limit: %s, want %s", res.State, before)
			}
			requests, _, _, limited := f.counters()
			if limited != 1 {
				t.Fatalf("limited requests = %d, want 1", limited)
			}

			// 20 other resources while the limit lasts wait without asking GitHub.
			var wg sync.WaitGroup
			results := make([]actions.Result, 20)
			errs := make([]error, 20)
			for i := range results {
				wg.Go(func() {
					results[i], errs[i] = a.Reconcile(t.Context(), newResource(fmt.Sprintf("other-%d", i), `{}`).request())
				})
			}
			wg.Wait()
			for i := range results {
				if errs[i] != nil {
					t.Fatalf("resource %d: %v", i, errs[i])
				}
				checkLimited(t, results[i])
				if results[i].State != nil {
					t.Errorf("resource %d: State %s, want none (nothing dispatched)", i, results[i].State)
				}
			}
			if r2, d, _, _ := f.counters(); r2 != requests || d != 1 {
				t.Errorf("during the limit: %d more requests, %d dispatches; want no storm", r2-requests, d)
			}

			// Past our own wait: go-github still refuses locally after a primary or secondary
			// limit (no request), which maps the same way; a 429 asks GitHub again.
			f.clk.advance(2 * time.Minute)
			res, err = a.Reconcile(t.Context(), busy.request())
			if err != nil {
				t.Fatalf("after the wait: %v", err)
			}
			checkLimited(t, res)
			r3, _, _, limited3 := f.counters()
			want := 0
			if kind == "429" {
				want = 1
			}
			if r3-requests != want {
				t.Errorf("after our wait: %d requests, want %d", r3-requests, want)
			}
			if limited3 > 3 {
				t.Errorf("%d requests hit the limit; want a handful at most", limited3)
			}
			if kind != "429" {
				return
			}

			// The limit is over: the next call reaches GitHub and clears the condition.
			f.setLimit("", 0)
			f.clk.advance(2 * time.Minute)
			res, err = a.Reconcile(t.Context(), busy.request())
			if err != nil {
				t.Fatalf("after the limit: %v", err)
			}
			if c, ok := condition(res, conditionRateLimited); !ok || c.Status != "False" {
				t.Errorf("RateLimited after the limit = %+v, want False", c)
			}
			if a.RateLimitRemaining() <= 0 {
				t.Errorf("RateLimitRemaining = %d", a.RateLimitRemaining())
			}
		})
	}
}

func checkLimited(t *testing.T, res actions.Result) {
	t.Helper()
	if res.Done {
		t.Error("rate limited result is Done")
	}
	c, ok := condition(res, conditionRateLimited)
	if !ok || c.Status != "True" || c.Reason != "GitHubRateLimit" || !strings.Contains(c.Message, "resets at") {
		t.Errorf("RateLimited condition = %+v", c)
	}
}

func TestRateLimitDuringDispatchKeepsStateAndWithdrawsNothing(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	f.setLimit("secondary", 30*time.Second)
	r := newResource("fresh", `{}`)
	res, err := a.Reconcile(t.Context(), r.request())
	if err != nil {
		t.Fatal(err)
	}
	checkLimited(t, res)
	if res.State != nil {
		t.Errorf("State = %s; the refused dispatch must not leave a handle", res.State)
	}
	if _, d, _, _ := f.counters(); d != 0 {
		t.Errorf("dispatches = %d", d)
	}
}

func TestDoneResourceAnsweredFromStateWhileRateLimited(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	done := newResource("done", `{}`)
	first := mustDrive(t, done, a.Reconcile)
	f.setLimit("primary", time.Minute)
	if _, err := a.Reconcile(t.Context(), newResource("hits-limit", `{}`).request()); err != nil {
		t.Fatal(err)
	}
	requests, _, _, _ := f.counters()
	res, err := a.Reconcile(t.Context(), done.request())
	if err != nil || !res.Done || res.Outputs["runID"] != first.Outputs["runID"] {
		t.Fatalf("Reconcile of a Done resource under a rate limit: %+v %v; want Done from State", res, err)
	}
	if after, _, _, _ := f.counters(); after != requests {
		t.Errorf("answered from State with %d requests", after-requests)
	}
}
