package reconciler

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// gatedAction is an action whose calls report their resource's name on started, then wait
// until the test closes that resource's gate.
type gatedAction struct {
	started chan string
	gates   map[string]chan struct{}
}

func (a *gatedAction) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	a.started <- req.Resource.Name
	select {
	case <-a.gates[req.Resource.Name]:
		return actions.Result{Done: true}, nil
	case <-ctx.Done():
		return actions.Result{}, ctx.Err()
	}
}

func (a *gatedAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

var _ actions.Action = (*gatedAction)(nil)

// widgetType declares kind Widget, called through action instance act.
const widgetType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Widget}
spec:
  group: gate.example.com
  versions:
    - name: v1
      schema: {type: object, properties: {size: {type: integer}}}
  action: {name: act}
`

const gatedManifests = widgetType + `---
apiVersion: gate.example.com/v1
kind: Widget
metadata: {name: first, namespace: default}
spec: {size: 1}
---
apiVersion: gate.example.com/v1
kind: Widget
metadata: {name: second, namespace: default}
spec: {size: 2}
`

// watchLog collects the resource events of a watch stream.
type watchLog struct {
	mu     sync.Mutex
	events []store.Change
}

func (w *watchLog) phases(name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.events {
		if c.Object == "resource" && c.Name == name {
			out = append(out, c.Phase)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %s", what, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A claimed resource whose call has not started is not shown as running: with one worker and
// two resources claimed together, the second waits in the replica's memory while the first's
// call runs, and the API and the watch stream show it waiting (phase Pending, Reconciling
// reason Pending) until its own call starts; only then phase Reconciling, reason Progressing.
// openGated opens a fresh store with source "infra" at revision r1 holding gatedManifests.
func openGated(ctx context.Context, t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "infra"}); err != nil {
		t.Fatal(err)
	}
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "widgets.yaml", Data: []byte(gatedManifests)}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestClaimedShowsReconcilingOnlyOnceItsCallStarts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	st := openGated(ctx, t)

	srv := server.New(st, server.Options{Replica: "test"}, log)
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	defer srv.Stop()
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	bg.Add(1)
	go func() {
		defer bg.Done()
		st.Listen(ctx, []string{store.ChangesChannel}, func(string, string) { srv.NotifyChanges() }, log)
	}()
	watch := &watchLog{}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/api/v1/watch", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var c store.Change
				if json.Unmarshal([]byte(data), &c) == nil {
					watch.mu.Lock()
					watch.events = append(watch.events, c)
					watch.mu.Unlock()
				}
			}
		}
	}()
	get := func(name string) store.Resource {
		t.Helper()
		resp, err := http.Get(api.URL + "/api/v1/resources/default/Widget/" + name)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var r store.Resource
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("GET %s: %v: %s", name, err, body)
		}
		return r
	}
	shows := func(r store.Resource) string {
		rec, _ := status.Get(r.Status.Conditions, status.Reconciling)
		return fmt.Sprintf("phase %s, Reconciling=%s (%s)", r.Status.Phase, rec.Status, rec.Reason)
	}
	running := func(name string) (bool, string) {
		r := get(name)
		rec, _ := status.Get(r.Status.Conditions, status.Reconciling)
		return r.Status.Phase == status.PhaseReconciling && rec.Status == status.True && rec.Reason == status.ReasonProgressing &&
			contains(watch.phases(name), status.PhaseReconciling), shows(r) + fmt.Sprintf(", watch %v", watch.phases(name))
	}

	act := &gatedAction{started: make(chan string, 2), gates: map[string]chan struct{}{"first": make(chan struct{}), "second": make(chan struct{})}}
	r := New(st, map[string]actions.Action{"act": act}, Options{Replica: "r1", Workers: 1, LeaseTTL: time.Minute,
		BackoffInitial: time.Second, PollInterval: 100 * time.Millisecond}, log)
	// As after a run of short calls: claims run ahead of the worker, so the one claim takes
	// both resources, one for the worker and one to wait in the queue.
	r.callAvg.Store(0)
	bg.Add(1)
	go func() { defer bg.Done(); _ = r.Run(ctx) }()

	var firstName string
	select {
	case firstName = <-act.started:
	case <-time.After(30 * time.Second):
		t.Fatal("no call started")
	}
	secondName := map[string]string{"first": "second", "second": "first"}[firstName]
	waitFor(t, "both resources claimed by the replica", func() (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.inflight) == 2, fmt.Sprintf("%d claimed", len(r.inflight))
	})
	waitFor(t, firstName+" shown running", func() (bool, string) { return running(firstName) })

	// The second is claimed, its call not started: it shows what it showed before.
	sec := get(secondName)
	rec, _ := status.Get(sec.Status.Conditions, status.Reconciling)
	if sec.Status.Phase != status.PhasePending || rec.Reason == status.ReasonProgressing {
		t.Fatalf("%s waits for the worker but the API shows %s; want phase Pending, Reconciling reason %s", secondName, shows(sec), status.ReasonPending)
	}
	if ph := watch.phases(secondName); contains(ph, status.PhaseReconciling) {
		t.Fatalf("%s waits for the worker but the watch stream showed it %v", secondName, ph)
	}
	select {
	case n := <-act.started:
		t.Fatalf("the call of %s started with one worker busy", n)
	default:
	}

	close(act.gates[firstName])
	select {
	case n := <-act.started:
		if n != secondName {
			t.Fatalf("call of %s started, want %s", n, secondName)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the call of %s never started", secondName)
	}
	waitFor(t, secondName+" shown running once its call started", func() (bool, string) { return running(secondName) })
	close(act.gates[secondName])
	for _, n := range []string{"first", "second"} {
		waitFor(t, n+" Ready", func() (bool, string) {
			r := get(n)
			return r.Status.Phase == status.PhaseReady, shows(r)
		})
	}
}
